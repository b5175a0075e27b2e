"""Counters the reliability tests keep (bad inputs tried, crashes survived, documents lost).

Each test module records into a process-wide :data:`COUNTS`; at the end of a module the
totals are printed (visible with ``pytest -s``) and, when ``PV_RELIABILITY_COUNTS`` names a
file, appended to it as one JSON line — the README's "Guarantees and tests" table is filled
from that file.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter

COUNTS: Counter[str] = Counter()


def record(name: str, n: int = 1) -> None:
    """Add ``n`` to the counter ``name``."""
    COUNTS[name] += n


def flush(module: str) -> None:
    """Print and (optionally) persist the counters collected so far, then reset them."""
    if not COUNTS:
        return
    line = json.dumps({"module": module, **dict(sorted(COUNTS.items()))})
    print(f"\n[reliability counts] {line}", file=sys.stderr)
    target = os.environ.get("PV_RELIABILITY_COUNTS")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    COUNTS.clear()
