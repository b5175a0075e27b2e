"""Sanitizing time of one long, name-dense document against its length: linear or not.

    git worktree add /tmp/pv-before <commit>
    nice -n 10 .venv/bin/python benchmarks/long_document.py --data ../shared/data \\
        --trees before=/tmp/pv-before/src@100000 after=src \\
        --out benchmarks/results/text/long_document.md

The document: the sentences of the presidio-research synthetic set that name a person
(``pii/synth_dataset_v2.json``, seeded shuffle, repeated as needed), joined and cut to each size
of ``--sizes`` (12.5k to 200k characters; about one name, place or number every 55 characters).
Per tree (``name=path/to/src``, a fresh process with that ``PYTHONPATH``; ``@N`` caps its sizes
at N characters) and per detector of ``--detectors`` (``Sanitizer(detector="rules")`` and
``"model"``, the learned tagger), one Sanitizer is built and warmed on a short text, then each
size is timed once: :meth:`Sanitizer.document_spans` (detection in chunks, the rules, the keyed
second pass; the replacement itself is a string join), wall seconds and the process's CPU
seconds (all threads), each per 10,000 characters, the spans found, a digest of the spans (equal
digests: the trees replace exactly the same characters with the same labels) and the 1-minute
load average before the size ran (the machine has 2 cores shared with other work: read CPU
seconds, the wall clock includes waiting). Linear time is a flat "CPU s / 10k" column and an
exponent of 1 in a least-squares fit of log CPU seconds on log characters (sizes from 25k: the
smallest document carries the fixed cost of a call). ``--append`` adds the rows of this run to
those of ``--out``'s JSON (a row of the same tree, detector and size is replaced), e.g. a size
one tree skipped::

    nice -n 10 .venv/bin/python benchmarks/long_document.py --data ../shared/data \
        --trees before=/tmp/pv-before/src --detectors rules --sizes 200000 --append \
        --out benchmarks/results/text/long_document.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _shared import DATA

SIZES = (12_500, 25_000, 50_000, 100_000, 200_000)


def name_dense(data: Path, chars: int, seed: int = 0) -> str:
    """The synthetic sentences that name a person, shuffled (seeded), joined to ``chars`` characters."""
    rows = json.loads((data / "pii" / "synth_dataset_v2.json").read_text("utf-8"))
    sentences = [r["full_text"] for r in rows if any(s["entity_type"] == "PERSON" for s in r["spans"])]
    random.Random(seed).shuffle(sentences)
    out, size, i = [], 0, 0
    while size < chars:
        out.append(sentences[i % len(sentences)])
        size += len(out[-1]) + 1
        i += 1
    return " ".join(out)[:chars]


def _digest(spans: list[Any]) -> str:
    text = json.dumps([[s.start, s.end, s.label, round(s.score, 6), s.detector] for s in spans])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _child(data: Path, detector: str, sizes: list[int]) -> None:
    from private_vectors.text import Sanitizer

    sanitizer = Sanitizer(detector=detector)
    sanitizer.document_spans(["Maria Lopez flew to Madrid on Monday."])  # recognizers loaded
    for n in sizes:
        text = name_dense(data, n)
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        spans = sanitizer.document_spans([text])[0]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(json.dumps({"chars": n, "spans": len(spans), "wall": round(wall, 2), "cpu": round(cpu, 2),
                          "load": round(load, 1), "digest": _digest(spans)}), flush=True)


def _sha(src: str) -> str:
    res = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--", "."], capture_output=True, text=True)
    return (res.stdout.strip() or "?") + ("+changes" if dirty.stdout.strip() else "")


def _run_tree(name: str, spec: str, detector: str, data: str, sizes: list[int]) -> list[dict[str, Any]]:
    src, _, cap = spec.partition("@")
    wanted = [n for n in sizes if not cap or n <= int(cap)]
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
    proc = subprocess.Popen([sys.executable, __file__, "--child", "--data", data, "--detectors", detector,
                             "--sizes", ",".join(map(str, wanted))], env=env, stdout=subprocess.PIPE, text=True)
    rows = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            rows.append({"tree": name, "sha": _sha(src), "detector": detector, **json.loads(line)})
            print(rows[-1], flush=True)
    if proc.wait() != 0:
        raise SystemExit(f"tree {name} ({detector}) failed")
    return rows


def _exponent(rows: list[dict[str, Any]]) -> float:
    """The slope of a least-squares fit of log CPU seconds on log characters (1: linear)."""
    xs, ys = [math.log(r["chars"]) for r in rows], [math.log(max(r["cpu"], 1e-9)) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def _table(rows: list[dict[str, Any]], detector: str) -> list[str]:
    lines = [f"### `detector=\"{detector}\"`", "",
             "| characters | tree | spans | wall s | CPU s | CPU s / 10k | wall s / 10k | load | spans digest |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in sorted((r for r in rows if r["detector"] == detector), key=lambda r: (r["chars"], r["tree"])):
        per = 10_000 / r["chars"]
        lines.append(f"| {r['chars']:,} | {r['tree']} ({r['sha']}) | {r['spans']} | {r['wall']} | {r['cpu']} | "
                     f"{r['cpu'] * per:.3f} | {r['wall'] * per:.3f} | {r['load']} | `{r['digest']}` |")
    for tree in dict.fromkeys(r["tree"] for r in rows if r["detector"] == detector):
        mine = sorted((r for r in rows if r["detector"] == detector and r["tree"] == tree and r["chars"] >= 25_000),
                      key=lambda r: r["chars"])
        if len(mine) >= 2:
            lo, hi = mine[0], mine[-1]
            growth = (hi["cpu"] / hi["chars"]) / max(lo["cpu"] / lo["chars"], 1e-9)
            lines.append("")
            lines.append(f"{tree}: CPU seconds grow as characters to the power {_exponent(mine):.2f} from "
                         f"{lo['chars']:,} to {hi['chars']:,} characters (1: linear); per character, "
                         f"{growth:.2f} times as much at {hi['chars']:,} as at {lo['chars']:,}.")
    return [*lines, ""]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trees", nargs="+", default=["this=src"], help="name=path/to/src[@max characters] pairs")
    p.add_argument("--detectors", default="rules,model")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default=None)
    p.add_argument("--append", action="store_true", help="add to the rows of --out's JSON")
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    detectors = args.detectors.split(",")
    if args.child:
        _child(Path(args.data), detectors[0], sizes)
        return
    command = ("nice -n 10 .venv/bin/python benchmarks/long_document.py --data ../shared/data --trees "
               + " ".join(args.trees) + f" --detectors {args.detectors} --sizes {args.sizes}"
               + (" --append" if args.append else "") + (f" --out {args.out}" if args.out else ""))
    rows = [{**r, "command": command} for d in detectors for pair in args.trees
            for r in _run_tree(*pair.split("=", 1), d, args.data, sizes)]
    if args.append and args.out and Path(args.out).with_suffix(".json").exists():
        new = {(r["tree"], r["detector"], r["chars"]) for r in rows}
        old = json.loads(Path(args.out).with_suffix(".json").read_text("utf-8"))
        rows = [r for r in old if (r["tree"], r["detector"], r["chars"]) not in new] + rows
        detectors = list(dict.fromkeys(r["detector"] for r in rows))
    commands = "; ".join(f"`{c}`" for c in dict.fromkeys(r.get("command", command) for r in rows))
    lines = ["# One long, name-dense document: sanitizing time against length", "",
             f"Commands: {commands} ({os.cpu_count()} cores, shared: the load column is the 1-minute load "
             "average before each size). `Sanitizer.document_spans` on one document of the presidio synthetic "
             "sentences that name a person; see the script's docstring. Equal digests: the same spans.", ""]
    for d in detectors:
        lines += _table(rows, d)
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
