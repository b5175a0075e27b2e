"""erase= chooses a measured method: the measured table, the rule, the erase= forms, the methods
that need a task label, and what the privacy report says about the attackers an erasure bounds."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from private_vectors.encoders import FakeEncoder
from private_vectors.errors import ConfigMismatchError, InvalidParameterError, InvalidTypeError
from private_vectors.fitted import (
    BUILTIN_METHODS,
    DEFAULT_METHOD,
    AttributeConcept,
    ErasureSpec,
    choose_method,
    fit_attribute,
    load_attribute,
)
from private_vectors.fitted.erase import check_erase, resolve_erase
from private_vectors.fitted.erasure import ERASURE_METHODS, make_erasure
from private_vectors.fitted.measured import MEASURED, attacker_coverage
from private_vectors.options import EmbeddingOptions, resolve_options

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = resources.files("private_vectors").joinpath("data", "concepts", "all-MiniLM-L6-v2")


# -- the measured table (the shipped data file) is the committed results ------------------------------------------------
def _results_row(results: str, attribute: str, row: str) -> tuple[dict, dict]:
    data = json.loads((ROOT / "benchmarks" / "results" / f"{results}.json").read_text(encoding="utf-8"))
    block = data["attributes"][attribute]
    rows = {r["row"]: r for r in block["rows"]}
    return block, rows[row]


@pytest.mark.parametrize("m", MEASURED, ids=lambda m: f"{m.attribute}:{m.row}")
def test_each_measured_row_is_the_results_file(m) -> None:
    block, row = _results_row(m.results, m.attribute, m.row)
    rows = {r["row"]: r for r in block["rows"]}
    acc = {k: v["accuracy"] for k, v in row["attackers"].items()}
    assert m.attacker == max(acc, key=acc.get)
    assert m.strongest == pytest.approx(acc[m.attacker], abs=5e-4)
    assert m.floor == pytest.approx(max(v["accuracy"] for v in block["floor"].values()), abs=5e-4)
    assert m.ndcg == pytest.approx(row["ndcg10"], abs=5e-5)
    assert m.ndcg_leace == pytest.approx(rows["LEACE"]["ndcg10"], abs=5e-5)
    assert m.task == pytest.approx(row["task_probe"], abs=5e-5)
    assert m.task_unprotected == pytest.approx(rows["text stage only"]["task_probe"], abs=5e-5)
    if m.method != "builtin":
        make_erasure(m.method, **m.params)  # a method and parameters the library has


def test_the_rule_names_the_default_method() -> None:
    method, params = choose_method()
    assert (method, params) == (DEFAULT_METHOD, {})
    assert DEFAULT_METHOD in BUILTIN_METHODS
    # the rule: lowest strongest attacker among rows keeping the bounds
    candidates = [m for m in MEASURED if m.attribute == "sex" and m.eps is None and m.method != "builtin"
                  and m.retrieval_vs_leace >= 0.9 and m.task_kept >= 0.9]
    assert min(m.strongest for m in candidates) == next(
        m.strongest for m in candidates if (m.method, m.params) == (method, params))
    # a stricter retrieval bound excludes it, a looser one admits a stronger erasure
    assert choose_method(min_retrieval=0.95) != (method, params)
    loose = choose_method(min_retrieval=0.8)
    assert next(m for m in MEASURED if (m.method, m.params, m.eps) == (*loose, None)).strongest < next(
        m for m in MEASURED if (m.method, m.params, m.eps) == (method, params, None)).strongest
    with pytest.raises(InvalidParameterError, match="min_retrieval"):
        choose_method(min_retrieval=1.5)


# -- every method keeps LEACE's linear guarantee; the task-label methods -------------------------
def _three_way(m: int = 900, n: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A task label (3 regions) and an attribute that moves along a region-specific direction."""
    rng = np.random.default_rng(seed)
    task = rng.integers(0, 3, m)
    z = rng.integers(0, 2, m)
    centres = 6.0 * np.eye(n)[:3]
    dirs = np.eye(n)[[5, 6, 7]] * np.array([[1.0], [-1.0], [1.0]])
    X = centres[task] + 0.5 * rng.standard_normal((m, n)) + 1.5 * (z - 0.5)[:, None] * dirs[task]
    return X, z, task


