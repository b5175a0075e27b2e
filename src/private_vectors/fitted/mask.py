"""SPARSE concept masks: hard-concrete L0 gates learned to separate D⁺ from D⁻.

SPARSE (paper §3.1, App. H) learns a neuron mask m ∈ [0, 1]ⁿ such that the masked
embedding Φ(s) ⊙ m still lets a small classifier tell sentences with the concept (D⁺)
from the same sentences with the concept removed (D⁻ = R(s, C)), while an L0 penalty
closes every gate the classifier does not need. The open gates are the dimensions that
carry the concept; the Mahalanobis mechanism then puts its noise there (Σ = diag(m + δ)).

Gates are hard-concrete variables (Louizos, Welling & Kingma 2018): with u ~ U(0, 1),

    s = σ((log u − log(1 − u) + log α) / β),   z = clip(s·(ξ − γ) + γ, 0, 1),

ξ = 1.1, γ = −0.1, log α and log β learnable per dimension. The expected number of open
gates is  E‖z‖₀ = Σⱼ σ(log αⱼ − βⱼ·log(−γ/ξ)).

**Loss and the meaning of λ.** The paper writes the penalty with a minus sign and sums the
binary cross-entropy over the data set; minimising that would *open* gates. Here

    L = mean BCE per example  +  λ · E‖z‖₀ / n,

i.e. the penalty is added (sparsity-inducing) and both terms are per example: λ is the
number of nats of mean cross-entropy the classifier is willing to give up to close *all*
n gates. λ = 0 keeps every useful dimension; λ ≈ 0.1–1 keeps a few. The value does not
depend on the data-set size or the embedding dimension.

At inference the mask is deterministic: m = clip(σ(log α)(ξ − γ) + γ, 0, 1).

Choices the paper leaves open: inputs are standardised per dimension with the training
pairs' statistics before gating (so gates compete on information, not on coordinate scale;
a closed gate then feeds the mean value); gates get their own, larger Adam step
(``gate_learning_rate``); early stopping watches the validation loss (BCE with the
inference mask + penalty) on held-out *pairs*; on CPU the fit runs with one torch thread.
"""

from __future__ import annotations

import logging
import math
import secrets
from typing import Any

import numpy as np

from .._validation import (
    as_float_matrix,
    check_int,
    check_non_negative_finite,
    check_positive_finite,
    check_probability,
)
from ..errors import InvalidParameterError, InvalidTypeError

__all__ = ["GAMMA", "XI", "SparseMask"]

log = logging.getLogger(__name__)

XI = 1.1
"""Upper stretch limit ξ of the hard-concrete distribution (SPARSE App. H)."""
GAMMA = -0.1
"""Lower stretch limit γ of the hard-concrete distribution (SPARSE App. H)."""


def _device(device: str | None) -> str:
    import torch

    if device is not None:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _seed(random_state: Any) -> int:
    if random_state is None:
        return secrets.randbits(63)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, bool) or not isinstance(random_state, int) or random_state < 0:
        raise InvalidTypeError("random_state", "None, a non-negative int or a numpy Generator", random_state)
    return int(random_state)


