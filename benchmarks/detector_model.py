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

from _shared import model_sanitizer, score_synthetic, score_tab

_TOKEN = re.compile(r"\w+")
STAGES = {"rules": {"detector": "rules"}, "model": {"detector": "model"}}  # both named: the default is "model"


_TAGGER: list[str] = []


def sanitizer(kind: str) -> Any:
    from private_vectors.text import Sanitizer

    if kind == "model" and _TAGGER:
        return model_sanitizer("PII", _TAGGER[0], timeout=None)
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
    p.add_argument("--tagger", default=None, help="stage model: the learned tagger from this weight folder "
                   "(written by scripts/train_tagger.py) instead of the shipped one")
    p.add_argument("--weights", default=None, help="compare weight folders ('shipped': the package's) on every "
                   "quality row (see compare_weights); writes one table")
    p.add_argument("--parts", default=",".join(PARTS), help="--weights: which parts to run")
    p.add_argument("--sources", default="../.mirror", help="--weights: the mirrors of WNUT-17 and the BTC")
    p.add_argument("--limit", type=int, default=None, help="--weights: smoke run, the first documents of each part")
    p.add_argument("--reuse", default=None, help="--weights: JSON files of earlier --weights runs at this commit "
                   "with the same src/ tree, whose rows (same folder, same weights) are taken as they are")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.weights:
        return compare_weights(args)
    if args.tagger:
        _TAGGER[:] = [args.tagger]
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
    _write(args.out, text, results)
    return 0


def _write(out: str | None, text: str, results: dict[str, Any]) -> None:
    """The markdown table at ``out`` and the results beside it as ``.json`` (nothing if ``out`` is None)."""
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        path.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", "utf-8")


# -- weight folders side by side ---------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
EVASION = ("lower_case,common_lower_case,possessive,common_possessive,initial,common_initial,hashtag,"
           "common_hashtag,reopened_surname")
PARTS = ("btc", "evasion", "real", "stage")


def _child(argv: list[str], out: Path | None = None) -> dict[str, Any]:
    """Run a script of this checkout with this interpreter; its JSON (``out`` with suffix .json, or
    its last output line)."""
    import subprocess

    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv[:1])} failed:\n{done.stderr[-3000:]}")
    if out is not None:
        return json.loads(out.with_suffix(".json").read_text("utf-8"))
    return json.loads(done.stdout.strip().splitlines()[-1])


def weights_row(folder: str, parts: set[str], data: str, sources: str, work: Path,
                limit: int | None = None) -> dict[str, Any]:
    """Every quality row of one weight folder (``"shipped"``: the package's), each part a child
    process: BTC dev token scores of the tagger alone (``scripts/train_tagger.py --evaluate``), the
    evasion rows (``evasion.py``), CoNLL validation second half and WNUT-17 dev (``real_text.py``),
    TAB dev, synthetic held-out and SciFact 0-300 (this script, stage ``model``)."""
    from private_vectors.text_model import TaggerModel

    tagger = [] if folder == "shipped" else ["--tagger", folder]
    cfg = TaggerModel(None if folder == "shipped" else folder).config  # sha256-checked here
    row: dict[str, Any] = {"folder": folder, "weights_sha256": cfg["weights_sha256"],
                           "layers": cfg["architecture"]["layers"], "seconds": {}}
    tag = cfg["weights_sha256"][:12]
    steps = {
        "btc": (["scripts/train_tagger.py", "--evaluate", folder, "--sources", sources], None),
        "evasion": (["benchmarks/evasion.py", "--categories", EVASION, "--systems", "library-model", *tagger,
                     "--out", str(work / f"evasion-{tag}.md")], work / f"evasion-{tag}.md"),
        "real": (["benchmarks/real_text.py", "--data", data, "--sources", sources, "--corpora", "news,wnut17-dev",
                  "--systems", "library-model", *tagger, "--out", str(work / f"real-{tag}.md")],
                 work / f"real-{tag}.md"),
        "stage": (["benchmarks/detector_model.py", "--data", data, "--stages", "model", "--skip", "cost", "--threads", "1", *tagger,
                   "--out", str(work / f"stage-{tag}.md")], work / f"stage-{tag}.md"),
    }
    if limit:  # a smoke run: the first documents of each part, TAB and the synthetic set left out
        steps["btc"][0].extend(["--eval-limit", str(limit)])
        steps["evasion"][0].extend(["--limit", str(limit)])
        steps["real"][0].extend(["--limit", str(limit)])
        steps["stage"][0].extend(["--scifact", str(limit), "--skip", "cost,tab,synthetic"])
    for part in PARTS:
        if part in parts:
            t0 = time.time()
            row[part] = _child(*steps[part])
            row["seconds"][part] = round(time.time() - t0)
            print(folder, part, row["seconds"][part], "s", flush=True)
    return row