@pytest.mark.parametrize("method", ERASURE_METHODS)
def test_every_method_equalises_the_class_means_on_its_fitting_data(method: str) -> None:
    X, z, task = _three_way()
    params = {"rank": 2, "epochs": 5} if method == "adversarial" else {"rank": 4} if method == "task-projection" else {}
    er = make_erasure(method, **params)
    er.fit(X, z, task if er.needs_task_labels else None)
    E = er.transform(X).astype(np.float64)
    gap = np.linalg.norm(E[z == 1].mean(0) - E[z == 0].mean(0))
    # equal up to concept-erasure's truncation of weak whitened directions (svd_tol; many columns)
    assert gap < 1e-3 * np.linalg.norm(X[z == 1].mean(0) - X[z == 0].mean(0))


def _knn(X: np.ndarray, y: np.ndarray) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(n_neighbors=15).fit(X[:600], y[:600]).score(X[600:], y[600:])


def test_region_leace_removes_what_leace_leaves_inside_task_regions() -> None:
    X, z, task = _three_way(m=1200)
    fit = slice(0, 400)
    lea = make_erasure("leace").fit(X[fit], z[fit]).transform(X[400:])
    reg = make_erasure("region-leace").fit(X[fit], z[fit], task[fit]).transform(X[400:])
    assert _knn(lea, z[400:]) > 0.8
    assert _knn(reg, z[400:]) < 0.65
    assert _knn(reg, task[400:]) > 0.95  # the regions themselves are kept


def test_task_projection_keeps_the_task_and_drops_the_rest() -> None:
    X, z, task = _three_way(m=1200)
    rng = np.random.default_rng(1)
    X = np.hstack([X, 2.0 * (z - 0.5)[:, None] * np.ones((len(X), 1)) + 0.3 * rng.standard_normal((len(X), 1))])
    er = make_erasure("task-projection", rank=2).fit(X[:400], z[:400], task[:400])
    E = er.transform(X[400:])
    assert _knn(E, task[400:]) > 0.95
    assert _knn(E, z[400:]) < 0.65
    dropped = er.steps_[0][0].shape[1]
    assert dropped == X.shape[1] - 2 and er.rank_ in (dropped, dropped + 1)  # dropped directions, then LEACE


def test_task_labels_are_asked_for_by_name() -> None:
    X, z, task = _three_way(m=60)
    with pytest.raises(InvalidParameterError, match="task_labels"):
        make_erasure("region-leace").fit(X, z)
    with pytest.raises(InvalidParameterError, match="task_labels"):
        make_erasure("leace").fit(X, z, task)
    with pytest.raises(InvalidParameterError, match="task_labels"):
        make_erasure("task-projection").fit(X, z, task[:-1])
    with pytest.raises(InvalidParameterError, match="rank"):
        make_erasure("task-projection", rank=16).fit(X, z, task)


def test_fit_attribute_passes_task_labels_and_saves_the_map(tmp_path) -> None:
    enc = FakeEncoder(dim=32)
    rng = np.random.default_rng(0)
    words = ["cough", "fever", "rash", "nausea", "pain", "itching"]
    texts = [f"note {i} {' '.join(rng.choice(words, 3))} {'alpha' if i % 2 else 'beta'}" for i in range(120)]
    labels = ["A" if i % 2 else "B" for i in range(120)]
    task = [f"d{i % 3}" for i in range(120)]
    ac = fit_attribute(texts, labels, encoder=enc, method="task-projection", task_labels=task, rank=4)
    again = load_attribute(ac.save(tmp_path / "tp"), enc)
    X = enc.encode(texts[:5])
    np.testing.assert_allclose(again.erase(X), ac.erase(X), atol=1e-5)
    assert again.method == "task-projection" and again.params["rank"] == 4
    with pytest.raises(InvalidParameterError, match="task_labels"):
        fit_attribute(texts, labels, encoder=enc, method="region-leace")


