"""Ingest cost of the text stage: (detection + encoding + Laplace noise) vs encoding alone, same model.

Long documents: SciFact abstracts (title + text, ~1.5k characters). Short documents: the
synth_dataset_v2 sentences (presidio-research, one or two sentences each). With ``--judgments``:
TAB's dev court judgments (~3.8k characters), all in one batch under the default time limit. For each chunk of
documents every side runs back to back, the order rotating from chunk to chunk (so load from
other processes on a shared machine falls on all alike): private = ``Sanitizer("PII", detector=...).apply`` then
``encoder.encode`` then ``LaplaceMechanism(epsilon=10).perturb``; plain = ``encoder.encode``.
Same encoder object (the packaged all-MiniLM-L6-v2), same batch size. Ratio = plain time /
private time = private throughput as a fraction of plain throughput. ``--stages rules,model`` runs
the rule-based stage and the one with the learned tagger (``detector="model"``) in the same run;
``model-no-ner`` is ``detector="model"`` with presidio's spaCy pipeline reduced to its tokenizer
(no entity recognizer: presidio's pattern recognizers and its context words still read the tokens),
an experiment set on the sanitizer's instance here, not a library option. With ``--store``,
``model-onnx`` and ``model-int8`` are ``detector="model"`` with the tagger's network run by ONNX
Runtime instead of torch (fp32; dynamic int8 but the attention products and the feed-forward
down-projection, the variant of ``benchmarks/tagger_onnx.py`` that keeps most spans), also set on the
instance (they need ``onnx``, which the library does not install).

    nice -n 10 .venv/bin/python benchmarks/text_ingest.py --data ../shared/data --stages rules,model \\
        --out benchmarks/results/text_ingest.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class _Timed:
    """Seconds ``owner.<method>`` took, summed (a recognizer's ``spans``, a sanitizer's ``apply``);
    set on the instance: the library is unchanged."""

    def __init__(self, owner, method: str = "spans") -> None:
        self.seconds = 0.0
        self._call = getattr(owner, method)
        setattr(owner, method, self)

    def __call__(self, texts):
        t0 = time.perf_counter()
        try:
            return self._call(texts)
        finally:
            self.seconds += time.perf_counter() - t0


def timers(sanitizer) -> dict[str, _Timed]:
    """Per-recognizer timers on a sanitizer's detectors (the tagger and presidio apart, the others together)."""
    return {d.name: _Timed(d) for d in sanitizer.detectors}


def without_ner(sanitizer) -> None:
    """Give the sanitizer's presidio recognizer an analyzer whose spaCy pipeline only tokenizes
    (presidio's public NlpEngineProvider / AnalyzerEngine; the e-mail recognizer swapped for the
    library's offline one, as the library does)."""
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    from private_vectors.text.recognizers import presidio as pr

    target, _ = pr.resolve_spacy_model(None)
    engine = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": target}]}).create_engine()
    for pipe in list(engine.nlp["en"].pipe_names):
        engine.nlp["en"].disable_pipe(pipe)
    analyzer = AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])
    analyzer.registry.remove_recognizer("EmailRecognizer")
    analyzer.registry.add_recognizer(pr._offline_email_recognizer())
    (det,) = [d for d in sanitizer.detectors if d.name == "presidio"]
    det._loaded = analyzer  # (the recognizer loads its analyzer on first use: this one instead)


def on_onnx_runtime(sanitizer, *, quantise: bool) -> None:
    """Run the sanitizer's tagger network on ONNX Runtime (see ``benchmarks/tagger_onnx.py``)."""
    import tempfile

    import torch
    from _shared import ATTENTION_PRODUCTS, FFN_DOWN, OrtNet, export, int8, session

    (det,) = [d for d in sanitizer.detectors if d.name == "tagger"]
    model = det._tagger()
    graph = export(model._net)
    if quantise:
        with tempfile.TemporaryDirectory() as tmp:
            graph = int8(graph, ATTENTION_PRODUCTS + FFN_DOWN, Path(tmp))
    model._net = OrtNet(session(graph, torch.get_num_threads()), model._net.head)


