"""Decoding the generative attacker: greedy reconstruction and ancestral sampling."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .vocabulary import TokenVocabulary

__all__ = ["decode", "decode_batch"]


def decode(model: Any, vocab: TokenVocabulary, X: np.ndarray, *, sample: bool, max_length: int, temperature: float,
           repeats: int = 1, batch: int = 512, generator: Any = None, desc: str = "decoding",
           show_progress: bool = False) -> list[list[str]]:
    """Unit sequences decoded greedily or by ancestral sampling (``repeats`` per vector)."""
    import torch
    from tqdm.auto import tqdm

    device = next(model.parameters()).device
    rows = np.repeat(np.arange(X.shape[0]), repeats)
    out: list[list[str]] = []
    starts = range(0, len(rows), batch)
    for start in tqdm(starts, desc=desc, unit="batch", disable=not show_progress or len(starts) < 2):
        v = torch.from_numpy(X[rows[start : start + batch]]).to(device)
        with torch.no_grad():
            seqs = decode_batch(model, v, sample=sample, max_length=max_length, temperature=temperature,
                                generator=generator)
        out.extend(vocab.units(s) for s in seqs)
    return out


def decode_batch(model: Any, v: Any, *, sample: bool, max_length: int, temperature: float,
                 generator: Any) -> list[list[int]]:
    """Id sequences (EOS and after removed) for a batch of conditioning vectors ``v``."""
    import torch

    prefix, ctx, h = model.condition(v)
    inp = prefix.unsqueeze(1)
    done = torch.zeros(v.shape[0], dtype=torch.bool, device=v.device)
    steps = []
    for _ in range(max_length + 1):
        out, h = model.gru(model.step_inputs(inp, ctx), h)
        logits = model.out(out[:, -1])
        logits[:, :2] = -math.inf  # never PAD or BOS
        if sample:
            probs = torch.softmax(logits / temperature, dim=-1)
            nxt = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(v.device)
        else:
            nxt = logits.argmax(dim=-1)
        nxt = torch.where(done, torch.zeros_like(nxt), nxt)
        steps.append(nxt)
        done |= nxt == 2
        if bool(done.all()):
            break
        inp = model.embed(nxt).unsqueeze(1)
    seqs = torch.stack(steps, dim=1).cpu().tolist()
    return [s[: s.index(2)] if 2 in s else s for s in seqs]