# -- erase=: forms, checked once and resolved once ----------------------------------------------
def test_erase_forms_are_checked_at_the_edge() -> None:
    assert check_erase({"attribute": "sex", "method": "leace"}) == ErasureSpec("sex", "leace")
    assert check_erase("sex") == "sex" and check_erase(None) is None
    ref = {"kind": "attribute", "type": "builtin", "name": "sex", "method": "leace"}
    assert check_erase(ref) is ref
    for bad, error, name in [
        (3, InvalidTypeError, "erase"),
        ("sexx", InvalidParameterError, "erase"),
        ({"attribute": "sex", "methd": "leace"}, InvalidParameterError, "erase"),
        ({"method": "leace"}, InvalidParameterError, "erase"),
        ({"attribute": "sex", "method": "magic"}, InvalidParameterError, "erase.method"),
        ({"attribute": "sex", "method": "adversarial"}, InvalidParameterError, "erase.method"),
        ({"attribute": 5}, InvalidTypeError, "erase.attribute"),
    ]:
        with pytest.raises(error) as info:
            EmbeddingOptions(erase=bad)
        assert info.value.parameter == name, bad


def test_a_builtin_name_resolves_to_the_default_method() -> None:
    assert resolve_options(EmbeddingOptions(erase="sex"), dim=384).erase == ErasureSpec("sex", DEFAULT_METHOD)
    assert resolve_erase(ErasureSpec("age_band")) == ErasureSpec("age_band", DEFAULT_METHOD)
    assert resolve_erase(ErasureSpec("sex", "leace")) == ErasureSpec("sex", "leace")
    assert resolve_erase("some/folder") == "some/folder"


@pytest.mark.parametrize("name", ["sex", "age_band"])
def test_each_builtin_ships_each_builtin_method(name: str) -> None:
    for method in BUILTIN_METHODS:
        ac = load_attribute(ErasureSpec(name, method))
        assert (ac.attribute, ac.method, ac.source) == (name, method, "builtin")
        assert ac.fingerprint_["dim"] == 384 and {"logistic", "mlp"} <= set(ac.evaluation_)
    assert load_attribute(name).method == DEFAULT_METHOD
    assert "generated clinical notes" in load_attribute(ErasureSpec(name, "cluster-leace")).extra_["source"]


def test_a_config_written_before_methods_shipped_reopens_leace() -> None:
    """Stored configurations of erase="sex" from before recorded the LEACE artefact's reference."""
    leace = AttributeConcept.load(str(SHIPPED.joinpath("sex")))
    old = {"kind": "attribute", "name": "sex", "attribute": "sex", "method": "leace", "classes": ["F", "M"],
           "rank": 1, "sha256": leace.content_sha256(), "type": "builtin"}
    assert load_attribute(old).content_sha256() == leace.content_sha256()
    assert load_attribute({k: v for k, v in old.items() if k != "method"}).method == "leace"
    with pytest.raises(ConfigMismatchError):
        load_attribute(dict(old, method="cluster-leace"))  # the hash names the LEACE artefact


