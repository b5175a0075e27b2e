"""The text stage with and without the learned tagger: recall, over-replacement and cost, side by side.

Stages: ``rules`` (``Sanitizer("PII")``, today's default) and ``model``
(``Sanitizer("PII", detector="model")``: the same recognizers plus the learned tagger for names
and places). Rows:

* TAB dev (21 court judgments): token recall of DIRECT+QUASI identifiers by entity type, and
  precision (replaced tokens inside any annotation ÷ replaced tokens);
* presidio's synthetic set, the held-out half: token recall by type and precision;
* SciFact abstracts 0-300 (a corpus about no one): share of documents changed, share of tokens
  replaced, by label;
* cost: detection seconds per document on SciFact abstracts and on TAB judgments (one batch
  each, after a warm-up), and whole private ingest (``PrivateEmbedding(...).embed_documents``)
  vs plain sentence-transformers (``SentenceTransformer.encode`` of the same encoder) on the same
  SciFact abstracts and on short sentences, each ratio = plain seconds ÷ private seconds,
  measured in one run on the same cores (``--threads``).

Tuning sets are not used here (TAB train, the synthetic tuning half, SciFact 300-600 and the news
first half are where settings were chosen).

    nice -n 10 .venv/bin/python benchmarks/detector_model.py --data ../shared/data \\
        --out benchmarks/results/text/detector_model.md
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from _shared import score_synthetic, score_tab

_TOKEN = re.compile(r"\w+")
STAGES = {"rules": {}, "model": {"detector": "model"}}


def sanitizer(kind: str) -> Any:
    from private_vectors.text import Sanitizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Sanitizer("PII", timeout=None, **STAGES[kind])  # quality and cost, not the time limit


def scifact_texts(data: Path, n: int, offset: int = 0) -> list[str]:
    lines = (data / "retrieval" / "scifact" / "corpus.jsonl").read_text("utf-8").splitlines()[offset:offset + n]
    docs = [json.loads(x) for x in lines]
    return [f"{d.get('title', '')}\n{d['text']}" for d in docs]


def scifact_changed(stage: Any, texts: list[str]) -> dict[str, Any]:
    """Documents changed and tokens replaced, overall and by label."""
    found = stage.document_spans(texts)
    tokens = sum(len(_TOKEN.findall(t)) for t in texts)
    by_label: Counter[str] = Counter()
    docs_by_label: Counter[str] = Counter()
    replaced = 0
    for t, spans in zip(texts, found, strict=True):
        for lab in {s.label for s in spans}:
            docs_by_label[lab] += 1
        for m in _TOKEN.finditer(t):
            hit = next((s.label for s in spans if s.start < m.end() and m.start() < s.end), None)
            if hit:
                replaced += 1
                by_label[hit] += 1
    n = len(texts)
    return {"documents": n, "changed_documents": round(sum(bool(s) for s in found) / n, 3),
            "changed_tokens": round(replaced / max(1, tokens), 4),
            "documents_by_label": {k: round(v / n, 3) for k, v in docs_by_label.most_common()},
            "tokens_by_label": dict(by_label.most_common())}


def detection_seconds(stage: Any, texts: list[str]) -> float:
    stage.document_spans(texts[:4])  # warm-up (models loaded)
    t0 = time.perf_counter()
    stage.document_spans(texts)
    return (time.perf_counter() - t0) / len(texts)


def ingest_ratios(texts: list[str], short: list[str]) -> dict[str, Any]:
    """Plain encode seconds ÷ private ingest seconds, per stage, on abstracts and on short sentences."""
    from sentence_transformers import SentenceTransformer

    from private_vectors import PrivateEmbedding
    from private_vectors.encoders.sentence_transformers import default_model_path

    plain = SentenceTransformer(str(default_model_path()), device="cpu")
    out: dict[str, Any] = {}
    for name, docs in (("abstracts", texts), ("short", short)):
        plain.encode(docs[:4])
        t0 = time.perf_counter()
        plain.encode(docs, batch_size=32)
        base = time.perf_counter() - t0
        row: dict[str, Any] = {"documents": len(docs), "plain_seconds": round(base, 2)}
        for kind in STAGES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pe = PrivateEmbedding(concept="PII", eps=10, sanitize=sanitizer(kind))
                pe.embed_documents(docs[:4])
                t0 = time.perf_counter()
                pe.embed_documents(docs)
            took = time.perf_counter() - t0
            row[kind] = {"seconds": round(took, 2), "ratio": round(base / took, 3)}
        out[name] = row
    return out


SHORT = ("The meeting moved to Thursday afternoon.", "Please send the invoice to accounts by Friday.",
         "Our office in the north wing is closed for repairs.", "The delivery arrived two days late.",
         "Can you share the slides from the workshop?", "The printer on the second floor is out of toner.",
         "Lunch will be served in the main hall.", "The new policy starts next month.")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--scifact", type=int, default=300)
    p.add_argument("--threads", type=int, default=2, help="torch threads for every system")
    p.add_argument("--stages", default="rules,model", help="which stages to run (rules, model)")
    p.add_argument("--skip", default="", help="comma-separated parts to leave out: tab,synthetic,scifact,cost")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    skip = set(filter(None, args.skip.split(",")))
    command = "nice -n 10 .venv/bin/python benchmarks/detector_model.py " + " ".join(sys.argv[1:])
    results: dict[str, Any] = {"command": command, "threads": args.threads}
    sci = scifact_texts(data, args.scifact)
    for kind in args.stages.split(","):
        stage = sanitizer(kind)
        row: dict[str, Any] = {}
        if "tab" not in skip:
            row["tab_dev"] = score_tab(stage, "dev", data)
        if "synthetic" not in skip:
            row["synthetic_held_out"] = score_synthetic(stage, data, "held_out")
        if "scifact" not in skip:
            row["scifact"] = scifact_changed(sanitizer(kind), sci)
        if "cost" not in skip:
            tab = [json.loads(x)["text"] for x in (data / "pii" / "tab" / "tab_train_dev.jsonl").read_text(
                "utf-8").splitlines() if json.loads(x)["metadata"]["provenance"]["dataset_type"] == "dev"]
            row["seconds_per_document"] = {"scifact": round(detection_seconds(sanitizer(kind), sci[:100]), 4),
                                           "tab_dev": round(detection_seconds(sanitizer(kind), tab), 4)}
        results[kind] = row
        print(kind, json.dumps(row), flush=True)
    if "cost" not in skip:
        results["ingest"] = ingest_ratios(sci[:200], [SHORT[i % len(SHORT)] + f" Ref {i}." for i in range(400)])
        print(json.dumps(results["ingest"]), flush=True)
    text = report(results)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
        out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", "utf-8")
    return 0


def _pct(x: Any) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def report(r: dict[str, Any]) -> str:
    lines = ["# The text stage with the learned tagger (detector=\"model\") beside today's (\"rules\")", "",
             f"Command: `{r['command']}`.", ""]
    kinds = [k for k in STAGES if k in r]
    if all("tab_dev" in r[k] for k in kinds):
        labels = [k for k in r[kinds[0]]["tab_dev"]["recall"]]
        lines += ["## TAB dev (21 judgments): token recall of DIRECT+QUASI identifiers, precision", "",
                  "| stage | " + " | ".join(labels) + " | precision |", "|---|" + "---|" * (len(labels) + 1)]
        lines += [f"| {k} | " + " | ".join(_pct(r[k]["tab_dev"]["recall"].get(lab)) for lab in labels)
                  + f" | {_pct(r[k]['tab_dev']['precision'])} |" for k in kinds]
        lines.append("")
    if all("synthetic_held_out" in r[k] for k in kinds):
        labels = list(r[kinds[0]]["synthetic_held_out"]["recall"])
        lines += ["## presidio's synthetic set, held-out half: token recall, precision", "",
                  "| stage | " + " | ".join(labels) + " | precision |", "|---|" + "---|" * (len(labels) + 1)]
        lines += [f"| {k} | " + " | ".join(_pct(r[k]["synthetic_held_out"]["recall"].get(lab)) for lab in labels)
                  + f" | {_pct(r[k]['synthetic_held_out']['precision'])} |" for k in kinds]
        lines.append("")
    if all("scifact" in r[k] for k in kinds):
        lines += ["## SciFact abstracts 0-300: documents changed (by label), tokens replaced", "",
                  "| stage | documents changed | by label | tokens replaced |", "|---|---|---|---|"]
        for k in kinds:
            s = r[k]["scifact"]
            by = ", ".join(f"{lab} {_pct(v)}" for lab, v in s["documents_by_label"].items())
            lines.append(f"| {k} | {_pct(s['changed_documents'])} % | {by} | {100 * s['changed_tokens']:.2f} % |")
        lines.append("")
    if all("seconds_per_document" in r[k] for k in kinds):
        lines += [f"## Cost ({r['threads']} torch threads)", "", "| stage | detection s/doc, SciFact | "
                  "detection s/doc, TAB dev (judgments) |", "|---|---|---|"]
        lines += [f"| {k} | {r[k]['seconds_per_document']['scifact']:.3f} | "
                  f"{r[k]['seconds_per_document']['tab_dev']:.3f} |" for k in kinds]
        lines.append("")
    if "ingest" in r:
        lines += ["Whole private ingest vs plain sentence-transformers (ratio = plain seconds ÷ private seconds):", "",
                  "| documents | plain s | " + " | ".join(f"{k} s (ratio)" for k in kinds) + " |",
                  "|---|---|" + "---|" * len(kinds)]
        for name, row in r["ingest"].items():
            lines.append(f"| {name} ({row['documents']}) | {row['plain_seconds']} | "
                         + " | ".join(f"{row[k]['seconds']} ({row[k]['ratio']:.2f}×)" for k in kinds) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
