"""Text-stage detection on three corpora: TAB court judgments, presidio synthetic sentences, SciFact.

A small scorer for tuning the text stage's presets (``benchmarks/detection.py`` is the full
harness). TAB (``pii/tab/tab_train_dev.jsonl``): token recall of the annotated DIRECT and QUASI
mentions per entity type, and precision = share of masked word tokens inside a DIRECT/QUASI
mention. Tune on ``--split train`` only; ``--split dev`` is the frozen held-out part and prints
aggregates only. Presidio synthetic (``pii/synth_dataset_v2.json``, the held-out half frozen by
``detection_split.py``): token recall per type and token precision. SciFact (300
abstracts; the first 300 are the measured set, ``--scifact-offset 300`` the part to tune on): share of documents and word tokens changed, and propagated spans of all-caps words
of at most four letters. Every corpus runs as one batch (the keyed second pass included).

    PYTHONPATH=src .venv/bin/python benchmarks/text_tuning.py --concept PII --split train \
        --out benchmarks/results/text/pii_train.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
_TOKEN = re.compile(r"\w+")
_SYNTH_TYPES = {"PERSON": "PERSON", "FIRST_NAME": "PERSON", "LAST_NAME": "PERSON", "LOCATION": "LOCATION",
                "STREET_ADDRESS": "LOCATION", "CITY": "LOCATION", "COUNTRY": "LOCATION", "GPE": "LOCATION",
                "EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE"}


def _masked(text: str, spans: list[Any]) -> list[tuple[int, int, bool]]:
    """(start, end, masked) of every word token."""
    return [(m.start(), m.end(), any(s.start < m.end() and m.start() < s.end for s in spans))
            for m in _TOKEN.finditer(text)]


def _inside(a: int, b: int, ranges: list[tuple[int, int, str]]) -> str | None:
    for s, e, kind in ranges:
        if s < b and a < e:
            return kind
    return None


def score_tab(sanitizer: Any, split: str, data: Path) -> dict[str, Any]:
    rows = [json.loads(x) for x in (data / "pii" / "tab" / "tab_train_dev.jsonl").read_text("utf-8").splitlines()]
    rows = [r for r in rows if r["metadata"]["provenance"]["dataset_type"] == split]
    texts = [r["text"] for r in rows]
    t0 = time.perf_counter()
    found = sanitizer.document_spans(texts)
    seconds = time.perf_counter() - t0
    hit, total, precision = _tally((text, spans, [(e["start_offset"], e["end_offset"], e["entity_type"])
                                                  for e in r["entities"] if e["identifier_type"] in ("DIRECT", "QUASI")])
                                   for r, text, spans in zip(rows, texts, found, strict=True))
    recall = {k: round(hit[k] / total[k], 3) for k in sorted(total)}
    recall["DIRECT+QUASI"] = round(sum(hit.values()) / max(1, sum(total.values())), 3)
    return {"documents": len(rows), "split": split, "recall": recall, "tokens": dict(total),
            "precision": precision, "seconds": round(seconds, 1)}


def score_synthetic(sanitizer: Any, data: Path, half: str = "held_out") -> dict[str, Any]:
    rows = json.loads((data / "pii" / "synth_dataset_v2.json").read_text("utf-8"))
    split = json.loads((Path(__file__).parent / "results" / "detection" / "split.json").read_text("utf-8"))
    held = set(split["held_out"])
    rows = [r for i, r in enumerate(rows) if (i in held) == (half == "held_out")]
    found = sanitizer.document_spans([r["full_text"] for r in rows])
    hit, total, precision = _tally((r["full_text"], spans,
                                    [(s["start_position"], s["end_position"],
                                      _SYNTH_TYPES.get(s["entity_type"], s["entity_type"])) for s in r["spans"]])
                                   for r, spans in zip(rows, found, strict=True))
    recall = {k: round(hit[k] / total[k], 3) for k in sorted(total) if total[k] >= 20}
    return {"documents": len(rows), "half": half, "recall": recall, "precision": precision}


def _tally(docs: Any) -> tuple[Counter, Counter, float]:
    """(masked annotated tokens by type, annotated tokens by type, precision) over
    ``(text, spans, annotations)`` triples: precision is the share of masked tokens that lie
    inside an annotation."""
    hit, total, masked, masked_in = Counter(), Counter(), 0, 0
    for text, spans, ann in docs:
        for a, b, m in _masked(text, spans):
            kind = _inside(a, b, ann)
            if kind is not None:
                total[kind] += 1
                hit[kind] += m
            masked += m
            masked_in += m and kind is not None
    return hit, total, round(masked_in / max(1, masked), 3)


def score_scifact(sanitizer: Any, data: Path, n: int = 300, offset: int = 0) -> dict[str, Any]:
    lines = (data / "retrieval" / "scifact" / "corpus.jsonl").read_text("utf-8").splitlines()[offset:offset + n]
    docs = [json.loads(x) for x in lines]
    texts = [f"{d.get('title', '')}\n{d['text']}" for d in docs]
    found = sanitizer.document_spans(texts)
    changed = sum(bool(s) for s in found)
    tokens = sum(len(_TOKEN.findall(t)) for t in texts)
    masked = sum(sum(m for _, _, m in _masked(t, s)) for t, s in zip(texts, found, strict=True))
    acronyms = Counter(t[s.start:s.end] for t, spans in zip(texts, found, strict=True) for s in spans
                       if s.detector == "keyed-index" and t[s.start:s.end].isupper() and len(t[s.start:s.end]) <= 4)
    top = Counter(t[s.start:s.end] for t, spans in zip(texts, found, strict=True) for s in spans).most_common(15)
    return {"documents": len(texts), "offset": offset, "changed_documents": round(changed / len(texts), 3),
            "changed_tokens": round(masked / max(1, tokens), 4), "propagated_acronyms": dict(acronyms),
            "most_replaced": top}


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