def test_private_embedding_erase_forms(tmp_path) -> None:
    from private_vectors import PrivateEmbedding

    ef = PrivateEmbedding(erase="sex", mechanism="none", eps=10)
    assert ef.erasure.method == DEFAULT_METHOD and ef.erasure.source == "builtin"
    cfg = ef.get_config()
    assert cfg["erasure"]["method"] == DEFAULT_METHOD and cfg["erasure"]["type"] == "builtin"
    rebuilt = PrivateEmbedding.build_from_config(json.loads(json.dumps(cfg)))
    text = ["The patient presents the symptoms of cough and fever."]
    np.testing.assert_allclose(rebuilt.embed_array(text), ef.embed_array(text), atol=1e-6)
    lea = PrivateEmbedding(erase={"attribute": "sex", "method": "leace"}, mechanism="none", eps=10)
    assert lea.erasure.method == "leace" and lea.erasure.rank_ == 1
    assert not np.allclose(lea.embed_array(text), ef.embed_array(text))
    folder = lea.erasure.save(tmp_path / "sex-leace")
    assert PrivateEmbedding(erase=ErasureSpec(str(folder), "leace"), mechanism="none", eps=10).erasure.method == "leace"
    with pytest.raises(InvalidParameterError, match=r"erase\.method"):
        PrivateEmbedding(erase={"attribute": str(folder), "method": "cluster-leace"}, mechanism="none", eps=10)


# -- what the report says ------------------------------------------------------------------------
def test_coverage_names_linear_probes_and_the_measured_row() -> None:
    cov = attacker_coverage("cluster-leace", make_erasure("cluster-leace").get_params(), attribute="sex")
    assert "linear probes" in cov["bounded"] and "non-linear" in cov["not_bounded"]
    assert cov["measured"]["row"] == "cluster-LEACE (K=16, ×2)" and cov["measured_with_noise"] is None
    assert cov["measured"]["attackers"] == ["logistic", "mlp256", "mlp256x128", "gbt"]
    noisy = attacker_coverage("cluster-leace", {}, attribute="sex", mechanism="laplace", eps=20.0)
    assert noisy["measured_with_noise"]["noise"] == "laplace, epsilon 20"
    assert attacker_coverage("cluster-leace", {"n_clusters": 5}, attribute="sex")["measured"] is None
    assert attacker_coverage("leace", {}, attribute="smoker")["measured"]["attribute"] == "sex"


def test_the_shipped_default_reports_its_own_rows() -> None:
    """erase="sex" at the default Laplace ε = 10 is measured as shipped, with and without the noise."""
    params = make_erasure(DEFAULT_METHOD).get_params()
    cov = attacker_coverage(DEFAULT_METHOD, params, attribute="sex", builtin=True, mechanism="laplace", eps=10.0)
    assert "(as shipped)" in cov["measured"]["row"] and cov["measured"]["results"].endswith("-sex-builtin")
    assert cov["measured_with_noise"]["noise"] == "laplace, epsilon 10"
    assert cov["measured_with_noise"]["strongest_accuracy"] < cov["measured"]["strongest_accuracy"]
    own = attacker_coverage("leace", {}, attribute="sex", builtin=True)["measured"]
    assert own["row"] == "built-in erase={'attribute': 'sex', 'method': 'leace'} (as shipped)"
    assert attacker_coverage("leace", {}, attribute="sex", builtin=True, mechanism="laplace", eps=10.0)[
        "measured_with_noise"]["row"] == "LEACE + Laplace (ε=10)"  # no shipped row at that ε: the method's


def test_privacy_report_states_the_attacker_family() -> None:
    from private_vectors import PrivateEmbedding

    ef = PrivateEmbedding(erase="sex", eps=10, random_state=0)
    rep = ef.privacy_report()["erasure"]
    assert rep["method"] == DEFAULT_METHOD and "linear probes" in rep["attackers"]["bounded"]
    measured = rep["attackers"]["measured"]
    assert measured["results"].startswith("attribute_attackers") and "/" not in measured["results"]
    assert (ROOT / "benchmarks" / "results" / f"{measured['results']}.md").is_file()
    text = ef.privacy_report_text()
    line = next(x for x in text.splitlines() if x.startswith("Erasure: "))
    assert "non-linear attackers are not bounded" in line and measured["results"] in line
    assert len(text.splitlines()) <= 8