def check_pairs(pos: Any, neg: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate paired embeddings Φ(s) and Φ(R(s)): same shape (m, n), m >= 2, finite."""
    P, _ = as_float_matrix(pos, "pos")
    N, _ = as_float_matrix(neg, "neg", dim=P.shape[1])
    if P.shape[0] != N.shape[0]:
        raise InvalidParameterError("neg", f"{P.shape[0]} rows, one per row of pos (paired)", neg)
    if P.shape[0] < 2:
        raise InvalidParameterError("pos", "at least 2 pairs", pos)
    return P, N


class SparseMask:
    """The SPARSE neuron-mask estimator (paper §3.1, App. H).

    Args:
        l0_lambda: λ, weight of the expected-L0 penalty per dimension-fraction (see module
            docstring); >= 0.
        hidden: hidden layer sizes of the classifier MLP (paper: (256, 128), ReLU).
        learning_rate: Adam step size of the classifier.
        gate_learning_rate: Adam step size of log α and log β (gates move faster than weights).
        batch_size: examples per step (paper: 64).
        max_epochs: upper bound on passes over the training pairs.
        patience: epochs without a validation-loss improvement of ``tol`` before stopping.
        tol: minimal improvement of the validation loss.
        validation_fraction: share of *pairs* held out for early stopping.
        log_alpha_init: initial log α (2.0: gates start ~86% open).
        beta_init: initial temperature β (2/3, Louizos et al.).
        device: torch device; default CUDA when available, else CPU.
        random_state: None (OS-seeded) or an explicit int / Generator for reproducible fits.
        show_progress: tqdm progress bar over epochs.

    Attributes:
        mask_: (n,) inference mask in [0, 1].
        gate_scores_: (n,) σ(log α)(ξ − γ) + γ before clipping — a strict ranking of dimensions.
        log_alpha_, log_beta_: learned gate parameters.
        expected_l0_: expected number of open gates at the end.
        n_epochs_, history_: epochs run and per-epoch ``{"train_loss", "val_loss", "val_bce", "l0"}``.
    """

    def __init__(
        self,
        *,
        l0_lambda: float = 0.5,
        hidden: tuple[int, ...] = (256, 128),
        learning_rate: float = 1e-3,
        gate_learning_rate: float = 5e-2,
        batch_size: int = 64,
        max_epochs: int = 40,
        patience: int = 4,
        tol: float = 1e-4,
        validation_fraction: float = 0.1,
        log_alpha_init: float = 1.0,
        beta_init: float = 2.0 / 3.0,
        device: str | None = None,
        random_state: Any = None,
        show_progress: bool = True,
    ) -> None:
        self.l0_lambda = l0_lambda
        self.hidden = hidden
        self.learning_rate = learning_rate
        self.gate_learning_rate = gate_learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.tol = tol
        self.validation_fraction = validation_fraction
        self.log_alpha_init = log_alpha_init
        self.beta_init = beta_init
        self.device = device
        self.random_state = random_state
        self.show_progress = show_progress

    def get_params(self) -> dict[str, Any]:
        """Hyperparameters, JSON-safe (random_state recorded as given when it is an int)."""
        return {
            "l0_lambda": self.l0_lambda,
            "hidden": list(self.hidden),
            "learning_rate": self.learning_rate,
            "gate_learning_rate": self.gate_learning_rate,
            "batch_size": self.batch_size,
            "max_epochs": self.max_epochs,
            "patience": self.patience,
            "tol": self.tol,
            "validation_fraction": self.validation_fraction,
            "log_alpha_init": self.log_alpha_init,
            "beta_init": self.beta_init,
            "random_state": self.random_state if isinstance(self.random_state, int) else None,
        }

    def _validate(self) -> None:
        check_non_negative_finite(self.l0_lambda, "l0_lambda")
        if not self.hidden or not all(isinstance(h, int) and h >= 1 for h in self.hidden):
            raise InvalidParameterError("hidden", "a non-empty tuple of positive ints", self.hidden)
        check_positive_finite(self.learning_rate, "learning_rate")
        check_positive_finite(self.gate_learning_rate, "gate_learning_rate")
        check_positive_finite(self.beta_init, "beta_init")
        check_int(self.batch_size, "batch_size", minimum=1)
        check_int(self.max_epochs, "max_epochs", minimum=1)
        check_int(self.patience, "patience", minimum=1)
        check_probability(self.validation_fraction, "validation_fraction")

    def fit(self, pos: Any, neg: Any) -> SparseMask:
        """Learn the mask from paired embeddings.

        Args:
            pos: Φ(s) for s in D⁺, shape (m, n).
            neg: Φ(R(s, C)) for the same sentences, shape (m, n) (row i pairs with row i).

        Returns:
            self, with ``mask_`` set.
        """
        import torch

        self._validate()
        P, N = check_pairs(pos, neg)
        m = P.shape[0]
        seed = _seed(self.random_state)
        rng = np.random.default_rng(seed)
        device = _device(self.device)

        order = rng.permutation(m)
        n_val = min(max(1, round(self.validation_fraction * m)), m - 1)
        val_idx, tr_idx = order[:n_val], order[n_val:]
        mu = P[tr_idx].mean(0) * 0.5 + N[tr_idx].mean(0) * 0.5
        sd = np.sqrt(0.5 * P[tr_idx].var(0) + 0.5 * N[tr_idx].var(0)) + 1e-8

        def stack(idx: np.ndarray) -> tuple[Any, Any]:
            X = np.concatenate([P[idx], N[idx]]) - mu
            X /= sd
            y = np.concatenate([np.ones(len(idx)), np.zeros(len(idx))])
            return (torch.tensor(X, dtype=torch.float32, device=device),
                    torch.tensor(y, dtype=torch.float32, device=device))

        threads = torch.get_num_threads()
        if device == "cpu":
            torch.set_num_threads(1)  # a tiny MLP: thread hand-offs cost more than they save
        try:
            self._train(P, N, tr_idx, val_idx, mu, sd, seed, rng, device, stack)
        finally:
            torch.set_num_threads(threads)
        return self

    def _train(self, P: np.ndarray, N: np.ndarray, tr_idx: np.ndarray, val_idx: np.ndarray,
               mu: np.ndarray, sd: np.ndarray, seed: int, rng: np.random.Generator, device: str,
               stack: Any) -> None:
        import torch
        from tqdm.auto import tqdm

        n = P.shape[1]
        gen = torch.Generator().manual_seed(seed)
        Xtr, ytr = stack(tr_idx)
        Xva, yva = stack(val_idx)

        layers: list[Any] = []
        width = n
        with torch.random.fork_rng(devices=[]):  # seeded init without touching the global RNG
            torch.manual_seed(seed)
            for h in self.hidden:
                layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
                width = h
            layers.append(torch.nn.Linear(width, 1))
        mlp = torch.nn.Sequential(*layers).to(device)
        log_alpha = torch.nn.Parameter(
            self.log_alpha_init + 0.01 * torch.randn(n, generator=gen).to(device))
        log_beta = torch.nn.Parameter(torch.full((n,), math.log(self.beta_init), device=device))
        opt = torch.optim.Adam([
            {"params": mlp.parameters(), "lr": self.learning_rate},
            {"params": [log_alpha, log_beta], "lr": self.gate_learning_rate},
        ])
        bce = torch.nn.BCEWithLogitsLoss()
        shift = math.log(-GAMMA / XI)

        def expected_l0() -> Any:
            beta = log_beta.clamp(math.log(0.05), math.log(10.0)).exp()
            return torch.sigmoid(log_alpha - beta * shift).sum()

        def sample_gates(rows: int) -> Any:
            u = torch.rand(rows, n, generator=gen).to(device).clamp(1e-6, 1 - 1e-6)
            beta = log_beta.clamp(math.log(0.05), math.log(10.0)).exp()
            s = torch.sigmoid((torch.log(u) - torch.log1p(-u) + log_alpha) / beta)
            return (s * (XI - GAMMA) + GAMMA).clamp(0.0, 1.0)

        def inference_mask() -> Any:
            return (torch.sigmoid(log_alpha) * (XI - GAMMA) + GAMMA).clamp(0.0, 1.0)

        best: tuple[float, Any] = (math.inf, None)
        stale = 0
        self.history_: list[dict[str, float]] = []
        bar = tqdm(range(self.max_epochs), desc="SPARSE mask", unit="epoch", disable=not self.show_progress)
        for _epoch in bar:
            mlp.train()
            perm = torch.randperm(Xtr.shape[0], generator=gen).to(device)
            total, batches = 0.0, 0
            for start in range(0, Xtr.shape[0], self.batch_size):
                idx = perm[start:start + self.batch_size]
                xb, yb = Xtr[idx], ytr[idx]
                logits = mlp(xb * sample_gates(xb.shape[0])).squeeze(1)
                loss = bce(logits, yb) + self.l0_lambda * expected_l0() / n
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach())
                batches += 1
            mlp.eval()
            with torch.no_grad():
                l0 = float(expected_l0())
                val_bce = float(bce(mlp(Xva * inference_mask()).squeeze(1), yva))
                val_loss = val_bce + self.l0_lambda * l0 / n
            self.history_.append({"train_loss": total / max(batches, 1), "val_loss": val_loss,
                                  "val_bce": val_bce, "l0": l0})
            bar.set_postfix(val_bce=f"{val_bce:.3f}", open=f"{l0:.1f}")
            if val_loss < best[0] - self.tol:
                state = (log_alpha.detach().clone(), log_beta.detach().clone())
                best = (val_loss, state)
                stale = 0
            else:
                stale += 1
                if stale >= self.patience:
                    break
        bar.close()
        la, lb = best[1] if best[1] is not None else (log_alpha.detach(), log_beta.detach())
        self.log_alpha_ = la.cpu().numpy().astype(np.float64)
        self.log_beta_ = lb.cpu().numpy().astype(np.float64)
        self.gate_scores_ = 1.0 / (1.0 + np.exp(-self.log_alpha_)) * (XI - GAMMA) + GAMMA
        self.mask_ = np.clip(self.gate_scores_, 0.0, 1.0)
        beta = np.exp(np.clip(self.log_beta_, math.log(0.05), math.log(10.0)))
        self.expected_l0_ = float(np.sum(1.0 / (1.0 + np.exp(-(self.log_alpha_ - beta * shift)))))
        self.n_epochs_ = len(self.history_)
        self.n_features_in_ = n
        log.info("SPARSE mask: %d epochs, %.1f gates expected open, %d with m > 0.5",
                 self.n_epochs_, self.expected_l0_, int(np.sum(self.mask_ > 0.5)))
