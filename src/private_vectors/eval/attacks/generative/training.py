"""Training the generative attacker's decoder: teacher-forced, weighted cross-entropy.

Adam with gradient clipping at norm 1 and early stopping on a held-out share of the
training sentences; optional word dropout on the teacher-forced inputs (Bowman et al., 2016).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .vocabulary import TokenVocabulary

__all__ = ["batch_loss", "train", "unit_weights"]


def unit_weights(split: list[list[str]], token_lists: Sequence[Sequence[str]] | None, vocab: TokenVocabulary,
                 sensitive_weight: float) -> list[list[float]]:
    """Per sentence, the loss weight of each unit (+ EOS): ``sensitive_weight`` on the units
    spelling a sensitive token, 1 elsewhere."""
    weights = [[1.0] * (len(s) + 1) for s in split]  # + EOS
    if token_lists is None or sensitive_weight == 1.0:
        return weights
    for row, units, tokens in zip(weights, split, token_lists, strict=True):
        for token in tokens:
            t = vocab.split(str(token))
            for i in range(len(units) - len(t) + 1):
                if t and units[i : i + len(t)] == t:
                    row[i : i + len(t)] = [sensitive_weight] * len(t)
    return weights


def train(model: Any, X: np.ndarray, ids: list[list[int]], weights: list[list[float]], device: Any,
          rng: np.random.Generator, *, epochs: int, batch_size: int, learning_rate: float, validation_share: float,
          patience: int, word_dropout: float, show_progress: bool) -> list[dict[str, float]]:
    """Train ``model`` in place (the best validation state is restored); returns the per-epoch history."""
    import torch
    from tqdm.auto import tqdm

    order = rng.permutation(len(ids))
    n_val = round(validation_share * len(ids)) if len(ids) >= 20 else 0
    val, fit_rows = order[:n_val], order[n_val:]
    opt = torch.optim.Adam(model.parameters(), lr=learning_rate)
    best, best_state, stale, history = math.inf, None, 0, []
    bar = tqdm(range(epochs), desc="GEIA decoder", unit="epoch", disable=not show_progress)
    for epoch in bar:
        model.train()
        perm = fit_rows[rng.permutation(len(fit_rows))]
        losses = []
        for start in range(0, len(perm), batch_size):
            loss = batch_loss(model, X, ids, weights, perm[start : start + batch_size], device, word_dropout)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.detach()))
        record = {"epoch": epoch + 1, "train_loss": float(np.mean(losses))}
        if n_val:
            model.eval()
            with torch.no_grad():
                record["val_loss"] = float(np.mean([
                    float(batch_loss(model, X, ids, weights, val[s : s + 256], device))
                    for s in range(0, n_val, 256)]))
        history.append(record)
        bar.set_postfix({k: round(v, 3) for k, v in record.items() if k != "epoch"})
        score = record.get("val_loss", record["train_loss"])
        if score < best - 1e-4:
            best, stale = score, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            stale += 1
            if n_val and stale >= patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    return history


def batch_loss(model: Any, X: np.ndarray, ids: list[list[int]], weights: list[list[float]], rows: np.ndarray,
               device: Any, word_dropout: float = 0.0) -> Any:
    """Weighted mean cross-entropy of ``rows`` (teacher forcing; target = units + EOS)."""
    import torch

    length = max(len(ids[r]) for r in rows)
    tokens = torch.zeros(len(rows), length, dtype=torch.long)
    target = torch.zeros(len(rows), length + 1, dtype=torch.long)
    weight = torch.zeros(len(rows), length + 1)
    for j, r in enumerate(rows):
        seq = ids[r]
        tokens[j, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        target[j, : len(seq) + 1] = torch.tensor([*seq, 2], dtype=torch.long)
        weight[j, : len(seq) + 1] = torch.tensor(weights[r], dtype=torch.float32)
    if word_dropout > 0:
        tokens = tokens.masked_fill(torch.rand(tokens.shape) < word_dropout, 0)
    v = torch.from_numpy(X[rows]).to(device)
    logits = model(v, tokens.to(device))
    nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target.to(device), reduction="none")
    weight = weight.to(device)
    return (nll * weight).sum() / weight.sum()
