"""Detection quality and cost of the text stage, token by token.

Data (paths under ``--data``, default ``../shared/data``):

* ``pii/synth_dataset_v2.json`` (presidio-research): the held-out half is frozen by
  ``benchmarks/detection_split.py`` (``random.Random(1717).sample(range(n), n // 2)``, committed
  before any tuning); tuning looked at the other half only. GPE and STREET_ADDRESS count as
  LOCATION. Scoring is token by token (``\\w+`` tokens; a token carries the label of the span
  covering it): per label, TP = gold and predicted that label, FP = predicted that label and
  gold something else, FN = gold that label and predicted something else. "any PII" counts a
  gold PII token as found when any label covers it (what matters for redaction).
  Systems: each detector alone; the ensemble on each sentence alone (``Sanitizer.spans``); and
  the ensemble with the keyed second pass over the whole half (``Sanitizer.document_spans``:
  what ``apply`` replaces when the half is ingested as one batch — an entity detected in one
  sentence is replaced wherever it recurs). The name detector's vocabulary comes from Faker
  locales, as did many of the data set's names, so PERSON recall is also reported on name
  tokens outside that vocabulary.
* Short lower-case queries: the held-out sentences of at most 12 words, lower-cased, scored
  the same way — detection alone (a fresh Sanitizer) and with the keyed index of the entities
  ingested from the same half in normal case (the realistic setting: queries about people in
  the corpus).
* Pri-DDXPlus (``medical/pri-ddxplus/test.json``): private items = ``symptoms_mask`` +
  ``antecedents_mask`` located in ``question_init`` (label MEDICAL). Systems: the built-in
  ``medical`` concept (shipped vocabulary) and a user concept whose tokens are the symptom and
  antecedent lists of ``dev.json`` (a different file of the same corpus).

ms/doc is wall time of one batched call over all documents divided by their number (after a
warm-up call), on a shared 2-core machine: noisy.

    .venv/bin/python benchmarks/detection.py --data ../shared/data --out benchmarks/results/detection.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detection_split import held_out_indices

from private_vectors.text import (
    NameDetector,
    PlaceDetector,
    PresidioDetector,
    RegexDetector,
    Sanitizer,
    Span,
    TextConcept,
    WordListDetector,
    load_pool,
)

LABEL_MAP = {"GPE": "LOCATION", "STREET_ADDRESS": "LOCATION"}
TARGET = ("PERSON", "LOCATION", "EMAIL_ADDRESS", "PHONE_NUMBER")
REPORTED = (*TARGET, "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "NRP")
PII_GOLD = {*REPORTED, "DATE_TIME", "ZIP_CODE", "US_DRIVER_LICENSE", "AGE", "TITLE", "DOMAIN_NAME", "ORGANIZATION"}
_TOKEN = re.compile(r"\w+", re.UNICODE)

SpanFn = Callable[[list[str]], list[list[Span]]]


def token_labels(text: str, spans: Sequence[tuple[int, int, str]]) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text):
        lab = "O"
        for a, b, label in spans:
            if a < m.end() and m.start() < b:
                lab = label
                break
        out.append(lab)
    return out


def score(gold: list[list[str]], pred: list[list[str]], labels: Sequence[str]) -> dict[str, dict[str, float]]:
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    any_found = any_total = 0
    for g_doc, p_doc in zip(gold, pred, strict=True):
        for g, p in zip(g_doc, p_doc, strict=True):
            if g == p and g != "O":
                tp[g] += 1
            else:
                if p != "O":
                    fp[p] += 1
                if g != "O":
                    fn[g] += 1
            if g != "O" and g in PII_GOLD and g not in ("ORGANIZATION", "TITLE"):
                any_total += 1
                any_found += p != "O"
    out = {}
    for lab in labels:
        prec = tp[lab] / (tp[lab] + fp[lab]) if tp[lab] + fp[lab] else float("nan")
        rec = tp[lab] / (tp[lab] + fn[lab]) if tp[lab] + fn[lab] else float("nan")
        f1 = 2 * prec * rec / (prec + rec) if prec + rec > 0 else float("nan")
        out[lab] = {"p": prec, "r": rec, "f1": f1, "n": tp[lab] + fn[lab]}
    out["any PII"] = {"p": float("nan"), "r": any_found / any_total if any_total else float("nan"),
                      "f1": float("nan"), "n": any_total}
    return out


def timed(fn: SpanFn, texts: list[str]) -> tuple[list[list[Span]], float]:
    fn(texts[:8])  # warm-up
    t0 = time.perf_counter()
    spans = fn(texts)
    return spans, 1000 * (time.perf_counter() - t0) / max(1, len(texts))


def detector_fn(det: Any, threshold: float) -> SpanFn:
    """One detector alone, through a Sanitizer (same threshold and merging as the ensemble)."""
    s = Sanitizer(concept=None, detectors=[det], score_threshold=threshold)
    return s.spans


def _vocabulary() -> frozenset[str]:
    """Casefolded first and last names of the shipped pool (the name detector's vocabulary)."""
    pool = load_pool()
    return frozenset(pool.first_keys | {w.casefold() for w in pool.last})


def out_of_vocabulary_recall(texts: list[str], gold: list[list[str]], pred: list[list[str]]) -> tuple[float, int]:
    """PERSON recall on gold PERSON tokens that are not in the shipped name vocabulary."""
    vocab = _vocabulary()
    hit = total = 0
    for t, g_doc, p_doc in zip(texts, gold, pred, strict=True):
        for m, g, p in zip(_TOKEN.finditer(t), g_doc, p_doc, strict=True):
            if g == "PERSON" and m.group(0).casefold() not in vocab:
                total += 1
                hit += p == "PERSON"
    return (hit / total if total else float("nan")), total


def evaluate(name: str, fn: SpanFn, texts: list[str], gold: list[list[str]],
             labels: Sequence[str]) -> dict[str, Any]:
    spans, ms = timed(fn, texts)
    pred = [token_labels(t, [(s.start, s.end, s.label) for s in sp]) for t, sp in zip(texts, spans, strict=True)]
    oov, n_oov = out_of_vocabulary_recall(texts, gold, pred)
    return {"system": name, "ms_per_doc": ms, "scores": score(gold, pred, labels),
            "person_recall_out_of_vocabulary": oov, "person_tokens_out_of_vocabulary": n_oov}


def fmt(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def table(rows: list[dict[str, Any]], labels: Sequence[str]) -> list[str]:
    head = "| system | ms/doc | " + " | ".join(f"{lab} P / R / F1" for lab in labels) + " | any-PII R |"
    lines = [head, "|" + "---|" * (len(labels) + 3)]
    for r in rows:
        cells = [f"{fmt(r['scores'][lab]['p'])} / {fmt(r['scores'][lab]['r'])} / {fmt(r['scores'][lab]['f1'])}"
                 for lab in labels]
        lines.append(f"| {r['system']} | {r['ms_per_doc']:.1f} | " + " | ".join(cells)
                     + f" | {fmt(r['scores']['any PII']['r'])} |")
    return lines


def load_pii(data: Path) -> tuple[list[dict[str, Any]], list[int]]:
    records = json.loads((data / "pii" / "synth_dataset_v2.json").read_text("utf-8"))
    return records, held_out_indices(len(records))


def gold_labels(rec: dict[str, Any], text: str | None = None) -> list[str]:
    spans = [(s["start_position"], s["end_position"], LABEL_MAP.get(s["entity_type"], s["entity_type"]))
             for s in rec["spans"]]
    return token_labels(text if text is not None else rec["full_text"], spans)


def pii_section(data: Path, halves: Sequence[str], threshold: float) -> tuple[list[str], dict[str, Any]]:
    records, held = load_pii(data)
    held_set = set(held)
    regex, presidio, wordlist = RegexDetector(), PresidioDetector(), WordListDetector()
    ensemble = Sanitizer("PII", score_threshold=threshold)
    systems: list[tuple[str, SpanFn]] = [
        ("regex", detector_fn(regex, threshold)),
        ("wordlist (fallback)", detector_fn(wordlist, threshold)),
        ("presidio + spaCy sm", detector_fn(presidio, threshold)),
        ("name + place vocabularies", Sanitizer(concept=None, detectors=[NameDetector(), PlaceDetector()],
                                                score_threshold=threshold).spans),
        ("ensemble, each sentence alone (Sanitizer.spans)", ensemble.spans),
        ("ensemble + keyed second pass over the half (document_spans = what apply replaces)",
         ensemble.document_spans),
    ]
    lines: list[str] = []
    results: dict[str, Any] = {}
    for half in halves:
        recs = [r for i, r in enumerate(records) if (i in held_set) == (half == "held-out")]
        texts = [r["full_text"] for r in recs]
        gold = [gold_labels(r) for r in recs]
        rows = [evaluate(n, fn, texts, gold, REPORTED) for n, fn in systems]
        results[half] = rows
        lines += [f"### synth_dataset_v2, {half} half ({len(texts)} sentences)", "", *table(rows, REPORTED), "",
                  "PERSON recall on name tokens outside the shipped name vocabulary (pool first + last names, "
                  f"{rows[0]['person_tokens_out_of_vocabulary']} tokens): "
                  + "; ".join(f"{r['system']} {fmt(r['person_recall_out_of_vocabulary'])}" for r in rows), ""]
    if "held-out" in halves:
        recs = [r for i, r in enumerate(records) if i in held_set]
        short = [r for r in recs if len(r["full_text"].split()) <= 12 and r["spans"]]
        queries = [r["full_text"].lower() for r in short]
        gold = [gold_labels(r, r["full_text"].lower()) for r in short]
        fresh = Sanitizer("PII", score_threshold=threshold, detectors=ensemble.detectors)
        indexed = Sanitizer("PII", score_threshold=threshold, detectors=ensemble.detectors)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            indexed.apply([r["full_text"] for r in recs])  # ingest the half in normal case
        rows = [
            evaluate("presidio alone, as typed", detector_fn(presidio, threshold), queries, gold, REPORTED),
            evaluate("ensemble + truecasing (query_spans, no index)", fresh.query_spans, queries, gold, REPORTED),
            evaluate("ensemble + truecasing + keyed index of ingested docs", indexed.query_spans, queries, gold,
                     REPORTED),
        ]
        results["queries"] = rows
        lines += [f"### Short lower-case queries: held-out sentences of ≤ 12 words with an entity, lower-cased "
                  f"({len(queries)})", "", *table(rows, REPORTED), ""]
    return lines, results


def ddx_section(data: Path, n: int) -> tuple[list[str], dict[str, Any]]:
    folder = data / "medical" / "pri-ddxplus"
    recs = [json.loads(x) for x in (folder / "test.json").read_text("utf-8").splitlines() if x.strip()][:n]
    dev = [json.loads(x) for x in (folder / "dev.json").read_text("utf-8").splitlines() if x.strip()]
    texts, gold = [], []
    for r in recs:
        text = r["question_init"]
        spans = []
        for item in list(r.get("symptoms_mask") or []) + list(r.get("antecedents_mask") or []):
            for m in re.finditer(rf"(?<!\w){re.escape(item)}(?!\w)", text, re.IGNORECASE):
                spans.append((m.start(), m.end(), "MEDICAL"))
        texts.append(text)
        gold.append(token_labels(text, spans))
    vocab = sorted({x for r in dev for x in (r.get("symptoms") or []) + (r.get("antecedents") or [])})
    systems: list[tuple[str, SpanFn]] = [
        ("built-in 'medical' (shipped vocabulary)", Sanitizer("medical").spans),
        (f"user TextConcept: {len(vocab)} items of dev.json", Sanitizer(TextConcept("medical", tokens=tuple(vocab),
                                                                                   label="MEDICAL")).spans),
        ("ensemble 'PII' (not a medical detector)", Sanitizer("PII").spans),
    ]
    rows = [evaluate(name, fn, texts, gold, ("MEDICAL",)) for name, fn in systems]
    lines = [f"### Pri-DDXPlus test.json, private items ({len(texts)} cases; gold = symptoms_mask + antecedents_mask "
             "in question_init)", "", "| system | ms/doc | MEDICAL P / R / F1 |", "|---|---|---|"]
    for r in rows:
        s = r["scores"]["MEDICAL"]
        lines.append(f"| {r['system']} | {r['ms_per_doc']:.2f} | {fmt(s['p'])} / {fmt(s['r'])} / {fmt(s['f1'])} |")
    return [*lines, ""], {"ddxplus": rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--halves", default="tune,held-out")
    p.add_argument("--threshold", type=float, default=None, help="score threshold (default: the Sanitizer's)")
    p.add_argument("--ddx", type=int, default=1000, help="Pri-DDXPlus cases (0 = skip)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    data = Path(args.data)
    if not (data / "pii" / "synth_dataset_v2.json").exists():
        print(f"no data at {data}/pii/synth_dataset_v2.json (../shared/data)", file=sys.stderr)
        return 2
    threshold = args.threshold if args.threshold is not None else Sanitizer.__init__.__kwdefaults__["score_threshold"]
    t0 = time.time()
    lines, results = pii_section(data, args.halves.split(","), threshold)
    if args.ddx:
        more, res = ddx_section(data, args.ddx)
        lines += more
        results.update(res)
    load = os.getloadavg()
    header = ["# Text-stage detection: quality and cost", "",
              f"Command: `.venv/bin/python benchmarks/detection.py --data ../shared/data --out {args.out}`; "
              f"score threshold {threshold}; wall {time.time() - t0:.0f} s; load average at the end "
              f"{load[0]:.1f} (shared 2-core machine: ms/doc is noisy).", "",
              "Token-level precision / recall / F1 per label (GPE and STREET_ADDRESS are LOCATION). "
              f"Target (issue 17): ensemble recall ≥ 0.85 at precision ≥ 0.8 on {', '.join(TARGET)}, "
              "held-out half.", ""]
    text = "\n".join(header + lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", "utf-8")
        Path(args.out).with_suffix(".json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
