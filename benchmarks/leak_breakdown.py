"""Which PII tokens does the strongest vector attacker still recover, and why?

Rebuilds the PII leakage cell of a harness config (the presidio synthetic PII sentences stored
beside SciFact; one row, one ε, one seed), attacks it with the config's MLC-enc attacker exactly
as the harness does (same split, same adaptive views), and splits every recovered sensitive token
instance of the victim-test sentences by

* where it stands in the **stored** text: ``kept`` (the word is still in the protected text: the
  detector missed it or the row keeps it), ``surrogate`` (removed from its place but the same word
  appears elsewhere in the stored text, e.g. a replacement that coincides with the gold value) or
  ``removed``;
* the gold entity label of its span (presidio-research's labels);
* whether the token prior alone would have guessed it (the prior attacker's top-k for that
  sentence): a recovered token the prior also guesses is a frequent value, not a leak of the text.

Usage (one cell, about 3–6 min on 2 cores):
    nice -n 10 .venv/bin/python benchmarks/leak_breakdown.py \
        --config benchmarks/configs/findings-text-scifact-model-eps20.json --seed 0 \
        --out benchmarks/results/findings/leak_breakdown-model-eps20-seed0.md
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from private_vectors.eval.attacks.base import normalize_token
from private_vectors.eval.cli import _resolve_data_root
from private_vectors.eval.datasets import filter_sensitive_tokens, span_tokens
from private_vectors.eval.metrics import _recovered_top_k
from private_vectors.eval.runner import (
    MECHANISM_SPECS, adaptive_transforms, build_attackers, build_tasks, doc_transform, load_encoder,
    make_embedding,
)
from private_vectors.eval.store import open_store
from private_vectors.eval.tasks import attack

_WORD = re.compile(r"\w+", re.UNICODE)


def gold_labels(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Full text (whitespace collapsed, as the loader does) → [(label, normalised token)]."""
    out: dict[str, list[tuple[str, str]]] = {}
    for row in json.loads(path.read_text(encoding="utf-8")):
        text = " ".join(row["full_text"].split())
        pairs = []
        for s in sorted(row.get("spans") or [], key=lambda s: s["start_position"]):
            for tok in filter_sensitive_tokens(span_tokens(s["entity_value"])):
                pairs.append((s["entity_type"], normalize_token(tok)))
        out.setdefault(text, pairs)
    return out


def where(token: str, original: str, stored: str) -> str:
    """``kept`` when the stored text holds the token at least as often as the original (it was not
    removed), ``surrogate`` when it holds it but fewer times, ``removed`` when it holds none."""
    n_orig = sum(1 for w in _WORD.findall(original.lower()) if w == token)
    n_stored = sum(1 for w in _WORD.findall(stored.lower()) if w == token)
    if " " in token or not n_orig:  # multi-word or odd tokens: substring test
        return "kept" if token in stored.lower() else "removed"
    if n_stored >= n_orig:
        return "kept"
    return "surrogate" if n_stored else "removed"


def run(cfg: dict[str, Any], mechanism: str, eps: float, seed: int, attacker: str) -> dict[str, Any]:
    """Store the leakage sentences under one row, attack them, return per-instance records."""
    import torch

    torch.set_num_threads(int(cfg.get("torch_threads") or 2))
    task = next(t for t in build_tasks(cfg) if t.leakage is not None and t.leakage_in_store)
    lk = task.leakage
    enc = load_encoder(cfg.get("model"))
    ef = make_embedding(mechanism, eps, seed, enc, task.meta["concept"], cfg)
    store = open_store(ef, "chroma", ef_search=cfg.get("ef_search", 1000))
    tf = doc_transform(mechanism, cfg)
    if tf is not None:
        store.doc_transform = tf
    t0 = time.time()
    try:
        ids = lk.ids()
        store.add(ids, lk.data.texts)
        stored = store.stored_texts(ids)
        V = store.vectors(ids)
    finally:
        store.close()
    store_s = time.time() - t0
    facs = build_attackers(cfg, enc)
    picked = {attacker: facs[attacker][0], "prior": facs["prior"][0]}
    records: dict[str, list[tuple[int, list[bool]]]] = {}

    def scorer_for(name: str):
        def scorer(att: Any, Vte: np.ndarray, idx: np.ndarray) -> dict[str, float]:
            truth = [[normalize_token(t) for t in lk.data.tokens[i] if normalize_token(t)] for i in idx]
            probs = att._truth_probabilities(np.asarray(Vte), truth)
            records[name] = [(int(i), _recovered_top_k(toks, p)) for i, toks, p in zip(idx, truth, probs)]
            return {}
        return scorer

    metrics: dict[str, Any] = {}
    for name, fac in picked.items():
        metrics.update(attack(V, lk.data.tokens, {name: fac}, seed=seed, train_share=lk.train_share,
                              texts=lk.data.texts, transforms=adaptive_transforms(ef, cfg),
                              groups=lk.split_groups(), scorer=scorer_for(name)))
    return {"lk": lk, "stored": stored, "records": records, "metrics": metrics, "store_s": store_s,
            "pii_path": Path(cfg["data_root"]) / cfg.get("pii", {}).get("path", "pii/synth_dataset_v2.json")}


