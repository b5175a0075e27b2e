"""The TAB held-out (dev) split is frozen: its document ids hash to the committed value."""

import hashlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TAB = ROOT.parent / "shared" / "data" / "pii" / "tab" / "tab_train_dev.jsonl"
FROZEN = ROOT / "benchmarks" / "configs" / "tab_dev_ids.sha256"


def _frozen_hash() -> str:
    lines = [ln.strip() for ln in FROZEN.read_text(encoding="utf-8").splitlines()]
    return next(ln for ln in lines if ln and not ln.startswith("#"))


def test_frozen_hash_file_is_well_formed() -> None:
    digest = _frozen_hash()
    assert len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)


@pytest.mark.skipif(not TAB.exists(), reason="needs ../shared/data/pii/tab/tab_train_dev.jsonl")
def test_tab_dev_ids_match_frozen_hash() -> None:
    rows = [json.loads(line) for line in TAB.read_text(encoding="utf-8").splitlines() if line.strip()]
    dev = sorted(
        r["metadata"]["data_id"] for r in rows if r["metadata"]["provenance"]["dataset_type"] == "dev"
    )
    assert len(dev) == 21
    digest = hashlib.sha256("\n".join(dev).encode("utf-8")).hexdigest()
    assert digest == _frozen_hash()
