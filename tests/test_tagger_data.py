"""The tagger's training data (scripts/tagger_data.py): test splits refused, readers, and a sentence
generator that shares no template with the evasion benchmark."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _scripts import load_script

td = load_script("scripts/tagger_data.py", "tagger_data")
ev = load_script("benchmarks/evasion.py", "evasion_for_tagger_data")


@pytest.mark.parametrize("path", [
    "echr_test.json", "text-anonymization-benchmark/echr_dev.json", "emerging.test.annotated",
    "emerging.test.conll", "emerging.dev.conll", "emerging.test", "train_dev_test_conll/btc.test",
    "train_dev_test_conll/btc.dev", "f.conll", "f.json", "pii/news/conll2003_valid.txt", "conll2003/train.txt",
    "eng.train", "eng.testb", "dep/GENTLE_poetry_raven.conllu", "ontonotes/train.conll", "data/test.jsonl",
    "split/test-00000.parquet", "mydata_test.conll",
])
def test_loader_refuses_test_splits_and_ruled_out_corpora(path: str) -> None:
    with pytest.raises(ValueError, match="refused"):
        td.refuse_split(path)


def test_loader_refuses_gum_held_out_documents() -> None:
    with pytest.raises(ValueError, match="GUM"):
        td.refuse_split("dep/GUM_news_nasa.conllu", gum_held_out=["GUM_news_nasa"])
    td.refuse_split("dep/GUM_news_iodine.conllu", gum_held_out=["GUM_news_nasa"])


@pytest.mark.parametrize("path", ["wnut17train.conll", "train_dev_test_conll/btc.train",
                                  "dep/GUM_academic_art.conllu", "pii/tab/tab_train_dev.jsonl"])
def test_training_paths_pass(path: str) -> None:
    td.refuse_split(path)


def test_reading_a_test_split_fails_before_any_file_is_opened(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="refused"):
        td.read_source_file(tmp_path, "leondz/emerging_entities_17", "HEAD", "emerging.test.annotated")
    with pytest.raises(ValueError, match="refused"):
        td.load_tab(tmp_path / "echr_test.json", {})


def test_read_source_file_checks_the_sha256(tmp_path: Path) -> None:
    folder = tmp_path / "owner+name"
    folder.mkdir()
    (folder / "train.conll").write_text("a O\n", "utf-8")
    assert td.read_source_file(tmp_path, "owner/name", "c0ffee", "train.conll") == "a O\n"
    with pytest.raises(ValueError, match="sha256"):
        td.read_source_file(tmp_path, "owner/name", "c0ffee", "train.conll", sha256="0" * 64)


def test_tab_reader_keeps_train_documents_only(tmp_path: Path) -> None:
    def doc(split: str, text: str, entities: list[tuple[int, int, str]]) -> str:
        return json.dumps({"metadata": {"provenance": {"dataset_type": split}}, "text": text,
                           "entities": [{"start_offset": s, "end_offset": e, "entity_type": t} for s, e, t in entities]})
    text = "Mr Jan Kowalski lived in the town of Lodz from 1990 for forty years."
    lines = [doc("train", text, [(3, 15, "PERSON"), (37, 41, "LOC"), (47, 51, "DATETIME"), (56, 67, "DATETIME")]),
             doc("dev", "held out", [])]
    path = tmp_path / "tab.jsonl"
    path.write_text("\n".join(lines), "utf-8")
    labels = {"PERSON": "PERSON", "LOC": "LOCATION", "DATETIME": "DATE_TIME"}
    out = td.load_tab(path, labels)
    assert len(out) == 1 and out[0].text == text
    assert [(text[s:e], lab) for s, e, lab in out[0].spans] == [("Jan Kowalski", "PERSON"), ("Lodz", "LOCATION"),
                                                                ("1990", "DATE_TIME")]  # not "forty years"


def test_conll_reader_rebuilds_text_and_spans() -> None:
    text = "I\tO\nmet\tO\nAnna\tB-person\nKowalska\tI-person\nin\tO\nLodz\tB-location\n\nok\tO\n"
    out = td.parse_conll(text, {"person": "PERSON", "location": "LOCATION"}, "x")
    assert [e.text for e in out] == ["I met Anna Kowalska in Lodz", "ok"]
    assert [(out[0].text[s:e], lab) for s, e, lab in out[0].spans] == [("Anna Kowalska", "PERSON"),
                                                                      ("Lodz", "LOCATION")]


GUM = """# newdoc id = GUM_test_doc
# text = Professor Cres Eastman of the University of Sydney spoke on Thursday.
1\tProfessor\tprofessor\tNOUN\tNN\t_\t3\tcompound\t_\tEntity=(1-person-new-x-x-x-x
2\tCres\tCres\tPROPN\tNNP\t_\t3\tcompound\t_\t_
3\tEastman\tEastman\tPROPN\tNNP\t_\t10\tnsubj\t_\tEntity=1)
4\tof\tof\tADP\tIN\t_\t7\tcase\t_\t_
5\tthe\tthe\tDET\tDT\t_\t7\tdet\t_\tEntity=(2-organization-new-x-x-x-x
6\tUniversity\tUniversity\tPROPN\tNNP\t_\t3\tnmod\t_\t_
7\tof\tof\tADP\tIN\t_\t8\tcase\t_\t_
8\tSydney\tSydney\tPROPN\tNNP\t_\t6\tnmod\t_\tEntity=(3-place-new-x-x-x-x)2)
9\tspoke\tspeak\tVERB\tVBD\t_\t0\troot\t_\t_
10\ton\ton\tADP\tIN\t_\t11\tcase\t_\t_
11\tThursday\tThursday\tPROPN\tNNP\t_\t9\tobl\t_\tEntity=(4-time-new-x-x-x-x)|SpaceAfter=No
12\t.\t.\tPUNCT\t.\t_\t9\tpunct\t_\t_
"""


def test_gum_reader_takes_named_mentions_and_dates() -> None:
    labels = {"person": "PERSON", "place": "LOCATION", "organization": "ORGANIZATION", "time": "DATE_TIME"}
    ex = td.parse_gum(GUM, labels, "gum")
    got = [(ex.text[s:e], lab) for s, e, lab in ex.spans]
    assert ("Cres Eastman", "PERSON") in got and ("Thursday", "DATE_TIME") in got
    assert ("University of Sydney", "ORGANIZATION") in got  # the outer mention wins over the nested place


def _shape(template: str) -> str:
    """A template with its slots made alike and its case folded."""
    return re.sub(r"\{[^}]*\}", "{}", template).casefold().strip()


def _ngrams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z']+", re.sub(r"\{[^}]*\}", " SLOT ", text).casefold())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def test_generator_shares_no_template_with_the_evasion_benchmark() -> None:
    evasion = [*ev.SENTENCES, *ev.URLS, *ev.QUERIES, *ev.SURNAME_QUERIES, *ev.POSSESSIVE_SENTENCES,
               *ev.HASHTAG_SENTENCES]
    ours = [*td.TEMPLATES, *td.NEGATIVE_TEMPLATES]
    assert {_shape(t) for t in ours}.isdisjoint({_shape(t) for t in evasion})
    shared = set().union(*map(_ngrams, ours)) & set().union(*map(_ngrams, evasion))
    assert not shared, f"five-word sequences shared with benchmarks/evasion.py: {sorted(shared)[:5]}"


def test_generator_is_seeded_and_its_spans_are_sound() -> None:
    a = td.Generator(3).examples(300)
    b = td.Generator(3).examples(300)
    assert a == b
    assert a != td.Generator(4).examples(300)
    labels = set()
    for ex in a:
        last = -1
        for s, e, lab in ex.spans:
            assert lab in td.LABELS and 0 <= s < e <= len(ex.text) and s >= last
            assert ex.text[s:e].strip() and ex.text[s] not in "#@ "
            last = e
            labels.add(lab)
    assert labels == set(td.LABELS)
    texts = [ex.text for ex in a]
    assert any(t == t.lower() and t != t.upper() for t in texts)  # lower-case variants
    assert any("'s" in t or "’s" in t for t in texts) and any("#" in t for t in texts)
    assert any(t.startswith("{") for t in texts) and any("\n" in t for t in texts)


def test_training_script_runs_under_one_hash_seed(tmp_path: Path) -> None:
    """Faker orders some locales' lists by string hashes, so the training script re-runs itself
    under PYTHONHASHSEED=0: two processes started with different hash seeds draw the same data."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(root / 'scripts')!r})\n"
        "import train_tagger\n"
        "train_tagger._fixed_hash_seed()\n"
        "print(hash('it_IT cities'))\n", "utf-8")
    seen = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, str(probe)], env=env, capture_output=True, text=True, check=True)
        seen.add(out.stdout.strip())
    zero = subprocess.run([sys.executable, "-c", "print(hash('it_IT cities'))"], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONHASHSEED": "0"}).stdout.strip()
    assert seen == {zero}