def _metrics(row: dict[str, Any]) -> dict[str, float | None]:
    """The compared figures of one row (percent; evasion: leaks of 150), None where not run."""
    out: dict[str, float | None] = {}
    btc = row.get("btc", {}).get("btc_dev", {})
    for lab in ("PERSON", "LOCATION", "ORGANIZATION"):
        for k in ("precision", "recall"):
            out[f"BTC dev {lab} token {k}"] = 100 * btc[lab][k] if lab in btc else None
    ev = row.get("evasion", {}).get("results", {}).get("library-model", {})
    for cat in EVASION.split(","):
        out[f"evasion {cat}: leaks of 150"] = ev[cat]["leaks"] if cat in ev else None
    real = row.get("real", {})
    news = real["news"][0]["scores"] if "news" in real else None
    wnut = real["wnut17-dev"][0]["scores"] if "wnut17-dev" in real else None
    out["CoNLL validation 2nd half LOC recall"] = 100 * news["recall"]["LOC"] if news else None
    out["CoNLL validation 2nd half PER recall"] = 100 * news["recall"]["PER"] if news else None
    out["CoNLL validation 2nd half precision"] = 100 * news["precision"] if news else None
    out["WNUT-17 dev location recall"] = 100 * wnut["recall"]["location"] if wnut else None
    stage = row.get("stage", {}).get("model", {})
    tab, syn, sci = stage.get("tab_dev"), stage.get("synthetic_held_out"), stage.get("scifact")
    out["TAB dev PERSON recall"] = 100 * tab["recall"]["PERSON"] if tab else None
    out["TAB dev LOC recall"] = 100 * tab["recall"]["LOC"] if tab else None
    out["TAB dev precision"] = 100 * tab["precision"] if tab else None
    out["synthetic held-out PERSON recall"] = 100 * syn["recall"]["PERSON"] if syn else None
    out["synthetic held-out LOCATION recall"] = 100 * syn["recall"]["LOCATION"] if syn else None
    out["synthetic held-out precision"] = 100 * syn["precision"] if syn else None
    out["SciFact 0-300 documents changed (%)"] = 100 * sci["changed_documents"] if sci else None
    return out


