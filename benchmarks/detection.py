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

* TAB (``--sections tab``; ``pii/tab/tab_train_dev.jsonl``): real ECHR judgments with human
  annotations (Pilán et al. 2022, "The Text Anonymization Benchmark (TAB)", Computational
  Linguistics 48(4)). The 21 ``dev`` documents are held out: their ids are frozen in
  ``benchmarks/configs/tab_dev_ids.sha256`` (tune on ``train`` only). Token recall of the
  mentions annotated DIRECT or QUASI identifier, per ``entity_type`` and identifier type, and
  precision = share of masked word tokens inside such a mention, for the library's Sanitizer per
  ``--concepts`` preset beside presidio's defaults and spaCy's NER alone (see ``TAB_NOTE``).
* SciFact over-replacement (``--sections scifact``): the first 300 documents of
  ``retrieval/scifact/corpus.jsonl`` (no personal data) as one batch: share of documents and
  tokens changed, the most replaced strings, all-caps spans of ≤ 4 letters and the spans the
  keyed second pass added.

ms/doc is wall time of one batched call over all documents divided by their number (after a
warm-up call), on a shared 2-core machine: noisy.

    .venv/bin/python benchmarks/detection.py --data ../shared/data --out benchmarks/results/detection.md
    .venv/bin/python benchmarks/detection.py --data ../shared/data --sections tab --concepts PII,PHI,quasi \\
        --out benchmarks/results/detection/tab.md
    .venv/bin/python benchmarks/detection.py --data ../shared/data --sections scifact --concepts PII,PHI,quasi \\
        --out benchmarks/results/detection/scifact_over_replacement.md

``--limit N`` makes a quick run (N documents per part).
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

from _shared import held_out_indices, presidio_defaults, spacy_nlp

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


def pii_section(data: Path, halves: Sequence[str], threshold: float, limit: int | None = None
                ) -> tuple[list[str], dict[str, Any]]:
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
        recs = [r for i, r in enumerate(records) if (i in held_set) == (half == "held-out")][:limit]
        texts = [r["full_text"] for r in recs]
        gold = [gold_labels(r) for r in recs]
        rows = [evaluate(n, fn, texts, gold, REPORTED) for n, fn in systems]
        results[half] = rows
        lines += [f"### synth_dataset_v2, {half} half ({len(texts)} sentences)", "", *table(rows, REPORTED), "",
                  "PERSON recall on name tokens outside the shipped name vocabulary (pool first + last names, "
                  f"{rows[0]['person_tokens_out_of_vocabulary']} tokens): "
                  + "; ".join(f"{r['system']} {fmt(r['person_recall_out_of_vocabulary'])}" for r in rows), ""]
    if "held-out" in halves:
        recs = [r for i, r in enumerate(records) if i in held_set][:limit]
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


# -- TAB: real court judgments with human annotations ------------------------------------------
TAB_TYPES = ("PERSON", "LOC", "ORG", "DATETIME", "CODE", "DEM", "QUANTITY", "MISC")
TAB_MASKED = ("DIRECT", "QUASI")
TokenSpans = list[tuple[int, int]]


def word_tokens(text: str) -> TokenSpans:
    """(start, end) of every ``\\w+`` word token."""
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)]


def covered(tokens: TokenSpans, spans: Sequence[tuple[int, int]]) -> list[bool]:
    """For each token: does any span overlap it."""
    spans = sorted(spans)
    out = []
    for a, b in tokens:
        out.append(any(s < b and a < e for s, e in spans if s < b))
    return out