def run(name: str, docs: list[str], chunk: int, sanitizers: dict, encoder, mech, clocks: dict) -> list[dict]:
    """One row per text stage: each chunk runs plain and every private side back to back, the
    order rotating from chunk to chunk."""
    kinds = list(sanitizers)
    start = {k: {d: c.seconds for d, c in clocks[k].items()} for k in kinds}
    priv_t: dict[str, list[float]] = {k: [] for k in kinds}
    det_t: dict[str, list[float]] = {k: [] for k in kinds}
    plain_t: list[float] = []
    for k, i in enumerate(range(0, len(docs), chunk)):
        part = docs[i:i + chunk]

        def private(kind: str, part=part) -> None:
            t0 = time.perf_counter()
            clean = sanitizers[kind].apply(part)
            t1 = time.perf_counter()
            mech.perturb(encoder.encode(clean))
            priv_t[kind].append(time.perf_counter() - t0)
            det_t[kind].append(t1 - t0)

        def plain(part=part) -> None:
            t0 = time.perf_counter()
            encoder.encode(part)
            plain_t.append(time.perf_counter() - t0)

        sides = [plain, *(lambda kind=kind: private(kind) for kind in kinds)]
        for j in range(len(sides)):
            sides[(j + k) % len(sides)]()
    n = len(docs)

    def per(kind: str, pick) -> float:
        return 1000 * sum(c.seconds - start[kind][d] for d, c in clocks[kind].items() if pick(d)) / n

    return [{"set": name, "stage": kind,
             "tagger_ms": per(kind, lambda d: d.startswith("tagger")),
             "presidio_ms": per(kind, lambda d: d == "presidio"), "docs": n, "mean_chars": statistics.mean(len(d) for d in docs),
             "private_docs_per_s": n / sum(priv_t[kind]), "plain_docs_per_s": n / sum(plain_t),
             "detect_ms_per_doc": 1000 * sum(det_t[kind]) / n, "encode_ms_per_doc": 1000 * sum(plain_t) / n,
             "ratio": sum(plain_t) / sum(priv_t[kind]),
             "ratio_median_chunk": statistics.median(q / p for p, q in zip(priv_t[kind], plain_t, strict=True))}
            for kind in kinds]


def run_stores(name: str, docs: list[str], chunk: int, stores: dict, detect: dict, encoder,
               clocks: dict) -> list[dict]:
    """One row per text stage: each chunk is added to a plain chromadb collection
    (``SentenceTransformerEmbeddingFunction``), to each protected one (``add_documents`` with
    ``PrivateEmbedding(concept="PII", eps=10, detector=...)``) and encoded by the encoder alone,
    back to back, the order rotating from chunk to chunk."""
    kinds = [k for k in stores if k != "plain"]
    start = {k: {d: c.seconds for d, c in clocks[k].items()} for k in kinds}
    times: dict[str, list[float]] = {k: [] for k in [*stores, "encode"]}
    det0 = {k: detect[k].seconds for k in kinds}
    for k, i in enumerate(range(0, len(docs), chunk)):
        part, ids = docs[i:i + chunk], [f"{name[:4]}{j}" for j in range(i, i + len(docs[i:i + chunk]))]

        def add(kind: str, part=part, ids=ids) -> None:
            t0 = time.perf_counter()
            stores[kind](ids, part)
            times[kind].append(time.perf_counter() - t0)

        def enc(part=part) -> None:
            t0 = time.perf_counter()
            encoder.encode(part)
            times["encode"].append(time.perf_counter() - t0)

        sides = [enc, *(lambda kind=kind: add(kind) for kind in stores)]
        for j in range(len(sides)):
            sides[(j + k) % len(sides)]()
    n = len(docs)

    def per(kind: str, pick) -> float:
        return 1000 * sum(c.seconds - start[kind][d] for d, c in clocks[kind].items() if pick(d)) / n

    plain, encode = sum(times["plain"]), sum(times["encode"])
    return [{"set": name, "stage": kind, "docs": n, "mean_chars": statistics.mean(len(d) for d in docs),
             "plain_store_ms": 1000 * plain / n, "private_store_ms": 1000 * sum(times[kind]) / n,
             "encode_ms": 1000 * encode / n, "detect_ms": 1000 * (detect[kind].seconds - det0[kind]) / n,
             "tagger_ms": per(kind, lambda d: d.startswith("tagger")),
             "presidio_ms": per(kind, lambda d: d == "presidio"),
             "ratio": plain / sum(times[kind]),
             "ratio_median_chunk": statistics.median(q / p for p, q in zip(times[kind], times["plain"], strict=True))}
            for kind in kinds]


