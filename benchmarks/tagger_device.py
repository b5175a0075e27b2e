"""The learned tagger's detection time per document on each device of this machine (CPU and GPU).

    python benchmarks/tagger_device.py --data ../shared/data [--tagger FOLDER ...] [--out benchmarks/results/text/tagger_device.md]

Reads SciFact abstracts (the first ``--abstracts``, title and text) and TAB's dev court judgments
(whole, ~3.8k characters each), and runs ``TaggerModel.spans`` over each set once to warm up and
then ``--repeats`` times, on the CPU (all cores) and on ``cuda`` when torch sees one. Only the
tagger is timed: presidio, spaCy and the rules run on the CPU whatever the device (see
``benchmarks/text_ingest.py`` for the whole stage and ingest). ``--tagger`` names tagger folders
(``config.json`` + ``model.safetensors``; default: the shipped one), e.g. variants with fewer layers.
Writes a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path


def _abstracts(data: Path, n: int) -> list[str]:
    out = []
    with open(data / "retrieval" / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            out.append(f"{d.get('title', '')}. {d['text']}")
            if len(out) == n:
                break
    return out


def _judgments(data: Path) -> list[str]:
    with open(data / "pii" / "tab" / "tab_train_dev.jsonl", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    return [d["text"] for d in docs if d["metadata"]["provenance"]["dataset_type"] == "dev"]


def _time(tagger: object, texts: list[str], repeats: int) -> float:
    """Median seconds per document over ``repeats`` passes (after one warm-up pass)."""
    import torch

    tagger.spans(texts)  # type: ignore[attr-defined]
    runs = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t = time.perf_counter()
        tagger.spans(texts)  # type: ignore[attr-defined]
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        runs.append((time.perf_counter() - t) / len(texts))
    return statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--tagger", action="append", default=None, help="tagger folder (repeatable); default: shipped")
    ap.add_argument("--abstracts", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "text" / "tagger_device.md"))
    args = ap.parse_args()

    import torch

    from private_vectors.text_model import TaggerModel

    data = Path(args.data)
    sets = {"SciFact abstracts": _abstracts(data, args.abstracts), "TAB dev judgments": _judgments(data)}
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    rows = []
    for folder in args.tagger or [None]:
        for device in devices:
            tagger = TaggerModel(folder, device=device)
            for name, texts in sets.items():
                s = _time(tagger, texts, args.repeats)
                chars = sum(map(len, texts)) / len(texts)
                rows.append(f"| {Path(folder).name if folder else 'shipped'} | {device} | {name} | {len(texts)} "
                            f"| {chars:,.0f} | {s * 1000:.2f} | {1 / s:,.0f} |")
                print(rows[-1], flush=True)
    head = [
        "# Tagger detection time per document, by device", "",
        f"`python benchmarks/tagger_device.py --data {args.data}"
        + "".join(f" --tagger {t}" for t in args.tagger or []) + "`", "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU threads (torch uses {torch.get_num_threads()}), "
        f"GPU: {gpu}; torch {torch.__version__}. Median of {args.repeats} passes after a warm-up; the tagger alone.", "",
        "| tagger | device | documents | n | mean characters | ms per document | documents/s |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(head + rows) + "\n", "utf-8")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