def tab_gold(doc: dict[str, Any], tokens: TokenSpans) -> list[tuple[str, str] | None]:
    """For each token, ``(entity_type, identifier_type)`` of the first DIRECT or QUASI mention
    covering it (DIRECT before QUASI), else None. NO_MASK mentions are not identifiers."""
    mentions = sorted((e for e in doc["entities"] if e["identifier_type"] in TAB_MASKED),
                      key=lambda e: (TAB_MASKED.index(e["identifier_type"]), e["start_offset"]))
    out: list[tuple[str, str] | None] = []
    for a, b in tokens:
        hit = next(((e["entity_type"], e["identifier_type"]) for e in mentions
                    if e["start_offset"] < b and a < e["end_offset"]), None)
        out.append(hit)
    return out


def diff_masked(original: str, sanitized: str) -> list[bool]:
    """Which word tokens of ``original`` the text stage replaced, from the output text alone:
    a difflib alignment of the two texts' word tokens; a token outside an ``equal`` block was
    replaced or removed."""
    import difflib

    a = [m.group(0) for m in _TOKEN.finditer(original)]
    b = [m.group(0) for m in _TOKEN.finditer(sanitized)]
    masked = [True] * len(a)
    for block in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks():
        for i in range(block.a, block.a + block.size):
            masked[i] = False
    return masked


def tab_scores(golds: Sequence[Sequence[tuple[str, str] | None]], masks: Sequence[Sequence[bool]]
               ) -> dict[str, Any]:
    """Token recall of DIRECT+QUASI identifier tokens per entity type, per identifier type and
    overall, and precision = share of masked tokens that lie inside a DIRECT/QUASI mention."""
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    masked = masked_in = 0
    for g_doc, m_doc in zip(golds, masks, strict=True):
        for g, m in zip(g_doc, m_doc, strict=True):
            masked += m
            if g is None:
                continue
            masked_in += m
            for key in (g[0], g[1], "all"):
                total[key] += 1
                hit[key] += m
    recall = {k: (hit[k] / total[k] if total[k] else float("nan")) for k in (*TAB_TYPES, *TAB_MASKED, "all")}
    return {"recall": recall, "gold_tokens": {k: total[k] for k in (*TAB_TYPES, *TAB_MASKED, "all")},
            "precision": masked_in / masked if masked else float("nan"), "masked_tokens": masked}


def load_tab(data: Path) -> dict[str, list[dict[str, Any]]]:
    """TAB documents by split (file order): ``{"dev": [...], "train": [...]}``."""
    path = data / "pii" / "tab" / "tab_train_dev.jsonl"
    docs = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    return {split: [d for d in docs if d["metadata"]["provenance"]["dataset_type"] == split]
            for split in ("dev", "train")}


MaskFn = Callable[[list[str]], list[list[bool]]]


def sanitizer_masks(sanitizer: Any) -> MaskFn:
    """Masked tokens of a Sanitizer over a batch: the spans ``apply`` replaces
    (``document_spans``), or, when the installed Sanitizer has no span API, a difflib alignment of
    the input and ``apply``'s output."""
    def run(texts: list[str]) -> list[list[bool]]:
        if hasattr(sanitizer, "document_spans"):
            spans = sanitizer.document_spans(texts)
            return [covered(word_tokens(t), [(s.start, s.end) for s in sp]) for t, sp in zip(texts, spans, strict=True)]
        return [diff_masked(t, o) for t, o in zip(texts, sanitizer.apply(texts), strict=True)]
    return run


def presidio_masks(texts: list[str]) -> list[list[bool]]:
    """presidio's defaults (every recognizer, analyzer threshold 0) on spaCy small."""
    analyzer, _ = presidio_defaults()
    return [covered(word_tokens(t), [(r.start, r.end) for r in analyzer.analyze(text=t, language="en")])
            for t in texts]


def spacy_masks(texts: list[str]) -> list[list[bool]]:
    """spaCy small's NER alone: every entity it finds, any label."""
    nlp = spacy_nlp()
    return [covered(word_tokens(t), [(e.start_char, e.end_char) for e in doc.ents])
            for t, doc in zip(texts, nlp.pipe(texts), strict=True)]


