"""Restore records: size classes, cost next to the text stage, exactness, refusals.

Generated surrogate documents (people, places, e-mails, phone numbers:
:func:`private_vectors.eval.synthetic.contact_documents`, as in ``tests/test_restore.py``) go through ``prepare_with_restore`` with the fake encoder; every
record is opened and its document restored, then checked against the original.

    .venv/bin/python benchmarks/restore.py --n 1000 --out benchmarks/results/restore.md
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import time
from pathlib import Path

from private_vectors import PrivateEmbedding
from private_vectors.eval.synthetic import contact_documents
from private_vectors.restore import RECORD_PREFIX, RestoreError, Restorer, prepare_with_restore

ROOT = Path(__file__).resolve().parents[1]

KEY = "a restore test key of enough length"  # the restore tests' key: the same surrogates


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    texts = contact_documents(args.n, seed=11)
    ids = [f"d{i}" for i in range(args.n)]
    ef = PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=KEY, eps=10)
    ef.get_config()
    ef.sanitize_documents(texts[:5])  # warm the detectors

    t0 = time.perf_counter()
    ef.sanitize_documents(texts)
    t_plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    stored, _, records = prepare_with_restore(ef, texts, ids)
    t_with = time.perf_counter() - t0
    restorer = Restorer.for_embedding(ef)
    t0 = time.perf_counter()
    back = [restorer.restore_text(i, s, r) for i, s, r in zip(ids, stored, records, strict=True)]
    t_open = time.perf_counter() - t0
    spans = [len(restorer.open(i, r).replacements) for i, r in zip(ids, records, strict=True)]
    sizes = collections.Counter(len(base64.urlsafe_b64decode(r[len(RECORD_PREFIX):])) - 28 for r in records)
    refused = 0
    for k in range(min(200, args.n - 1)):
        try:
            restorer.restore_text(ids[k], stored[k], records[k + 1])
        except RestoreError:
            refused += 1
    result = {
        "n": args.n, "exact": sum(b == t for b, t in zip(back, texts, strict=True)),
        "replaced_spans_mean": sum(spans) / len(spans),
        "size_classes_bytes": dict(sorted(sizes.items())),
        "record_chars_mean": sum(map(len, records)) / len(records),
        "sanitize_s": round(t_plain, 3), "sanitize_and_seal_s": round(t_with, 3),
        "open_and_restore_ms_per_doc": round(1000 * t_open / args.n, 4),
        "swapped_refused": f"{refused}/{min(200, args.n - 1)}",
    }
    cmd = f".venv/bin/python benchmarks/restore.py --n {args.n}" + (f" --out {args.out}" if args.out else "")
    md = "\n".join([
        "# Restore records", "", f"Command: `{cmd}` (fake encoder, generated documents; timings on a shared 2-core "
        "machine, indicative only).", "",
        "| measure | value |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in result.items()], "",
        "`sanitize_and_seal_s` includes embedding (fake encoder) and sealing; the text stage dominates both.",
        "", "```json", json.dumps(result, indent=2), "```", ""])
    print(md)
    if args.out:
        Path(args.out).write_text(md)
    return 0 if result["exact"] == args.n else 1


if __name__ == "__main__":
    raise SystemExit(main())
