"""Cheaper ways to run the learned tagger, against the shipped setting: speed and agreement.

The reference is the shipped tagger as the library runs it (float32, the config's stride). Each
variant reads the same documents; every variant runs on each chunk back to back with the
reference, the order rotating (so load from other processes falls on all alike). Agreement:
the share of tokens whose arg-max tag is the reference's, and the spans (start, end, label,
after the 0.5 threshold) the variant finds that the reference finds too, and the reference's
person and location spans it loses.

Variants: ``int8``: dynamic int8 quantisation of every linear layer
(``torch.ao.quantization.quantize_dynamic``, per-tensor activations; Jacob et al., "Quantization
and training of neural networks for efficient integer-arithmetic-only inference", CVPR 2018);
``int8-upper``: only the trained (upper) layers, per-channel weights; ``stride-N``: windows every
N tokens instead of the config's (less overlap, less context at a window's edge); a folder: the
weights ``scripts/train_tagger.py`` wrote there (e.g. with fewer ``--layers``), shown by the
folder's name.

    nice -n 10 .venv/bin/python benchmarks/tagger_variants.py --data ../shared/data \\
        --out benchmarks/results/text/tagger_variants.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _fused_as_linear(net):
    """The network with each layer's fused query/key/value as one ``nn.Linear`` (so a quantiser
    sees it); same outputs."""
    import types

    import torch.nn.functional as nnf
    from torch import nn

    def forward(self, x, bias):
        batch, width, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, width, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = nnf.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        a = a.transpose(1, 2).reshape(batch, width, hidden)
        x = self.attention_norm(x + self.attention_out(a))
        return self.output_norm(x + self.output(nnf.gelu(self.intermediate(x))))

    for layer in net.layers:
        w, b = layer._qkv
        layer.qkv = nn.Linear(w.shape[1], w.shape[0])
        layer.qkv.weight.data, layer.qkv.bias.data = w.clone(), b.clone()
        del layer.query, layer.key, layer.value
        layer.forward = types.MethodType(forward, layer)
    return net


def variant(name: str):
    """A TaggerModel for ``name``."""
    import torch
    from torch import nn

    from private_vectors.text_model import TaggerModel

    if name.startswith("stride-"):
        return TaggerModel(stride=int(name.split("-")[1]))
    if Path(name).is_dir():  # another weight folder (scripts/train_tagger.py): fewer layers, another run
        return TaggerModel(name)
    tm = TaggerModel()
    net = _fused_as_linear(tm._net)
    head = net.head
    if name == "int8":
        q = torch.ao.quantization.quantize_dynamic(net, {nn.Linear}, dtype=torch.qint8)
    elif name == "int8-upper":
        from torch.ao.quantization import per_channel_dynamic_qconfig

        q = torch.ao.quantization.quantize_dynamic(net, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
        for i in range(net.frozen):
            q.layers[i] = net.layers[i]
    else:
        raise SystemExit(f"unknown variant {name!r}")
    q.head = head  # float head: TaggerModel reads its device
    tm._net = q
    return tm


def _spans(m, texts: list[str], probs) -> list[list]:
    """The spans ``m.spans(texts)`` returns, from probabilities already computed."""
    from private_vectors.text_model.windows import decode

    return [[_S(s, e, lab) for s, e, lab, score in decode(pieces, offsets, p, m.tags)
             if score >= m.threshold and text[s:e].strip()] for text, (pieces, offsets, p) in zip(texts, probs, strict=True)]


class _S:
    def __init__(self, start: int, end: int, label: str) -> None:
        self.start, self.end, self.label = start, end, label


def compare(ref, others: dict, docs: list[str], chunk: int) -> list[dict]:
    t_ref, t = 0.0, {k: 0.0 for k in others}
    agree = {k: [0, 0] for k in others}
    spans = {k: [0, 0, 0, 0] for k in others}  # found, shared, reference, lost person/location
    models = [("ref", ref), *others.items()]
    for c, i in enumerate(range(0, len(docs), chunk)):
        part = docs[i:i + chunk]
        got = {}
        for j in range(len(models)):
            name, m = models[(j + c) % len(models)]
            t0 = time.perf_counter()
            probs = m.token_probabilities(part)
            dt = time.perf_counter() - t0
            if name == "ref":
                t_ref += dt
            else:
                t[name] += dt
            got[name] = (probs, _spans(m, part, probs))
        rp, rs = got["ref"]
        rset = {(d, s.start, s.end, s.label) for d, ss in enumerate(rs) for s in ss}
        for k in others:
            vp, vs = got[k]
            for (_, _, a), (_, _, b) in zip(rp, vp, strict=True):
                agree[k][0] += int((a.argmax(1) == b.argmax(1)).sum())
                agree[k][1] += len(a)
            vset = {(d, s.start, s.end, s.label) for d, ss in enumerate(vs) for s in ss}
            spans[k][0] += len(vset)
            spans[k][1] += len(vset & rset)
            spans[k][2] += len(rset)
            spans[k][3] += sum(1 for x in rset - vset if x[3] in ("PERSON", "LOCATION"))
    n = len(docs)
    return [{"variant": k, "ms_ref": 1000 * t_ref / n, "ms": 1000 * t[k] / n, "speedup": t_ref / t[k],
             "token_agree": agree[k][0] / max(1, agree[k][1]), "spans": spans[k][0], "shared": spans[k][1],
             "ref_spans": spans[k][2], "lost_per_loc": spans[k][3]} for k in others]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--long", type=int, default=100, help="SciFact abstracts")
    ap.add_argument("--short", type=int, default=300, help="synth_dataset_v2 sentences")
    ap.add_argument("--judgments", type=int, default=10, help="TAB dev judgments")
    ap.add_argument("--chunk", type=int, default=25)
    ap.add_argument("--variants", default="int8,int8-upper,stride-112,stride-120")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch

    from private_vectors.eval.datasets import load_beir
    from private_vectors.text_model import TaggerModel

    torch.set_num_threads(max(1, (os.cpu_count() or 1)))
    data = Path(args.data)
    sets = {
        f"SciFact abstracts (0-{args.long})": list(load_beir(data / "retrieval" / "scifact").corpus.values())[: args.long],
        "synth_dataset_v2 sentences": [r["full_text"] for r in
                                       json.loads((data / "pii" / "synth_dataset_v2.json").read_text())][: args.short],
    }
    if args.judgments:
        tab = [json.loads(x) for x in (data / "pii" / "tab" / "tab_train_dev.jsonl").read_text("utf-8").splitlines()]
        sets["TAB dev judgments"] = [d["text"] for d in tab
                                     if d["metadata"]["provenance"]["dataset_type"] == "dev"][: args.judgments]
    ref = TaggerModel()
    others = {Path(v).name if Path(v).is_dir() else v: variant(v) for v in args.variants.split(",") if v}
    for m in (ref, *others.values()):
        m.token_probabilities(next(iter(sets.values()))[:8])
    load0 = os.getloadavg()[0]
    rows = [{"set": name, **r} for name, docs in sets.items() for r in compare(ref, others, docs, args.chunk)]
    load1 = os.getloadavg()[0]
    lines = ["# The learned tagger: cheaper variants against the shipped setting", "",
             f"Command: `.venv/bin/python {' '.join(['benchmarks/tagger_variants.py', *sys.argv[1:]])}` (CPU, torch "
             f"threads {torch.get_num_threads()}, chunks of {args.chunk}; load average (1 min) {load0:.1f} at the "
             f"start and {load1:.1f} at the end on a shared 2-core machine: the speed-ups come from interleaved "
             "runs on the same chunks). Reference: float32, stride "
             f"{ref.stride} (window {ref.window}).", "",
             "| documents | variant | reference ms/doc | variant ms/doc | speed-up | tokens with the same tag | "
             "spans (reference) | spans shared with the reference | reference person/location spans lost |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['variant']} | {r['ms_ref']:.1f} | {r['ms']:.1f} | {r['speedup']:.2f}× | "
                     f"{100 * r['token_agree']:.2f} % | {r['spans']} ({r['ref_spans']}) | "
                     f"{100 * r['shared'] / max(1, r['ref_spans']):.1f} % | {r['lost_per_loc']} |")
    lines += ["", "A stride-N variant does the reference's work on a text shorter than one window (every "
              "synthetic sentence): its speed-up there is this run's noise, not a gain."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