def concept_sanitizers(concepts: Sequence[str], threshold: float) -> tuple[list[tuple[str, Any]], list[str]]:
    """A Sanitizer per concept preset the installed code accepts, and a note per refused one."""
    out, notes = [], []
    for c in concepts:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append((c, Sanitizer(c, score_threshold=threshold)))
        except Exception as exc:  # an unknown preset is skipped and named
            notes.append(f"concept {c!r} skipped: the installed Sanitizer refuses it ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:160]})")
    return out, notes


def tab_systems(concepts: Sequence[str], threshold: float) -> tuple[list[tuple[str, MaskFn]], list[str]]:
    sanitizers, notes = concept_sanitizers(concepts, threshold)
    systems: list[tuple[str, MaskFn]] = [(f"library Sanitizer({c!r}), batch = the split", sanitizer_masks(s))
                                         for c, s in sanitizers]
    systems += [("presidio defaults + spaCy sm", presidio_masks), ("spaCy sm NER alone (all labels)", spacy_masks)]
    return systems, notes


def tab_table(rows: list[dict[str, Any]]) -> list[str]:
    head = ("| system | recall all | precision | masked tokens | DIRECT R | QUASI R | "
            + " | ".join(f"{t} R" for t in TAB_TYPES) + " | s |")
    lines = [head, "|" + "---|" * (len(TAB_TYPES) + 7)]
    for r in rows:
        s = r["scores"]
        lines.append(f"| {r['system']} | {fmt(s['recall']['all'])} | {fmt(s['precision'])} | {s['masked_tokens']} | "
                     f"{fmt(s['recall']['DIRECT'])} | {fmt(s['recall']['QUASI'])} | "
                     + " | ".join(fmt(s["recall"][t]) for t in TAB_TYPES) + f" | {r['seconds']:.0f} |")
    return lines


def tab_section(data: Path, concepts: Sequence[str], threshold: float, limit: int | None
                ) -> tuple[list[str], dict[str, Any]]:
    splits = load_tab(data)
    systems, notes = tab_systems(concepts, threshold)
    lines: list[str] = [f"- {n}" for n in notes] + ([""] if notes else [])
    results: dict[str, Any] = {"notes": notes}
    for split in ("dev", "train"):
        docs = splits[split][:limit]
        texts = [d["text"] for d in docs]
        toks = [word_tokens(t) for t in texts]
        golds = [tab_gold(d, tk) for d, tk in zip(docs, toks, strict=True)]
        rows = []
        for name, fn in systems:
            t0 = time.perf_counter()
            masks = fn(texts)
            rows.append({"system": name, "scores": tab_scores(golds, masks), "seconds": time.perf_counter() - t0})
        results[split] = rows
        gold_n = rows[0]["scores"]["gold_tokens"] if rows else {}
        title = ("**dev: HELD OUT** (frozen before tuning: `benchmarks/configs/tab_dev_ids.sha256`)"
                 if split == "dev" else "train (tuning allowed)")
        lines += [f"### TAB {title}: {len(docs)} documents, {gold_n.get('all', 0)} DIRECT/QUASI tokens "
                  "(" + ", ".join(f"{t} {gold_n.get(t, 0)}" for t in TAB_TYPES) + ")", "", *tab_table(rows), ""]
    return lines, results


# -- over-replacement on text without personal data --------------------------------------------
def _all_caps_short(s: str) -> bool:
    """An all-caps token of at most 4 letters ("RNA", "RT", "MDS")."""
    s = s.strip()
    return 1 <= len(s) <= 4 and s.isalpha() and s.isupper()


