"""The learned tagger and the encoder on ONNX Runtime (fp32; int8) against torch, interleaved.

The shipped tagger's network (:class:`~private_vectors.text_model.network.BertTagger`, with the
encoder's shared layers) and the packaged encoder (:class:`~private_vectors.encoders.bert.
BertSentenceModel`: BERT + mean pooling + normalisation) are exported once with
``torch.onnx.export`` (which needs the ``onnx`` package, not a dependency of the library) and run by
``onnxruntime`` on the CPU with torch's thread count and every graph optimisation. The int8 sides are
``onnxruntime.quantization.quantize_dynamic`` of the tagger's fp32 graph (int8 weights per output channel,
activations quantised per tensor at run time), quantising every matrix product or leaving some in
fp32 (``nodes_to_exclude``): the attention products (query·key and probabilities·value, two
activations each), the feed-forward down-projection (its input is the GELU output, whose few large
values set the per-tensor scale: Bondarenko et al., "Understanding and Overcoming the Challenges of
Efficient Transformer Quantization", EMNLP 2021) and the encoder's frozen layers 0-1 with the head.
(The encoder is not quantised: its vectors must stay within 1e-4 of torch's.)

Every side reads the same chunks of documents in turn, the order rotating from chunk to chunk. Tagger
table: ms per document of ``spans`` (one pass of the network), speed-up, documents whose spans
(start, end, label) are identical to torch's, torch's spans kept and spans found, the largest
difference of a tag probability. Encoder table: ms per document of ``encode`` (batches of 32), the
largest coordinate difference and the lowest cosine to torch's vector::

    nice -n 10 .venv/bin/python benchmarks/tagger_onnx.py --data ../shared/data --long 100 --short 400 \\
        --out benchmarks/results/text/tagger_onnx.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

from _shared import ATTENTION_PRODUCTS, FFN_DOWN, FROZEN_LAYERS, OrtNet, export, int8, session

TAGGER_SIDES = {"ONNX Runtime fp32": None, "int8, every matrix product": [],
                "int8, attention products fp32": ATTENTION_PRODUCTS,
                "int8, attention products and feed-forward down-projection fp32": ATTENTION_PRODUCTS + FFN_DOWN,
                "int8 in the trained layers 2-3 only, their attention products and down-projection fp32":
                    ATTENTION_PRODUCTS + FFN_DOWN + FROZEN_LAYERS + ["/head/MatMul"]}


def rotate(docs: list[str], chunk: int, sides: dict, call) -> tuple[dict, dict]:
    """Seconds per side and the outputs per side, every side on each chunk, the order rotating."""
    names = list(sides)
    took, out = dict.fromkeys(names, 0.0), {n: [] for n in names}
    for k, i in enumerate(range(0, len(docs), chunk)):
        part = docs[i:i + chunk]
        for name in names[k % len(names):] + names[:k % len(names)]:
            t0 = time.perf_counter()
            out[name] += call(sides[name], part)
            took[name] += time.perf_counter() - t0
    return took, out


def tagger_rows(name: str, docs: list[str], sides: dict, chunk: int) -> list[dict]:
    import numpy as np

    took, out = rotate(docs, chunk, sides, lambda m, part: m.spans(part))
    probs = {k: m.token_probabilities(docs) for k, m in sides.items()}  # (not timed)
    ref = [[(s.start, s.end, s.label) for s in d] for d in out["torch"]]
    rows = []
    for side, spans in out.items():
        got = [[(s.start, s.end, s.label) for s in d] for d in spans]
        worst = max((float(np.abs(a[2] - b[2]).max()) for a, b in zip(probs["torch"], probs[side], strict=True)
                     if len(a[2])), default=0.0)
        rows.append({"set": name, "side": side, "n": len(docs), "ms": 1000 * took[side] / len(docs),
                     "speedup": took["torch"] / took[side], "same": sum(a == b for a, b in zip(ref, got, strict=True)),
                     "kept": sum(len(set(a) & set(b)) for a, b in zip(ref, got, strict=True)),
                     "ref": sum(map(len, ref)), "found": sum(map(len, got)), "worst": worst})
    return rows


def encoder_rows(name: str, docs: list[str], sides: dict, chunk: int) -> list[dict]:
    import numpy as np

    took, out = rotate(docs, chunk, sides, lambda m, part: list(m.encode(part, 32)))
    ref = np.stack(out["torch"])
    rows = []
    for side, vecs in out.items():
        v = np.stack(vecs)
        cos = (v * ref).sum(1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(ref, axis=1))
        rows.append({"set": name, "side": side, "n": len(docs), "ms": 1000 * took[side] / len(docs),
                     "speedup": took["torch"] / took[side], "worst": float(np.abs(v - ref).max()),
                     "cos": float(cos.min())})
    return rows


def build_sides(threads: int, folder: Path) -> tuple[dict, dict]:
    """(tagger sides, encoder sides): torch and each ONNX Runtime variant."""
    import torch

    from private_vectors.encoders.bert import BertSentenceModel
    from private_vectors.encoders.sentence_transformers import default_model_path
    from private_vectors.text_model import TaggerModel

    taggers = {"torch": TaggerModel(threshold=0.3)}
    graph = export(taggers["torch"]._net)
    for side, exclude in TAGGER_SIDES.items():
        taggers[side] = TaggerModel(threshold=0.3)
        g = graph if exclude is None else int8(graph, exclude, folder)
        taggers[side]._net = OrtNet(session(g, threads), taggers["torch"]._net.head)
    torch_encoder = BertSentenceModel(default_model_path())

    class Forward(torch.nn.Module):
        def forward(self, ids, mask):
            return torch_encoder.forward(ids, mask)

    encoders = {"torch": torch_encoder}
    graph = export(Forward())
    encoders["ONNX Runtime fp32"] = BertSentenceModel(default_model_path())
    encoders["ONNX Runtime fp32"].forward = OrtNet(session(graph, threads))
    return taggers, encoders


def render(args, tag: list[dict], enc: list[dict], before, after, versions: str) -> str:
    lines = ["# The learned tagger and the encoder on ONNX Runtime against torch", "",
             f"Command: `nice -n 10 .venv/bin/python {' '.join(['benchmarks/tagger_onnx.py', *sys.argv[1:]])}` "
             f"({versions}, ORT_ENABLE_ALL, {args.threads} threads, chunks of {args.chunk}, sides in rotating order; "
             f"load average (1 min) {before[0]:.1f} at the start and {after[0]:.1f} at the end on a shared 2-core "
             "machine). Spans at threshold 0.3 (below every threshold the text stage applies).", "",
             "## Tagger", "",
             "| documents | side | n | ms/doc | speed-up | documents with identical spans | torch's spans kept | "
             "spans found | largest tag-probability difference |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['set']} | {r['side']} | {r['n']} | {r['ms']:.1f} | {r['speedup']:.2f}× | {r['same']} of {r['n']} | "
              f"{r['kept']} of {r['ref']} | {r['found']} | {r['worst']:.1e} |" for r in tag]
    lines += ["", "## Encoder (batches of 32)", "",
              "| documents | side | n | ms/doc | speed-up | largest coordinate difference | lowest cosine to torch |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['set']} | {r['side']} | {r['n']} | {r['ms']:.1f} | {r['speedup']:.2f}× | {r['worst']:.1e} | "
              f"{r['cos']:.6f} |" for r in enc]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--long", type=int, default=100, help="SciFact abstracts (from document 300: a tuning part)")
    ap.add_argument("--short", type=int, default=400)
    ap.add_argument("--chunk", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import tempfile

    import onnx
    import onnxruntime
    import torch

    from private_vectors.eval.datasets import load_beir

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    long_docs = list(load_beir(data / "retrieval" / "scifact").corpus.values())[300:300 + args.long]
    short_docs = [r["full_text"] for r in json.loads((data / "pii" / "synth_dataset_v2.json").read_text())][: args.short]
    with tempfile.TemporaryDirectory() as tmp:
        taggers, encoders = build_sides(args.threads, Path(tmp))
    for m in (*taggers.values(), *encoders.values()):  # warm-up
        m.spans(short_docs[:8]) if hasattr(m, "spans") else m.encode(short_docs[:8], 32)
    before = os.getloadavg()
    tag = [*tagger_rows("SciFact abstracts", long_docs, taggers, args.chunk),
           *tagger_rows("synth_dataset_v2 sentences", short_docs, taggers, args.chunk)]
    enc = [*encoder_rows("SciFact abstracts", long_docs, encoders, args.chunk),
           *encoder_rows("synth_dataset_v2 sentences", short_docs, encoders, args.chunk)]
    versions = f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, onnx {onnx.__version__}"
    text = render(args, tag, enc, before, os.getloadavg(), versions)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