def breakdown(res: dict[str, Any], attacker: str) -> tuple[Counter, Counter, Counter, int]:
    lk, stored = res["lk"], res["stored"]
    labels = gold_labels(res["pii_path"])
    prior = {i: hits for i, hits in res["records"]["prior"]}
    by_place: Counter = Counter()
    by_label: Counter = Counter()
    tokens: Counter = Counter()
    n = 0
    for i, hits in res["records"][attacker]:
        text = lk.data.texts[i]
        toks = [normalize_token(t) for t in lk.data.tokens[i] if normalize_token(t)]
        lab = dict((tok, l) for l, tok in reversed(labels.get(text, [])))
        for j, (tok, hit) in enumerate(zip(toks, hits)):
            n += 1
            place = where(tok, text, stored[i] or "")
            label = lab.get(tok, "?")
            by_place[(place, "all")] += 1
            by_label[(label, "all")] += 1
            if hit:
                guessed = bool(prior.get(i) and prior[i][j])
                by_place[(place, "hit")] += 1
                by_place[(place, "hit-prior" if guessed else "hit-beyond-prior")] += 1
                by_label[(label, "hit")] += 1
                by_label[(label, place)] += 1
                tokens[(tok, label, place)] += 1
    return by_place, by_label, tokens, n


def report(res: dict[str, Any], attacker: str, args: argparse.Namespace) -> str:
    by_place, by_label, tokens, n = breakdown(res, attacker)
    hits = sum(v for (p, k), v in by_place.items() if k == "hit")
    m = res["metrics"]
    lines = [f"# What the strongest attacker recovers: {args.mechanism}, ε = {args.eps}, seed {args.seed}", "",
             f"Command: `nice -n 10 .venv/bin/python benchmarks/leak_breakdown.py --config {args.config} "
             f"--mechanism {args.mechanism} --eps {args.eps} --seed {args.seed} --attacker {attacker}`", "",
             f"{attacker}: leakage {100 * m[f'leakage_{attacker}']:.2f} % (view {m.get(f'view_{attacker}', 'raw')}); "
             f"prior {100 * m['leakage_prior']:.2f} %; {n} sensitive token instances in the victim-test split, "
             f"{hits} recovered. Storing took {res['store_s']:.0f} s.", "",
             "## By where the token stands in the stored text", "",
             "| place | instances | recovered | share recovered | recovered, prior also guesses | recovered beyond the prior |",
             "|---|---|---|---|---|---|"]
    for place in ("kept", "surrogate", "removed"):
        a, h = by_place[(place, "all")], by_place[(place, "hit")]
        lines.append(f"| {place} | {a} | {h} | {100 * h / max(a, 1):.1f} % | {by_place[(place, 'hit-prior')]} "
                     f"| {by_place[(place, 'hit-beyond-prior')]} |")
    lines += ["", "## By gold label", "", "| label | instances | recovered | of which kept in text | surrogate | removed |",
              "|---|---|---|---|---|---|"]
    for label in sorted({l for l, _ in by_label}, key=lambda l: -by_label[(l, "hit")]):
        lines.append(f"| {label} | {by_label[(label, 'all')]} | {by_label[(label, 'hit')]} | "
                     f"{by_label[(label, 'kept')]} | {by_label[(label, 'surrogate')]} | {by_label[(label, 'removed')]} |")
    lines += ["", "## Recovered tokens (most frequent first)", "", "| token | label | place | times |", "|---|---|---|---|"]
    for (tok, label, place), c in tokens.most_common(args.top):
        lines.append(f"| {tok} | {label} | {place} | {c} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--mechanism", default="redact-model+laplace", choices=sorted(MECHANISM_SPECS))
    ap.add_argument("--eps", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attacker", default="mlc-enc")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cfg = json.loads(Path(args.config).read_text())
    _resolve_data_root(cfg, Path(args.config), None)
    res = run(cfg, args.mechanism, args.eps, args.seed, args.attacker)
    text = report(res, args.attacker, args)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
