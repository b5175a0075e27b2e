"""Freeze the held-out half of the presidio-research PII set before any detector tuning.

Split rule (committed, never changed): records of ``synth_dataset_v2.json`` are indexed in
file order; ``random.Random(1717).sample(range(n), n // 2)`` is the held-out half, the rest is
the tuning half. Detector tuning may look at the tuning half only; ``benchmarks/detection.py``
reports both halves.

    .venv/bin/python benchmarks/detection_split.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from _shared import SPLIT_FILE, SPLIT_SEED, held_out_indices


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    args = p.parse_args()
    path = Path(args.data) / "pii" / "synth_dataset_v2.json"
    raw = path.read_bytes()
    n = len(json.loads(raw))
    held = held_out_indices(n)
    SPLIT_FILE.parent.mkdir(parents=True, exist_ok=True)
    SPLIT_FILE.write_text(json.dumps({
        "dataset": "pii/synth_dataset_v2.json", "dataset_sha256": hashlib.sha256(raw).hexdigest(),
        "records": n, "rule": f"random.Random({SPLIT_SEED}).sample(range(n), n // 2) = held-out",
        "held_out": held}) + "\n")
    print(f"{SPLIT_FILE}: {len(held)} held-out of {n}")


if __name__ == "__main__":
    main()
