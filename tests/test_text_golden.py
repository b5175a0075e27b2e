"""The text stage's output pinned per document: sha256 of each sanitized text (never the text).

Recorded on TAB court judgments (train split), presidio's synthetic sentences (the tuning half)
and SciFact abstracts 300-600, each corpus as one batch (the keyed second pass included), for
the ``PII`` preset with typed placeholders, for ``PHI`` on TAB train, and for keyed surrogates on
the synthetic half (with each text's replacement log, the keyed index built, and lower-cased
queries against it). A change of the text stage that moves any of these is a behaviour change:
re-record with ``python tests/test_text_golden.py --record`` and give it its row in the rules
table. Skips without ``../shared/data``. The whole record is a slow test (about three minutes on
two cores: ``pytest -m slow tests/test_text_golden.py``); a quick part (the first 10 judgments,
200 sentences, 60 abstracts, each as its own batch) runs with the default tests.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
GOLDEN = Path(__file__).resolve().parent / "data" / "text_golden.json"
KEY = "golden test key, not a secret!"
_SOURCES = [DATA / "pii" / "tab" / "tab_train_dev.jsonl", DATA / "pii" / "synth_dataset_v2.json",
            DATA / "retrieval" / "scifact" / "corpus.jsonl"]
needs_data = pytest.mark.skipif(not all(p.is_file() for p in _SOURCES),
                                reason="needs ../shared/data (TAB, presidio synthetic, SciFact); not present")


def _sha(value: Any) -> str:
    raw = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def tab_train() -> list[str]:
    rows = [json.loads(x) for x in _SOURCES[0].read_text("utf-8").splitlines()]
    return [r["text"] for r in rows if r["metadata"]["provenance"]["dataset_type"] == "train"]


def synthetic_tuning() -> list[str]:
    rows = json.loads(_SOURCES[1].read_text("utf-8"))
    split = json.loads((ROOT / "benchmarks" / "results" / "detection" / "split.json").read_text("utf-8"))
    held = set(split["held_out"])
    return [r["full_text"] for i, r in enumerate(rows) if i not in held]


def scifact_tuning() -> list[str]:
    lines = _SOURCES[2].read_text("utf-8").splitlines()[300:600]
    docs = [json.loads(x) for x in lines]
    return [f"{d.get('title', '')}\n{d['text']}" for d in docs]


def _redacted(concept: str, texts: list[str]) -> list[str]:
    from private_vectors.text import Sanitizer

    return [_sha(t) for t in Sanitizer(concept, timeout=None).apply(texts)]


def _keyed(texts: list[str]) -> dict[str, Any]:
    from private_vectors.text import Sanitizer

    san = Sanitizer("PII", policy="surrogate", key=KEY, timeout=None)
    out, log = san.apply_recorded(texts)
    entries = san.get_state()["entries"]
    queries = san.apply_queries([t.lower() for t in texts[:200]])
    return {"documents": [_sha(t) for t in out], "log": [_sha(x) for x in log],
            "index": {"entries": len(entries), "sha256": _sha(entries)}, "queries": [_sha(q) for q in queries]}


def record_quick() -> dict[str, Any]:
    """The quick part: a prefix of each corpus, each prefix one batch."""
    tab, synthetic, scifact = tab_train()[:10], synthetic_tuning()[:200], scifact_tuning()[:60]
    return {"PII": {"tab_train": _redacted("PII", tab), "synthetic_tuning": _redacted("PII", synthetic),
                    "scifact_300_600": _redacted("PII", scifact)},
            "PII_surrogate_synthetic_tuning": _keyed(synthetic)}


def record_full() -> dict[str, Any]:
    """Every pinned output of the whole corpora, hashed."""
    tab, synthetic, scifact = tab_train(), synthetic_tuning(), scifact_tuning()
    return {"PII": {"tab_train": _redacted("PII", tab), "synthetic_tuning": _redacted("PII", synthetic),
                    "scifact_300_600": _redacted("PII", scifact)},
            "PHI": {"tab_train": _redacted("PHI", tab)},
            "PII_surrogate_synthetic_tuning": _keyed(synthetic)}


def _differences(expected: Any, got: Any, path: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(got, dict):
        return [d for k in sorted(set(expected) | set(got))
                for d in _differences(expected.get(k), got.get(k), f"{path}/{k}")]
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        return [f"{path}[{i}]" for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
    return [] if expected == got else [path]


def _check(part: str, got: dict[str, Any]) -> None:
    expected = json.loads(GOLDEN.read_text("utf-8"))[part]
    diffs = _differences(expected, got)
    assert not diffs, f"{len(diffs)} pinned outputs moved, first: {diffs[:12]}"


@needs_data
def test_text_stage_output_is_pinned_quick() -> None:
    _check("quick", record_quick())


@needs_data
@pytest.mark.slow
def test_text_stage_output_is_pinned() -> None:
    _check("full", record_full())


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        golden = {"quick": record_quick(), "full": record_full()}
        GOLDEN.write_text(json.dumps(golden, indent=0) + "\n", encoding="utf-8")
        print(f"wrote {GOLDEN}")
