"""The runnable examples in integrations/ run end to end (fake encoder, subprocess, temp folders)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import _zygote

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "integrations"


def _run(script: str, *args: str, tmp_path: Path) -> str:
    res = _zygote.run([str(EXAMPLES / script), "--model", "fake", "--eps", "40",  # a new process (tests/_zygote.py)
                       "--path", str(tmp_path / "store"), *args], timeout=180, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def _report(out: str) -> dict:
    text = out.split("== privacy report", 1)[1]
    start = text.index("{")
    depth = 0
    for i, ch in enumerate(text[start:], start):
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            return json.loads(text[start:i + 1])
    raise AssertionError("no report")


def _after(out: str, marker: str, lines: int = 3) -> str:
    return "\n".join(out.split(marker, 1)[1].splitlines()[:lines])


def test_chroma_native_example(tmp_path):
    out = _run("chroma_native.py", "--concept", "none", tmp_path=tmp_path)
    assert "== stored 8 documents" in out
    # no text stage (--concept none): no text is stored; the hit comes back by id
    assert "note-1: (no text stored)" in _after(out, "'who has a persistent cough and fever?'")
    rep = _report(out)
    assert rep["epsilon"] == 40 and rep["mechanism"] == "laplace" and rep["space"] == "cosine"
    assert "same configuration as the writer: True" in out
    assert (tmp_path / "store").is_dir()


def test_langchain_rag_example_with_a_concept(tmp_path):
    out = _run("langchain_rag.py", "--concept", "PII", tmp_path=tmp_path)
    block = _after(out, "Q: who has a persistent cough and fever?", 4)
    # the default text stage for concept="PII" redacts; chroma_store keeps the sanitized text
    assert "A: According to the notes: Patient <PERSON> reported a persistent cough" in block
    rep = _report(out)
    # a built-in span concept: its text stage does the concept's work, the noise is Laplace
    assert rep["mechanism"] == "laplace" and rep["concept"] == "PII" and rep["noise_concept"] is None
    assert rep["space"] == "cosine"


@pytest.mark.parametrize("kind", ["hnsw"])
def test_faiss_example(tmp_path, kind):
    out = _run("faiss_index.py", "--concept", "none", "--kind", kind, tmp_path=tmp_path)
    assert "with 8 perturbed documents" in out
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["index.faiss", "private_vectors.json"]
    assert "cough and mild fever" in _after(out, "Q: who has a persistent cough and fever?", 2)
    assert _report(out)["epsilon"] == 40


def test_cli_demo_runs_the_day_one_job(tmp_path):
    res = _zygote.run(["-m", "private_vectors.cli", "demo", "--model", "fake", "--concept", "none",
                       "--eps", "40", "--path", str(tmp_path / "db"), "--json"], timeout=180)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "stored 6 documents" in res.stdout and "Query 'symptoms of a respiratory infection'" in res.stdout
    report = json.loads(res.stdout[res.stdout.index("{"):])
    assert report["epsilon"] == 40 and report["query_policy"] == "clean"
    assert (tmp_path / "db").is_dir()


def test_cli_demo_fits_a_screen_and_shows_raw_and_stored_text(tmp_path):
    """The day-one job with its default concept (PII: redaction + Laplace): at most 40 lines,
    each raw text beside what the store keeps, one query's results and the plain report."""
    res = _zygote.run(["-m", "private_vectors.cli", "demo", "--model", "fake", "--eps", "40",
                       "--path", str(tmp_path / "db")], timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert len(lines) <= 40, res.stdout
    assert max(len(line) for line in lines) <= 120, res.stdout
    from private_vectors.demo import SENTENCES

    raw = [line.strip() for line in lines if line.strip() in SENTENCES]
    stored = [line.split("-> ", 1)[1] for line in lines if line.strip().startswith("-> ")]
    assert raw == SENTENCES and len(stored) == 6
    assert all("Maria Lopez" not in s and "555-0199" not in s for s in stored)
    assert any("<PERSON>" in s for s in stored)
    hits = [line for line in lines if line.strip()[:3] in ("1. ", "2. ", "3. ")]
    assert len(hits) == 3 and all("Maria Lopez" not in h for h in hits)
    report = res.stdout.split("Privacy report", 1)[1]
    assert "Text: PII spans are replaced" in report and "Key: none" in report and "{" not in report
