"""The learned tagger on ONNX Runtime (fp32, every graph optimisation) against torch, interleaved.

The shipped tagger's network (:class:`~private_vectors.text_model.network.BertTagger`, with the
encoder's shared layers) is exported once with ``torch.onnx.export`` (which needs the ``onnx``
package, not a dependency of the library) and run by ``onnxruntime`` on the CPU with torch's
thread count. Both sides read the same chunks of documents in turn, the order alternating from
chunk to chunk; the table gives ms per document (``spans`` + ``token_probabilities``, i.e. two
passes of the network), the speed-up, how many documents get identical spans (start, end, label)
and the largest difference of a tag probability::

    nice -n 10 .venv/bin/python benchmarks/tagger_onnx.py --data ../shared/data --long 60 --short 200 \\
        --out benchmarks/results/text/tagger_onnx.md
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import warnings
from pathlib import Path


def export_session(net, threads: int):
    """An ONNX Runtime session of ``net`` (dynamic batch and width), exported in memory."""
    import onnxruntime as ort
    import torch

    ids = torch.randint(1000, 20000, (4, 130))
    mask = torch.ones_like(ids)
    mask[1, 100:] = 0  # (a padded row: the masked attention path is the one traced)
    buf = io.BytesIO()
    torch.onnx.export(net, (ids, mask), buf, input_names=["ids", "mask"], output_names=["logits"],
                      dynamic_axes={n: {0: "b", 1: "w"} for n in ("ids", "mask", "logits")},
                      opset_version=17, dynamo=False)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = threads
    return ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])


class OrtNet:
    """Stands in for the torch network inside a ``TaggerModel`` (set on the instance)."""

    def __init__(self, session, head) -> None:
        self.session, self.head = session, head

    def __call__(self, ids, mask):
        import torch

        return torch.from_numpy(self.session.run(None, {"ids": ids.numpy(), "mask": mask.numpy()})[0])


def compare(name: str, docs: list[str], ref, alt, chunk: int) -> dict:
    import numpy as np

    took = {0: 0.0, 1: 0.0}
    same = worst = 0.0
    for k, i in enumerate(range(0, len(docs), chunk)):
        part, got = docs[i:i + chunk], {}
        for side in ((0, 1) if k % 2 == 0 else (1, 0)):
            model = ref if side == 0 else alt
            t0 = time.perf_counter()
            got[side] = (model.spans(part), model.token_probabilities(part))
            took[side] += time.perf_counter() - t0
        for a, b in zip(got[0][0], got[1][0], strict=True):
            same += [(s.start, s.end, s.label) for s in a] == [(s.start, s.end, s.label) for s in b]
        for (_, _, pa), (_, _, pb) in zip(got[0][1], got[1][1], strict=True):
            if len(pa):
                worst = max(worst, float(np.abs(pa - pb).max()))
    return {"set": name, "n": len(docs), "torch_ms": 1000 * took[0] / len(docs), "ort_ms": 1000 * took[1] / len(docs),
            "speedup": took[0] / took[1], "same": int(same), "worst": worst}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--long", type=int, default=60)
    ap.add_argument("--short", type=int, default=200)
    ap.add_argument("--chunk", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import onnxruntime
    import torch

    from private_vectors.eval.datasets import load_beir
    from private_vectors.text_model import TaggerModel

    data = Path(args.data)
    long_docs = list(load_beir(data / "retrieval" / "scifact").corpus.values())[: args.long]
    short_docs = [r["full_text"] for r in json.loads((data / "pii" / "synth_dataset_v2.json").read_text())][: args.short]
    ref, alt = TaggerModel(threshold=0.3), TaggerModel(threshold=0.3)
    alt._net = OrtNet(export_session(ref._net, torch.get_num_threads()), ref._net.head)
    before = os.getloadavg()
    rows = [compare("SciFact abstracts", long_docs, ref, alt, args.chunk),
            compare("synth_dataset_v2 sentences", short_docs, ref, alt, args.chunk)]
    after = os.getloadavg()
    lines = ["# The learned tagger on ONNX Runtime against torch", "",
             f"Command: `nice -n 10 .venv/bin/python {' '.join(['benchmarks/tagger_onnx.py', *sys.argv[1:]])}` "
             f"(torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, fp32, ORT_ENABLE_ALL, "
             f"{torch.get_num_threads()} threads, chunks of {args.chunk}; load average (1 min) {before[0]:.1f} at the "
             f"start and {after[0]:.1f} at the end on a shared 2-core machine). Spans at threshold 0.3 (below every "
             "threshold the text stage applies).", "",
             "| documents | n | torch ms/doc | ONNX Runtime ms/doc | speed-up | documents with identical spans | "
             "largest tag-probability difference |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['set']} | {r['n']} | {r['torch_ms']:.1f} | {r['ort_ms']:.1f} | {r['speedup']:.2f}× | "
              f"{r['same']} of {r['n']} | {r['worst']:.1e} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