def store_sides(kinds: list[str]):
    """(adders by side, the detection clocks, the per-recognizer clocks) for ``--store``: the plain
    chromadb collection and one protected collection per text stage, in one in-memory client."""
    import chromadb
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    from private_vectors import PrivateEmbedding
    from private_vectors.chroma import add_documents, create_collection
    from private_vectors.encoders.sentence_transformers import default_model_path

    client = chromadb.EphemeralClient()
    plain_ef = SentenceTransformerEmbeddingFunction(model_name=str(default_model_path()), device="cpu")
    # (chroma's function encodes with sentence-transformers' default batch of 32)
    plain = client.create_collection("plain", embedding_function=plain_ef)
    stores = {"plain": lambda ids, docs: plain.add(ids=ids, documents=docs)}
    detect, clocks = {}, {}
    for kind in kinds:
        ef = PrivateEmbedding(concept="PII", eps=10, detector=kind.split("-")[0])
        if kind in ("model-onnx", "model-int8"):
            on_onnx_runtime(ef.sanitizer, quantise=kind == "model-int8")
        col = create_collection(client, f"private-{kind}", ef)
        stores[kind] = lambda ids, docs, col=col: add_documents(col, ids=ids, documents=docs)
        clocks[kind] = timers(ef.sanitizer)
        detect[kind] = _Timed(ef.sanitizer, "apply")  # detection + replacement of the add
    warm = [f"Warm-up sentence {i} about Maria Lopez in Madrid." for i in range(16)]
    for kind, add in stores.items():
        add([f"warm-{kind}-{i}" for i in range(len(warm))], warm)
    return stores, detect, clocks