def over_replacement(texts: Sequence[str], spans: Sequence[Sequence[Any]], top: int = 20) -> dict[str, Any]:
    """Share of documents and word tokens changed, the most replaced strings, all-caps short
    spans and spans the keyed second pass added (detector ``keyed-index``)."""
    changed_docs = changed_tok = n_tok = 0
    strings: Counter[str] = Counter()
    caps = propagated = propagated_caps = n_spans = 0
    for t, sp in zip(texts, spans, strict=True):
        toks = word_tokens(t)
        mask = covered(toks, [(s.start, s.end) for s in sp])
        n_tok += len(toks)
        changed_tok += sum(mask)
        changed_docs += bool(sp)
        for s in sp:
            frag = t[s.start:s.end]
            n_spans += 1
            strings[f"{frag} ({s.label})"] += 1
            short = _all_caps_short(frag)
            caps += short
            if getattr(s, "detector", "") == "keyed-index":
                propagated += 1
                propagated_caps += short
    return {"documents": len(texts), "documents_changed": changed_docs,
            "share_documents_changed": changed_docs / len(texts) if texts else float("nan"),
            "tokens": n_tok, "tokens_changed": changed_tok,
            "share_tokens_changed": changed_tok / n_tok if n_tok else float("nan"),
            "spans": n_spans, "all_caps_le4_spans": caps, "propagated_spans": propagated,
            "propagated_all_caps_le4_spans": propagated_caps, "top_replaced": strings.most_common(top)}


def load_scifact(data: Path, n: int) -> list[str]:
    """The first ``n`` SciFact documents in file order, ``title + " " + text`` (as the library's
    BEIR loader and the benchmarks ingest them)."""
    out = []
    with (data / "retrieval" / "scifact" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if len(out) >= n:
                break
            if line.strip():
                d = json.loads(line)
                out.append(f"{d.get('title', '')} {d['text']}".strip())
    return out


def scifact_section(data: Path, concepts: Sequence[str], threshold: float, n: int
                    ) -> tuple[list[str], dict[str, Any]]:
    texts = load_scifact(data, n)
    sanitizers, notes = concept_sanitizers(concepts, threshold)
    lines = [f"- {x}" for x in notes] + ([""] if notes else [])
    results: dict[str, Any] = {"notes": notes}
    for c, s in sanitizers:
        r = over_replacement(texts, s.document_spans(texts))
        results[c] = r
        lines += [f"### Sanitizer({c!r}) on the first {len(texts)} SciFact documents, one batch", "",
                  f"- documents changed: {r['documents_changed']} / {r['documents']} "
                  f"({100 * r['share_documents_changed']:.1f} %)",
                  f"- word tokens changed: {r['tokens_changed']} / {r['tokens']} "
                  f"({100 * r['share_tokens_changed']:.2f} %)",
                  f"- replaced spans: {r['spans']}; all-caps tokens of ≤ 4 letters among them: "
                  f"{r['all_caps_le4_spans']}; added by the keyed second pass: {r['propagated_spans']} "
                  f"(all-caps ≤ 4 letters: {r['propagated_all_caps_le4_spans']})", "",
                  "| replaced string (label) | count |", "|---|---|",
                  *[f"| {s_.replace('|', '/')} | {k} |" for s_, k in r["top_replaced"]], ""]
    return lines, results

TAB_NOTE = ("Word tokens (``\\w+``). Gold: tokens inside a mention the annotator marked DIRECT or QUASI "
            "identifier, by the mention's `entity_type`. Recall: share of gold tokens the system masks. Precision: "
            "share of masked tokens inside a DIRECT/QUASI mention (NO_MASK mentions and unannotated text count "
            "against it). A token is masked when a span the system replaces overlaps it. The library's spans are "
            "those `apply` replaces with the whole split as one batch (`Sanitizer.document_spans`: detection plus "
            "the keyed second pass). presidio: `AnalyzerEngine` defaults (every recognizer, every entity, threshold "
            "0) on spaCy small. spaCy: every entity of any label. Column s: seconds for the split.")
SCIFACT_NOTE = ("Documents are `title + \" \" + text` in file order, ingested as one batch "
                "(`Sanitizer.document_spans`, what `apply` replaces). A document is changed when one span is replaced; "
                "a token is changed when a replaced span overlaps it. \"keyed second pass\" = spans found only by "
                "the index of entities detected elsewhere in the batch (detector `keyed-index`).")


def _write(out: str | None, header: list[str], lines: list[str], results: dict[str, Any]) -> None:
    text = "\n".join(header + lines)
    print(text)
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", "utf-8")
        path.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str) + "\n")


