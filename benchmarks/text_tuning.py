"""Text-stage detection on three corpora: TAB court judgments, presidio synthetic sentences, SciFact.

A small scorer (its scorers live in ``_shared.py``) for tuning the text stage's presets (``benchmarks/detection.py`` is the full
harness). TAB (``pii/tab/tab_train_dev.jsonl``): token recall of the annotated DIRECT and QUASI
mentions per entity type, and precision = share of masked word tokens inside a DIRECT/QUASI
mention. Tune on ``--split train`` only; ``--split dev`` is the frozen held-out part and prints
aggregates only. Presidio synthetic (``pii/synth_dataset_v2.json``, the held-out half frozen by
``detection_split.py``): token recall per type and token precision. SciFact (300
abstracts; the first 300 are the measured set, ``--scifact-offset 300`` the part to tune on): share of documents and word tokens changed, and propagated spans of all-caps words
of at most four letters. Every corpus runs as one batch (the keyed second pass included).

    .venv/bin/python benchmarks/text_tuning.py --concept PII --split train \
        --out benchmarks/results/text/pii_train.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _shared import DATA, score_scifact, score_synthetic, score_tab


class _PresidioOnly:
    """presidio + spaCy small with every presidio entity type, each text on its own (no second pass)."""

    def __init__(self) -> None:
        from private_vectors.text import Sanitizer
        from private_vectors.text.recognizers.presidio import PRESIDIO_LABELS, PresidioDetector

        self._s = Sanitizer(detectors=[PresidioDetector(entities=PRESIDIO_LABELS)])

    def document_spans(self, texts: list[str]) -> list[list[Any]]:
        return self._s.spans(texts)


def _presidio_baseline() -> Any:
    return _PresidioOnly()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--concept", default="PII", help="a preset, a comma-separated list (PII,medical), or "
                   "'presidio' (presidio + spaCy small, every entity type, no second pass: the baseline)")
    p.add_argument("--split", default="train", choices=["train", "dev"])
    p.add_argument("--corpora", default="tab,synthetic,scifact")
    p.add_argument("--synthetic-half", default="held_out", choices=["held_out", "tuning"],
                   help="presidio synthetic set: the frozen held-out half, or the half to tune on")
    p.add_argument("--scifact-offset", type=int, default=0,
                   help="first SciFact document (0: the measured 300; 300: the 300 to tune on)")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from private_vectors.text import Sanitizer

    concept: Any = args.concept.split(",") if "," in args.concept else args.concept
    data = Path(args.data)
    out: dict[str, Any] = {"concept": args.concept, "command": "python benchmarks/text_tuning.py " + " ".join(sys.argv[1:])}
    for corpus in args.corpora.split(","):
        san = _presidio_baseline() if concept == "presidio" else Sanitizer(concept)  # a fresh index per corpus
        if corpus == "tab":
            out["tab"] = score_tab(san, args.split, data)
        elif corpus == "synthetic":
            key = "synthetic_held_out" if args.synthetic_half == "held_out" else "synthetic_tuning"
            out[key] = score_synthetic(san, data, args.synthetic_half)
        elif corpus == "scifact":
            out["scifact"] = score_scifact(san, data, offset=args.scifact_offset)
        print(json.dumps({k: v for k, v in out.items()}, indent=1), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