def store_table(rows: list[dict]) -> list[str]:
    lines = ["| documents | detector | n | mean chars | plain store ms/doc | protected store ms/doc | "
             "**protected / plain throughput** | median over chunks | detection ms/doc | of which tagger | "
             "of which presidio | encoding alone ms/doc | detection / encoding |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['stage']} | {r['docs']} | {r['mean_chars']:.0f} | {r['plain_store_ms']:.1f} | "
                     f"{r['private_store_ms']:.1f} | **{r['ratio']:.2f}×** | {r['ratio_median_chunk']:.2f}× | "
                     f"{r['detect_ms']:.1f} | {r['tagger_ms']:.1f} | {r['presidio_ms']:.1f} | {r['encode_ms']:.1f} | "
                     f"{r['detect_ms'] / r['encode_ms']:.2f}× |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--long", type=int, default=400, help="SciFact abstracts")
    ap.add_argument("--short", type=int, default=1000, help="short sentences")
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--judgments", type=int, default=0,
                    help="TAB dev court judgments (a third row, in one chunk; 0: none)")
    ap.add_argument("--stages", default="rules",
                    help="text stages beside plain: rules, model, model-no-ner; with --store rules, model, "
                         "model-onnx, model-int8 (comma-separated)")
    ap.add_argument("--store", action="store_true",
                    help="compare stores instead: a plain chromadb collection with SentenceTransformerEmbeddingFunction "
                         "against add_documents with PrivateEmbedding(concept='PII', eps=10, detector=each stage)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.store:
        return main_store(args)

    import torch

    from private_vectors.encoders import SentenceTransformerEncoder
    from private_vectors.eval.datasets import load_beir
    from private_vectors.mechanisms import LaplaceMechanism
    from private_vectors.text import Sanitizer

    torch.set_num_threads(max(1, (os.cpu_count() or 1)))
    data = Path(args.data)
    ds = load_beir(data / "retrieval" / "scifact")
    long_docs = list(ds.corpus.values())[: args.long]
    short_docs = [r["full_text"] for r in json.loads((data / "pii" / "synth_dataset_v2.json").read_text())][: args.short]
    t0 = time.time()
    encoder = SentenceTransformerEncoder("all-MiniLM-L6-v2", batch_size=args.batch_size, device="cpu")
    kinds = [k for k in args.stages.split(",") if k]
    if not kinds or any(k not in ("rules", "model", "model-no-ner") for k in kinds):
        ap.error(f"--stages: expected names among rules, model, model-no-ner; received {args.stages!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sanitizers = {k: Sanitizer("PII", detector=k.split("-")[0]) for k in kinds}
    if "model-no-ner" in sanitizers:
        without_ner(sanitizers["model-no-ner"])
    clocks = {k: timers(san) for k, san in sanitizers.items()}
    mech = LaplaceMechanism(epsilon=10.0, unit=1 / 384 ** 0.5)
    encoder.encode(long_docs[:16])
    for san in sanitizers.values():
        san.apply(long_docs[:16])
    setup = time.time() - t0
    load_before = os.getloadavg()
    rows = [*run("long: SciFact abstracts", long_docs, args.chunk, sanitizers, encoder, mech, clocks),
            *run("short: synth_dataset_v2 sentences", short_docs, args.chunk, sanitizers, encoder, mech, clocks)]
    if args.judgments:
        tab = [json.loads(x) for x in (data / "pii" / "tab" / "tab_train_dev.jsonl").read_text("utf-8").splitlines()]
        judgments = [d["text"] for d in tab if d["metadata"]["provenance"]["dataset_type"] == "dev"][: args.judgments]
        rows += run("judgments: TAB dev (one batch, default time limit)", judgments, len(judgments), sanitizers,
                    encoder, mech, clocks)
    load = os.getloadavg()
    lines = ["# Text-stage ingest cost", "",
             f"Command: `.venv/bin/python {' '.join(['benchmarks/text_ingest.py', *sys.argv[1:]])}` "
             f"(chunks of {args.chunk}, encoder batch {args.batch_size}, CPU, torch threads "
             f"{torch.get_num_threads()}); set-up {setup:.0f} s not timed; load average (1 min) "
             f"{load_before[0]:.1f} at the start and {load[0]:.1f} at the end on a shared 2-core machine: "
             "absolute figures are noisy, the ratios come from interleaved runs of every side on the same "
             "chunks.", "",
             "| documents | detector | n | mean chars | detection ms/doc | of which tagger | of which presidio | "
             "encoding ms/doc | private docs/s | plain docs/s | private / plain throughput | median over chunks |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['stage']} | {r['docs']} | {r['mean_chars']:.0f} | {r['detect_ms_per_doc']:.1f} | "
                     f"{r['tagger_ms']:.1f} | {r['presidio_ms']:.1f} | {r['encode_ms_per_doc']:.1f} | "
                     f"{r['private_docs_per_s']:.1f} | {r['plain_docs_per_s']:.1f} | "
                     f"**{r['ratio']:.2f}×** | {r['ratio_median_chunk']:.2f}× |")
    lines += ["", *(f"Sanitizer ({k}): `{san!r}`" for k, san in sanitizers.items()),
              "", "Private side = detection + replacement + encoding + Laplace noise (ε = 10)."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", "utf-8")
    return 0


def main_store(args) -> int:
    """``--store``: the stores side by side (see :func:`run_stores`)."""
    import torch

    from private_vectors.encoders import SentenceTransformerEncoder
    from private_vectors.eval.datasets import load_beir

    kinds = [k for k in args.stages.split(",") if k]
    if not kinds or any(k not in ("rules", "model", "model-onnx", "model-int8") for k in kinds):
        raise SystemExit("--store --stages: expected names among rules, model, model-onnx, model-int8; "
                         f"received {args.stages!r}")
    torch.set_num_threads(max(1, (os.cpu_count() or 1)))
    data = Path(args.data)
    long_docs = list(load_beir(data / "retrieval" / "scifact").corpus.values())[: args.long]
    short_docs = [r["full_text"] for r in json.loads((data / "pii" / "synth_dataset_v2.json").read_text())][: args.short]
    t0 = time.time()
    encoder = SentenceTransformerEncoder("all-MiniLM-L6-v2", batch_size=args.batch_size, device="cpu")
    encoder.encode(long_docs[:16])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stores, detect, clocks = store_sides(kinds)
        setup = time.time() - t0
        load_before = os.getloadavg()
        rows = [*run_stores("long: SciFact abstracts", long_docs, args.chunk, stores, detect, encoder, clocks),
                *run_stores("short: synth_dataset_v2 sentences", short_docs, args.chunk, stores, detect, encoder,
                            clocks)]
    load = os.getloadavg()
    lines = ["# Protected ingest against a plain chromadb store", "",
             f"Command: `nice -n 10 .venv/bin/python {' '.join(['benchmarks/text_ingest.py', *sys.argv[1:]])}` "
             f"(chunks of {args.chunk}, encoder batch {args.batch_size}, CPU, torch threads "
             f"{torch.get_num_threads()}); set-up {setup:.0f} s not timed; load average (1 min) "
             f"{load_before[0]:.1f} at the start and {load[0]:.1f} at the end on a shared 2-core machine: "
             "absolute figures are noisy, the ratios come from interleaved runs of every side on the same "
             "chunks.", "",
             "Plain: `collection.add(ids, documents)` on a chromadb collection with "
             "`SentenceTransformerEmbeddingFunction` (the packaged all-MiniLM-L6-v2, CPU). Protected: "
             "`private_vectors.chroma.add_documents` on a collection of `PrivateEmbedding(concept=\"PII\", eps=10, "
             "detector=...)` (text stage, encoding, Laplace noise, the sanitized text stored). Detection = the "
             "text stage's `apply` inside the protected add; encoding alone = the same encoder on the raw "
             "chunk.", "", *store_table(rows)]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
