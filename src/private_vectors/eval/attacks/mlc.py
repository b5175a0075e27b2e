"""Multi-label classification (MLC) inversion attack (SPARSE paper, App. I.3).

A 3-layer MLP (512, 256, 128, ReLU) maps a stored vector to one logit per sensitive token
of the attacker's vocabulary and is trained with binary cross-entropy to predict which
tokens the sentence contained (Song & Raghunathan 2020; Li et al. 2023 "GEIA" use the
same attacker). The attacker trains on vectors perturbed with the victim's mechanism and
ε (it knows both), so the noise is part of what it learns to see through.

With ``token_encoder`` (the harness's ``mlc-enc`` attacker) the output layer is tied to
label embeddings: the logit of token t is ``s · cos(h(v), Φ(t)) + b_t``, where h is the same
MLP ending in a projection to the encoder's dimension and Φ(t) is the token embedded by the
public encoder itself. A rare token (a name seen once in training) then shares what the
network learned about every other token through Φ, which the paper's independent output
units cannot do — the standard label-embedding trick of extreme multi-label classification
(e.g. Weston et al. 2011, WSABIE). The attacker only needs the public model, which the
threat model already grants it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._validation import as_float_matrix, check_int, check_positive_finite
from ...encoders.base import l2_normalize
from ...errors import InvalidParameterError, InvalidTypeError
from .base import Attacker

__all__ = ["MLCAttacker"]


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class MLCAttacker(Attacker):
    """MLP multi-label token-presence attacker.

    Args:
        hidden: hidden layer widths (default the paper's (512, 256, 128)).
        epochs: maximum training epochs.
        batch_size: mini-batch size.
        lr: Adam learning rate.
        min_count: tokens in fewer training sentences are left out of the vocabulary (default
            3: a token seen once cannot be learned, and thousands of them drown the loss).
        patience: early stopping on a 10% validation split (epochs without improvement).
        stop_on: what early stopping watches on the validation split: ``"recall"`` (default:
            top-k recall of the true tokens, the leakage metric itself, starting from the
            prior-initialised model so training never ends below the prior) or ``"loss"``
            (mean BCE, which on a long-tailed vocabulary stops after a few epochs).
        rule, threshold: when a token counts as recovered (see :class:`Attacker`).
        random_state: int seed for initialisation and batching (benchmarks), or None.
        progress: show a tqdm bar over epochs.
        token_encoder: optional callable mapping a list of token strings to an (m, d) array
            (e.g. ``encoder.encode`` of the public model): ties the output layer to these
            label embeddings (see the module docstring). None = the paper's attacker.
    """

    name = "mlc"

    def __init__(
        self,
        *,
        hidden: Sequence[int] = (512, 256, 128),
        epochs: int = 40,
        batch_size: int = 32,
        lr: float = 2e-3,
        min_count: int = 3,
        patience: int = 5,
        stop_on: str = "recall",
        rule: str = "top-k",
        threshold: float = 0.5,
        random_state: int | None = None,
        progress: bool = False,
        token_encoder: Any = None,
    ) -> None:
        super().__init__(rule=rule, threshold=threshold)
        self.hidden = tuple(check_int(h, "hidden", minimum=1) for h in hidden)
        self.epochs = check_int(epochs, "epochs", minimum=1)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.lr = check_positive_finite(lr, "lr")
        self.min_count = check_int(min_count, "min_count", minimum=1)
        self.patience = check_int(patience, "patience", minimum=1)
        if stop_on not in ("recall", "loss"):
            raise InvalidParameterError("stop_on", "'recall' or 'loss'", stop_on)
        self.stop_on = stop_on
        self.random_state = random_state
        self.progress = progress
        if token_encoder is not None and not callable(token_encoder):
            raise InvalidTypeError("token_encoder", "None or a callable list[str] -> (m, d) array", token_encoder)
        self.token_encoder = token_encoder

    def _build(self, n_in: int, n_out: int) -> Any:
        from torch import nn

        layers: list[Any] = []
        width = n_in
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        if self.token_encoder is None:
            layers.append(nn.Linear(width, n_out))
            return nn.Sequential(*layers)
        labels = self._label_embeddings(n_out)
        layers.append(nn.Linear(width, labels.shape[1]))
        return nn.Sequential(nn.Sequential(*layers), _tied_labels(labels))

    def _label_embeddings(self, n_out: int) -> np.ndarray:
        """Unit-norm Φ(t) for the vocabulary (a zero row when the vocabulary is empty)."""
        if not self.vocabulary_:
            return np.zeros((n_out, 1), np.float32)
        E, _ = as_float_matrix(self.token_encoder(list(self.vocabulary_)), "token_encoder output")
        if E.shape[0] != len(self.vocabulary_):
            raise InvalidParameterError("token_encoder", f"one row per token ({len(self.vocabulary_)})", E.shape)
        return l2_normalize(E).astype(np.float32)

    def fit(self, vectors: Any, token_lists: Sequence[Sequence[str]]) -> MLCAttacker:
        """Learn token presence from (perturbed) vectors; returns self."""
        import torch
        from tqdm.auto import tqdm

        X, tokens = self._check_fit_input(vectors, token_lists)
        counts = Counter(t for toks in tokens for t in set(toks))
        self.vocabulary_ = sorted(t for t, c in counts.items() if c >= self.min_count)
        index = {t: i for i, t in enumerate(self.vocabulary_)}
        Y = np.zeros((X.shape[0], max(len(self.vocabulary_), 1)), dtype=np.float32)
        for i, toks in enumerate(tokens):
            for t in toks:
                if t in index:
                    Y[i, index[t]] = 1.0
        seed = 0 if self.random_state is None else int(self.random_state)
        gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        dev = _device()
        self.model_ = self._build(X.shape[1], Y.shape[1])
        # start from the prior: output biases = logit of each token's training frequency, so the
        # attacker begins at the no-vector baseline and training only has to learn what the
        # vectors add (with thousands of rare tokens, early stopping otherwise halts before the
        # biases have even learned the frequencies)
        freq = np.clip(Y.mean(axis=0), 1e-4, 1 - 1e-4)
        with torch.no_grad():
            self.model_[-1].bias.copy_(torch.from_numpy(np.log(freq / (1 - freq)).astype(np.float32)))
        self.model_ = self.model_.to(dev)
        Xt, Yt = torch.from_numpy(X.astype(np.float32)), torch.from_numpy(Y)
        perm = torch.randperm(len(Xt), generator=gen)
        n_val = max(1, len(Xt) // 10) if len(Xt) >= 20 else 0
        val_idx, tr_idx = perm[:n_val], perm[n_val:]
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        val_tokens = [tokens[int(i)] for i in val_idx]

        def score() -> float:  # higher is better
            self.model_.eval()
            with torch.no_grad():
                logits = self.model_(Xt[val_idx].to(dev))
                if self.stop_on == "loss":
                    return -float(loss_fn(logits, Yt[val_idx].to(dev)))
                return _top_k_recall(logits.cpu().numpy(), val_tokens, index)

        best, best_state, stale = -float("inf"), None, 0
        if n_val:
            best = score()  # the prior-initialised model is the first candidate
            best_state = {k: v.detach().clone() for k, v in self.model_.state_dict().items()}
        self.n_epochs_ = 0
        self.best_epoch_ = 0
        for _ in tqdm(range(self.epochs), desc="MLC attacker", disable=not self.progress, leave=False):
            self.model_.train()
            order = tr_idx[torch.randperm(len(tr_idx), generator=gen)]
            for start in range(0, len(order), self.batch_size):
                b = order[start:start + self.batch_size]
                opt.zero_grad()
                loss = loss_fn(self.model_(Xt[b].to(dev)), Yt[b].to(dev))
                loss.backward()
                opt.step()
            self.n_epochs_ += 1
            if n_val:
                value = score()
                # recall moves in steps of one token instance: a plateau keeps training (and the
                # later state), only a fall for `patience` epochs stops it
                better = value >= best if self.stop_on == "recall" else value > best + 1e-6
                if better:
                    best, stale, self.best_epoch_ = value, 0, self.n_epochs_
                    best_state = {k: v.detach().clone() for k, v in self.model_.state_dict().items()}
                else:
                    stale += 1
                    if stale >= self.patience:
                        break
        if best_state is not None:
            self.model_.load_state_dict(best_state)
        self.model_.eval()
        return self

    def predict_proba(self, vectors: Any) -> tuple[np.ndarray, list[str]]:
        """Token-presence probabilities (m, V) and the vocabulary they refer to."""
        import torch

        self._check_fitted("model_")
        X, _ = as_float_matrix(vectors, "vectors")
        out = []
        with torch.no_grad():
            for start in range(0, len(X), 1024):
                xb = torch.from_numpy(X[start:start + 1024].astype(np.float32)).to(_device())
                out.append(torch.sigmoid(self.model_(xb)).cpu().numpy())
        probs = np.concatenate(out, axis=0) if out else np.zeros((0, len(self.vocabulary_)), np.float32)
        return probs[:, : len(self.vocabulary_)], list(self.vocabulary_)

    def token_probabilities(self, vectors: Any, *, min_probability: float = 1e-3) -> list[dict[str, float]]:
        """Per vector, the vocabulary tokens with probability ≥ ``min_probability``."""
        probs, vocab = self.predict_proba(vectors)
        out = []
        for row in probs:
            idx = np.flatnonzero(row >= min_probability)
            out.append({vocab[i]: float(row[i]) for i in idx})
        return out

    def _truth_probabilities(self, vectors: np.ndarray, truth: list[list[str]]) -> list[dict[str, float]]:
        probs, vocab = self.predict_proba(vectors)
        index = {t: i for i, t in enumerate(vocab)}
        out = []
        for r, toks in enumerate(truth):
            k = len(set(toks))
            top = np.argpartition(-probs[r], k - 1)[:k] if 0 < k <= len(vocab) else np.arange(len(vocab))
            row = {vocab[i]: float(probs[r, i]) for i in top}
            row.update({t: float(probs[r, index[t]]) for t in toks if t in index})
            out.append(row)
        return out


def _top_k_recall(scores: np.ndarray, truth: list[list[str]], index: dict[str, int]) -> float:
    """Share of true token instances among each row's k best-scored vocabulary tokens, k = the
    row's number of distinct true tokens (the top-k leakage rule; ties by vocabulary order)."""
    hits = total = 0
    for row, toks in zip(scores, truth, strict=True):
        k = len(set(toks))
        total += len(toks)
        if not k or not index:
            continue
        top = set(np.argsort(-row, kind="stable")[:k].tolist())
        hits += sum(1 for t in toks if t in index and index[t] in top)
    return hits / total if total else 0.0


def _tied_labels_module() -> Any:
    from torch import nn

    class TiedLabels(nn.Module):
        """logit_t = s · cos(h, Φ(t)) + b_t with Φ fixed, the scale s and biases b learned."""

        def __init__(self, labels: np.ndarray) -> None:
            import torch

            super().__init__()
            self.register_buffer("labels", torch.from_numpy(labels))
            self.scale = nn.Parameter(torch.tensor(10.0))
            self.bias = nn.Parameter(torch.zeros(labels.shape[0]))

        def forward(self, h: Any) -> Any:
            h = nn.functional.normalize(h, dim=-1)
            return self.scale * (h @ self.labels.T) + self.bias

    return TiedLabels


def _tied_labels(labels: np.ndarray) -> Any:
    """A fresh tied-label output layer over the fixed label embeddings ``labels``."""
    return _tied_labels_module()(labels)
