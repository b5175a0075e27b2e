"""privacy_report_text: a few plain lines for a person, the measured figures only where measured."""

from __future__ import annotations

import warnings

import pytest

from private_vectors._files import measured_figures
from private_vectors.report import _measured_sentence

_LAPLACE = measured_figures()["laplace"]


def _r(**over):
    r = {"mechanism": "laplace", "model": "all-MiniLM-L6-v2", "epsilon": 10.0, "erasure": None,
         "text_stage": {"enabled": True, "policy": "redact"}}
    r.update(over)
    return r


def test_measured_sentence_only_for_the_benchmarked_settings():
    kept, leak = _LAPLACE["redact"]["10"]
    assert f"{kept:.2f}x of retrieval kept" in _measured_sentence(_r()) and f"{leak:.1f} %" in _measured_sentence(_r())
    assert "no text stage" in _measured_sentence(_r(text_stage={"enabled": False}))
    assert _measured_sentence(_r(epsilon=12.0)) is None
    assert _measured_sentence(_r(mechanism="mahalanobis")) is None
    assert _measured_sentence(_r(model="fake-keyword-64")) is None
    assert _measured_sentence(_r(text_stage={"enabled": True, "policy": "surrogate"})) is None
    assert _measured_sentence(_r(erasure={"attribute": "sex"})) is None


def test_measured_rows_with_redaction_are_the_committed_benchmark():
    """The redaction rows are the text-scifact-presets results: NDCG@10 over the unprotected
    0.679 and the strongest attacker's leakage, mean over seeds."""
    import json
    from collections import defaultdict
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks/results/findings/text-scifact-presets/results.jsonl"
    cells: dict[float, list[dict]] = defaultdict(list)
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["mechanism"] == "redact+laplace":
            cells[float(r["eps"])].append(r)
    def mean(rows: list[dict], k: str) -> float:
        return sum(r[k] for r in rows) / len(rows)

    for eps, (kept, leak) in _LAPLACE["redact"].items():
        rows = cells[float(eps)]
        assert kept == pytest.approx(mean(rows, "utility") / 0.6786, abs=0.006)
        assert leak == pytest.approx(100 * max(mean(rows, f"leakage_{a}") for a in ("mlc", "mlc-enc", "nn")), abs=0.051)


def test_measured_table_is_monotone_in_epsilon():
    """More ε: more retrieval kept (a typo in the table would usually break this)."""
    for rows in (_LAPLACE["redact"], _LAPLACE["none"]):
        kept = [rows[e][0] for e in sorted(rows, key=float)]
        assert kept == sorted(kept)


@pytest.mark.parametrize("kwargs", [dict(concept="PII", eps=40), dict(concept=None, eps=10, mechanism="none")])
def test_report_text_is_short_and_plain(kwargs):
    from private_vectors import PrivateEmbedding

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ef = PrivateEmbedding(model="fake", **kwargs)
    text = ef.privacy_report_text(["a first note", "another note about the weather", "a third one"])
    lines = text.splitlines()
    assert 4 <= len(lines) <= 8
    assert "{" not in text and "sha256" not in text
    assert lines[0].startswith("Text: ") and any(line.startswith("Key: ") for line in lines)
    if kwargs.get("mechanism") == "none":
        assert lines[-1].startswith("Warning: ")