def compare_weights(args: argparse.Namespace) -> int:
    """One table: every weight folder of ``--weights`` on every quality row, the first column the
    reference; the difference to it beside each other column."""
    import subprocess
    import tempfile

    folders = [w for w in args.weights.split(",") if w]
    parts = set(filter(None, args.parts.split(",")))
    if not folders or parts - set(PARTS):
        raise SystemExit(f"--weights: at least one folder; --parts: some of {list(PARTS)}")
    command = "nice -n 10 .venv/bin/python benchmarks/detector_model.py " + " ".join(sys.argv[1:])
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    src = subprocess.run(["git", "rev-parse", "HEAD:src"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True, text=True).stdout:
        src += "+uncommitted"
    earlier = {}
    for path in filter(None, (args.reuse or "").split(",")):  # rows of earlier runs at this commit
        done = json.loads(Path(path).read_text("utf-8"))
        if done["src_tree"] != src or src.endswith("+uncommitted"):
            raise SystemExit(f"--reuse {path}: measured with another src/ than this one ({done['src_tree']}, {src})")
        for r in done["rows"]:  # a part is taken from the first file that holds it
            held = earlier.setdefault((r["folder"], r["weights_sha256"]), {"seconds": {}, "measured_by": {}})
            new = [k for k in r["seconds"] if k not in held["seconds"]]
            held.update({k: v for k, v in r.items() if k in new or k in ("folder", "weights_sha256", "layers")})
            held["seconds"].update({k: r["seconds"][k] for k in new})
            held["measured_by"].update({k: r.get("measured_by", {}).get(k, done["command"]) for k in new})
    t0 = time.time()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in folders:
            from private_vectors.text_model import TaggerModel

            sha = TaggerModel(None if f == "shipped" else f).config["weights_sha256"]
            old = earlier.get((f, sha), {"seconds": {}, "measured_by": {}})
            missing = parts - set(old["seconds"])
            row = weights_row(f, missing, args.data, args.sources, Path(tmp), args.limit) if missing else {}
            row["measured_by"] = {k: command for k in missing}
            for k, v in old.items():  # the parts measured earlier, as they were
                if k in ("seconds", "measured_by"):
                    row.setdefault(k, {}).update(v)
                elif k not in row:
                    row[k] = v
            rows.append(row)
    results = {"command": command, "commit": head.strip(), "src_tree": src, "minutes": round((time.time() - t0) / 60, 1),
               "rows": rows}
    text = weights_report(results)
    print(text)
    _write(args.out, text, results)
    return 0


def _label(row: dict[str, Any]) -> str:
    name = "shipped" if row["folder"] == "shipped" else Path(row["folder"]).name
    return f"{name} ({row['layers']} layers, {row['weights_sha256'][:8]})"


def weights_report(r: dict[str, Any]) -> str:
    rows = r["rows"]
    metrics = [_metrics(x) for x in rows]
    lines = ["# The learned tagger's weights side by side", "",
             f"Command: `{r['command']}` (commit {r['commit']}, {r['minutes']} min). Each column a weight folder "
             "read through the text stage as `detector=\"model\"` reads the shipped one (a `TaggerRecognizer` "
             "of that folder, registered by name); the first column is the reference, Δ the difference to it. "
             "BTC dev: the tagger alone, word-token precision and recall per label (threshold 0, as "
             "`scripts/train_tagger.py` prints); every other row: `Sanitizer(\"PII\", detector=\"model\")` "
             "with that tagger (evasion: leaks of 150 generated names, fewer is better; `benchmarks/evasion.py`; "
             "news and WNUT-17: `benchmarks/real_text.py`; TAB, synthetic and SciFact: this script).", "",
             "| row | " + " | ".join(_label(x) + (" Δ" if i else "") for i, x in enumerate(rows)) + " |",
             "|---|" + "---|" * len(rows)]
    for key in metrics[0]:
        if all(m[key] is None for m in metrics):
            continue
        ref = metrics[0][key]
        cells = []
        for i, m in enumerate(metrics):
            v = m[key]
            if v is None:
                cells.append("–")
            elif i and ref is not None:
                cells.append(f"{v:.1f} ({v - ref:+.1f})" if "leaks" not in key else f"{v:.0f} ({v - ref:+.0f})")
            else:
                cells.append(f"{v:.1f}" if "leaks" not in key else f"{v:.0f}")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    runs = list(dict.fromkeys(c for x in rows for c in x.get("measured_by", {}).values() if c != r["command"]))
    if runs:
        lines += ["", "Parts measured by earlier runs with the same `src/` (`--reuse`), by run: "
                  + "; ".join(f"{_label(x)}: " + ", ".join(f"{k} {runs.index(c) + 1}" for k, c in
                                                          x["measured_by"].items() if c in runs)
                              for x in rows if set(x.get("measured_by", {}).values()) & set(runs)) + ". Runs:", ""]
        lines += [f"{i}. `{c}`" for i, c in enumerate(runs, 1)]
    lines += ["", "Seconds per part: " + "; ".join(f"{_label(x)}: " + ", ".join(f"{k} {v}" for k, v in
                                                     x["seconds"].items()) for x in rows) + "."]
    return "\n".join(lines) + "\n"


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