def _command() -> str:
    return ".venv/bin/python benchmarks/detection.py " + " ".join(sys.argv[1:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--sections", default="synthetic",
                   help="comma-separated: synthetic (presidio's synthetic set + Pri-DDXPlus), tab, scifact")
    p.add_argument("--concepts", default="PII", help="Sanitizer concept presets for tab/scifact, e.g. PII,PHI,quasi "
                   "(a preset the installed code refuses is skipped with a note)")
    p.add_argument("--halves", default="tune,held-out")
    p.add_argument("--threshold", type=float, default=None, help="score threshold (default: the Sanitizer's)")
    p.add_argument("--ddx", type=int, default=1000, help="Pri-DDXPlus cases (0 = skip)")
    p.add_argument("--scifact", type=int, default=300, help="SciFact documents for the over-replacement section")
    p.add_argument("--limit", type=int, default=None, help="quick run: at most this many documents per TAB split, "
                   "SciFact documents, synthetic sentences per half and Pri-DDXPlus cases")
    p.add_argument("--out", default=None, help="report (.md; a .json with the numbers is written beside it)")
    args = p.parse_args()
    data = Path(args.data)
    sections = args.sections.split(",")
    unknown = set(sections) - {"synthetic", "tab", "scifact"}
    if unknown:
        p.error(f"unknown sections {sorted(unknown)}")
    needs = {"synthetic": data / "pii" / "synth_dataset_v2.json", "tab": data / "pii" / "tab" / "tab_train_dev.jsonl",
             "scifact": data / "retrieval" / "scifact" / "corpus.jsonl"}
    for sec in sections:
        if not needs[sec].exists():
            print(f"no data at {needs[sec]} (../shared/data)", file=sys.stderr)
            return 2
    threshold = args.threshold if args.threshold is not None else Sanitizer.__init__.__kwdefaults__["score_threshold"]
    concepts = [c for c in args.concepts.split(",") if c]
    t0 = time.time()
    lines: list[str] = []
    results: dict[str, Any] = {"command": _command(), "threshold": threshold}
    if "synthetic" in sections:
        more, res = pii_section(data, args.halves.split(","), threshold, args.limit)
        lines += more
        results.update(res)
        if args.ddx:
            more, res = ddx_section(data, min(args.ddx, args.limit or args.ddx))
            lines += more
            results.update(res)
    if "tab" in sections:
        more, res = tab_section(data, concepts, threshold, args.limit)
        lines += ["## TAB: real court judgments (ECHR), human annotations", "", TAB_NOTE, "", *more]
        results["tab"] = res
    if "scifact" in sections:
        n = min(args.scifact, args.limit or args.scifact)
        more, res = scifact_section(data, concepts, threshold, n)
        lines += ["## Over-replacement on SciFact (scientific abstracts, no personal data)", "", SCIFACT_NOTE, "",
                  *more]
        results["scifact"] = res
    load = os.getloadavg()
    header = ["# Text-stage detection: quality and cost", "",
              f"Command: `{_command()}`; score threshold {threshold}; wall {time.time() - t0:.0f} s; load average "
              f"at the end {load[0]:.1f} (shared 2-core machine: timings are noisy).", ""]
    if "synthetic" in sections:
        header += ["Token-level precision / recall / F1 per label (GPE and STREET_ADDRESS are LOCATION). "
                   f"Target: ensemble recall ≥ 0.85 at precision ≥ 0.8 on {', '.join(TARGET)}, held-out half.", ""]
    _write(args.out, header, lines, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
