"""TextCrafter: optimisation-calibrated, PII-guided noise (Tang, Jiang & Niu, 2025).

A learned policy perturbs a clean embedding f₀ with a perturbation of fixed L2 radius ε,
orthogonal to a learned direction v:

    δ ~ N(μ(f₀), diag σ²),   δ⊥ = ε·(δ − (δᵀv)v) / ‖δ − (δᵀv)v‖,   f_adv = f₀ + δ⊥.

So ‖f_adv − f₀‖ = ε and ⟨f_adv − f₀, v⟩ = 0 for every input — by construction, and pinned
by the tests. The v branch starts at the direction of f₀ itself (the paper's "noise
orthogonal to the user embedding") and is refined during training.

* PII classifier p_Φ (paper eqs. 5–8): logistic regression on embeddings of balanced PII
  vs plain sentences; plain sentences in which :class:`private_vectors.text.light.LightDetector` finds PII are
  relabelled as PII first (:func:`~.pii_classifier.relabel_pii`).
* ProtectPolicy: f₀ is cut into tokens of ``token_dim`` coordinates, embedded, given a
  learnable positional vector p, passed through one multi-head self-attention block and a
  GELU feed-forward block (residuals + LayerNorm); a μ head, a learned log σ, and a second
  branch for v.
* Reward R = −α‖f_adv − f₀‖ − β·p_Φ(f_adv) − γ‖f_adv − f_μ‖, f_μ the centroid of f₀'s
  k-means cluster (the cluster prior). REINFORCE with an exponential-moving-average
  baseline b (eqs. 19–23): ∇ = −E[(R − b)∇log π(δ)]. v is a deterministic output, so its
  gradient is the exact pathwise one, −∇_v R. Note ‖f_adv − f₀‖ = ε is constant, so the α
  term shifts R but carries no gradient; it is kept for fidelity to the paper.
* Inference: one forward pass and one Gaussian draw (from the ``rng`` given to perturb).

**Radius vs ε.** ``radius`` is an L2 distance. ``PrivateEmbedding`` expresses ε in units of
1/√n of L2, so its ``eps`` maps to ``radius = eps / √n`` (:meth:`TextCrafter.radius_from_eps`).
TextCrafter gives no formal DP guarantee: its protection is empirical (PII classifier,
inversion attacks), unlike the metric-LDP mechanisms.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np

from .._validation import (
    as_float_matrix,
    check_int,
    check_non_negative_finite,
    check_positive_finite,
)
from ..errors import InvalidParameterError
from ..random import RandomSource
from .learned import (
    Adam,
    LearnedMechanism,
    NotFittedError,
    clip_grad_norm,
    small_model_threads,
    torch_generator,
)
from .pii_classifier import PIIClassifier, _binary_labels, kmeans

__all__ = ["TextCrafter"]


# -- the policy network ----------------------------------------------------------------
def _build_policy(n: int, token_dim: int, d_model: int, n_heads: int, ffn_dim: int, init_log_sigma: float) -> Any:
    import torch
    from torch import nn

    n_tokens = math.ceil(n / token_dim)

    class ProtectPolicy(nn.Module):
        """Tokens of f₀ + positional vector p → MHSA + GELU FFN (residual, LayerNorm) → μ, log σ, v."""

        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Linear(token_dim, d_model)
            self.position = nn.Parameter(torch.zeros(n_tokens, d_model))
            nn.init.normal_(self.position, std=0.02)
            self.attention = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
            self.norm1 = nn.LayerNorm(d_model)
            self.ffn = nn.Sequential(nn.Linear(d_model, ffn_dim), nn.GELU(), nn.Linear(ffn_dim, d_model))
            self.norm2 = nn.LayerNorm(d_model)
            self.mu_head = nn.Linear(d_model, token_dim)
            self.log_sigma = nn.Parameter(torch.full((n,), float(init_log_sigma)))
            self.v_head = nn.Linear(d_model, token_dim)
            nn.init.zeros_(self.v_head.weight)  # v starts at the direction of f₀
            nn.init.zeros_(self.v_head.bias)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            m = x.shape[0]
            unit = x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)
            pad = n_tokens * token_dim - n
            tokens = nn.functional.pad(unit * math.sqrt(n), (0, pad)).view(m, n_tokens, token_dim)
            h = self.embed(tokens) + self.position
            a, _ = self.attention(h, h, h, need_weights=False)
            h = self.norm1(h + a)
            h = self.norm2(h + self.ffn(h))
            mu = self.mu_head(h).reshape(m, -1)[:, :n]
            v = unit + self.v_head(h).reshape(m, -1)[:, :n] / math.sqrt(n)
            return mu, self.log_sigma.expand(m, n), v / v.norm(dim=1, keepdim=True).clamp_min(1e-12)

    return ProtectPolicy()


def orthogonal_step(delta: np.ndarray, v: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """δ⊥ = radius·(δ − (δᵀv)v)/‖δ − (δᵀv)v‖ row-wise (v unit); also returns the rows' norms before scaling."""
    proj = delta - np.sum(delta * v, axis=1, keepdims=True) * v
    norms = np.linalg.norm(proj, axis=1, keepdims=True)
    return radius * proj / np.where(norms > 0, norms, 1.0), norms[:, 0]


class TextCrafter(LearnedMechanism):
    """TextCrafter privacy encoder: a learned, PII-guided perturbation of L2 radius ``radius``.

    Args:
        radius: ‖f_adv − f₀‖ (L2). Via PrivateEmbedding, radius = eps/√n.
        alpha, beta, gamma: reward weights (distance to f₀, PII probability, distance to the
            cluster centroid).
        n_clusters: k of the k-means cluster prior.
        token_dim, d_model, n_heads, ffn_dim: policy size (f₀ is cut into ⌈n/token_dim⌉ tokens).
        init_log_sigma: initial log σ of the Gaussian policy.
        epochs, batch_size, lr, ema_decay: REINFORCE settings (ema_decay = baseline decay ρ).
        pii_l2: L2 penalty of the PII classifier.
        device: torch device; default CUDA when available.
        random_state: None (secure noise) or an int seed (tests/benchmarks only).
        show_progress: tqdm bar over epochs.

    Attributes (after fit):
        n_features_in_, policy_, pii_classifier_, history_, encoder_fingerprint_.
    """

    name: ClassVar[str] = "textcrafter"
    metric: ClassVar[str] = "l2"
    _load_overrides = ("radius", "random_state", "device", "show_progress")

    def __init__(
        self,
        *,
        radius: float = 0.5,
        alpha: float = 1.0,
        beta: float = 1.0,
        gamma: float = 1.0,
        n_clusters: int = 8,
        token_dim: int = 32,
        d_model: int = 64,
        n_heads: int = 4,
        ffn_dim: int = 128,
        init_log_sigma: float = 0.0,
        epochs: int = 30,
        batch_size: int = 128,
        lr: float = 1e-3,
        ema_decay: float = 0.9,
        pii_l2: float = 1e-3,
        device: Any = None,
        random_state: Any = None,
        show_progress: bool = False,
    ) -> None:
        super().__init__(random_state=random_state)
        self.radius = check_positive_finite(radius, "radius")
        self.alpha, self.beta, self.gamma = check_non_negative_finite(alpha, "alpha"), check_non_negative_finite(beta, "beta"), check_non_negative_finite(gamma, "gamma")
        self.n_clusters = check_int(n_clusters, "n_clusters", minimum=1)
        self.token_dim = check_int(token_dim, "token_dim", minimum=1)
        self.d_model = check_int(d_model, "d_model", minimum=1)
        self.n_heads = check_int(n_heads, "n_heads", minimum=1)
        if self.d_model % self.n_heads:
            raise InvalidParameterError("n_heads", f"a divisor of d_model={self.d_model}", n_heads)
        self.ffn_dim = check_int(ffn_dim, "ffn_dim", minimum=1)
        if isinstance(init_log_sigma, bool) or not isinstance(init_log_sigma, (int, float)) or not math.isfinite(init_log_sigma):
            raise InvalidParameterError("init_log_sigma", "a finite number", init_log_sigma)
        self.init_log_sigma = float(init_log_sigma)
        self.epochs = check_int(epochs, "epochs", minimum=0)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.lr = check_positive_finite(lr, "lr")
        if isinstance(ema_decay, bool) or not isinstance(ema_decay, (int, float)) or not 0 <= ema_decay < 1:
            raise InvalidParameterError("ema_decay", "a number in [0, 1)", ema_decay)
        self.ema_decay = float(ema_decay)
        self.pii_l2 = check_non_negative_finite(pii_l2, "pii_l2")
        self.policy_: Any = None
        self.pii_classifier_: PIIClassifier | None = None
        self._init_learned(device, show_progress)

    @staticmethod
    def radius_from_eps(eps: float, n: int) -> float:
        """The L2 radius for the project's ε (unit 1/√n of L2): eps / √n."""
        return check_positive_finite(eps, "eps") / math.sqrt(check_int(n, "n", minimum=1))

    # -- inference -------------------------------------------------------------------
    def policy(self, X: Any) -> dict[str, np.ndarray]:
        """One forward pass: ``{"mu", "sigma", "v"}`` as float64 arrays (m, n); v has unit rows."""
        import torch

        self._require_fitted()
        mat, _ = as_float_matrix(X, "X", dim=self.n_features_in_)
        with torch.no_grad(), small_model_threads():
            mu, log_sigma, v = self.policy_(torch.as_tensor(mat, dtype=torch.float32, device=self.device))
        v64 = v.double().cpu().numpy()
        v64 /= np.linalg.norm(v64, axis=1, keepdims=True)
        return {"mu": mu.double().cpu().numpy(), "sigma": np.exp(log_sigma.detach().double().cpu().numpy()), "v": v64}

    def directions(self, X: Any) -> np.ndarray:
        """The unit direction v per row that the perturbation is orthogonal to."""
        return self.policy(X)["v"]

    def _perturb(self, X: np.ndarray, rng: RandomSource) -> np.ndarray:
        out = self.policy(X)
        m, n = X.shape
        delta = out["mu"] + out["sigma"] * rng.standard_normal((m, n))
        step, norms = orthogonal_step(delta, out["v"], self.radius)
        for _ in range(16):  # δ parallel to v has probability zero; redraw if it happens
            bad = norms <= 1e-12
            if not bad.any():
                break
            redo = out["mu"][bad] + out["sigma"][bad] * rng.standard_normal((int(bad.sum()), n))
            step[bad], norms[bad] = orthogonal_step(redo, out["v"][bad], self.radius)
        return X + step

    def _describe(self, n: int | None) -> dict[str, Any]:
        return {
            "radius": self.radius,
            "epsilon": None if n is None else self.radius * math.sqrt(n),
            "unit": None if n is None else 1 / math.sqrt(n),
            "distance": "euclidean (L2); ‖f_adv − f₀‖ = radius exactly, orthogonal to the learned direction v",
            "expected_noise_norm": self.radius,
            "noise_norm_rms": self.radius,
            "indistinguishability_radius": None,
            "guarantee": "none formal (empirical, PII-classifier guided; Tang et al. 2025); "
                         f"every perturbation has L2 norm {self.radius:g}",
            "reward": {"alpha": self.alpha, "beta": self.beta, "gamma": self.gamma},
        }

    def get_params(self) -> dict[str, Any]:
        return {
            "radius": self.radius, "alpha": self.alpha, "beta": self.beta, "gamma": self.gamma,
            "n_clusters": self.n_clusters, "token_dim": self.token_dim, "d_model": self.d_model,
            "n_heads": self.n_heads, "ffn_dim": self.ffn_dim, "init_log_sigma": self.init_log_sigma,
            "epochs": self.epochs, "batch_size": self.batch_size, "lr": self.lr,
            "ema_decay": self.ema_decay, "pii_l2": self.pii_l2,
        }

    def with_radius(self, radius: float) -> TextCrafter:
        """A copy sharing the trained policy with another radius."""
        self._require_fitted()
        other = TextCrafter(**{**self.get_params(), "radius": radius}, device=self.device, random_state=self.random_state)
        other.policy_, other.pii_classifier_ = self.policy_, self.pii_classifier_
        other.n_features_in_ = other.dim = self.n_features_in_
        other.encoder_fingerprint_, other.training_ = self.encoder_fingerprint_, dict(self.training_)
        return other

    # -- training --------------------------------------------------------------------
    def fit(self, X: Any, y: Any, *, encoder: Any = None) -> TextCrafter:
        """Train p_Φ on (X, y), the k-means prior on X, then the policy by REINFORCE.

        Args:
            X: clean embeddings (m, n) of PII and plain sentences.
            y: 1 = contains PII, 0 = plain (relabel first with :func:`~.pii_classifier.relabel_pii`).
            encoder: the encoder that produced ``X`` (its fingerprint is recorded).

        Returns:
            self.
        """
        with small_model_threads():
            return self._fit(X, y, encoder)

    def _fit(self, X: Any, y: Any, encoder: Any) -> TextCrafter:
        import torch

        mat, _ = as_float_matrix(X, "X")
        m, n = mat.shape
        yy = _binary_labels(y, m)
        gen = torch_generator(self.random_state)
        np_gen = np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        start = time.perf_counter()
        clf = PIIClassifier(l2=self.pii_l2).fit(mat, yy, random_state=int(np_gen.integers(2**31)))
        pii_seconds = time.perf_counter() - start
        centroids, assign = kmeans(mat, self.n_clusters, np_gen)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            policy = _build_policy(n, self.token_dim, self.d_model, self.n_heads, self.ffn_dim, self.init_log_sigma)
        policy.to(self.device)
        self.history_ = self._reinforce(policy, mat, centroids[assign], clf, gen)
        policy.eval()
        self.policy_, self.pii_classifier_ = policy, clf
        self.n_features_in_ = n
        self.dim = n
        self.training_ = {
            "n_samples": m, "n_pii": int(yy.sum()), "seconds": round(time.perf_counter() - start, 3),
            "pii_classifier_seconds": round(pii_seconds, 3), "device": self.device,
            "pii_classifier_train_accuracy": clf.score(mat, yy),
            "final": self.history_[-1] if self.history_ else {},
        }
        self._record_encoder(encoder)
        return self

    def _reinforce(self, policy: Any, X: np.ndarray, targets: np.ndarray, clf: PIIClassifier,
                   gen: Any) -> list[dict[str, float]]:
        import torch
        from tqdm.auto import tqdm

        dev = self.device
        Xt = torch.as_tensor(X, dtype=torch.float32)
        Tt = torch.as_tensor(targets, dtype=torch.float32)
        w = torch.as_tensor(clf.coef_, dtype=torch.float32, device=dev)
        b0 = float(clf.intercept_)
        opt = Adam(policy.parameters(), lr=self.lr)
        baseline: float | None = None
        history = []
        m = X.shape[0]
        for epoch in tqdm(range(self.epochs), desc="TextCrafter", disable=not self.show_progress):
            order = torch.randperm(m, generator=gen)
            sums = np.zeros(3)
            for lo in range(0, m, self.batch_size):
                idx = order[lo:lo + self.batch_size]
                f0, f_mu = Xt[idx].to(dev), Tt[idx].to(dev)
                mu, log_sigma, v = policy(f0)
                sigma = log_sigma.exp()
                noise = torch.randn(mu.shape, generator=gen).to(dev)
                delta = (mu + sigma * noise).detach()  # the sampled action
                log_prob = (-0.5 * ((delta - mu) / sigma) ** 2 - log_sigma).sum(1)
                proj = delta - (delta * v).sum(1, keepdim=True) * v
                step = self.radius * proj / proj.norm(dim=1, keepdim=True).clamp_min(1e-12)
                f_adv = f0 + step
                p_pii = torch.sigmoid(f_adv @ w + b0)
                reward = (-self.alpha * step.norm(dim=1) - self.beta * p_pii
                          - self.gamma * (f_adv - f_mu).norm(dim=1))
                r_mean = float(reward.detach().mean())
                baseline = r_mean if baseline is None else baseline
                advantage = reward.detach() - baseline
                # REINFORCE for μ, σ (score function) + exact pathwise gradient for v
                loss = -(advantage * log_prob).mean() / n_norm(mu) - reward.mean()
                opt.zero_grad()
                loss.backward()
                clip_grad_norm(opt.params, 1.0)
                opt.step()
                baseline = self.ema_decay * baseline + (1 - self.ema_decay) * r_mean
                k = len(idx)
                with torch.no_grad():
                    sums += k * np.array([r_mean, float(p_pii.mean()), float((f_adv - f_mu).norm(dim=1).mean())])
            s = sums / m
            history.append({"epoch": epoch + 1, "reward": float(s[0]), "p_pii": float(s[1]),
                            "dist_to_centroid": float(s[2]),
                            "baseline": float(baseline or 0.0)})
        return history

    def mean_reward(self, X: Any, *, rng: RandomSource | None = None) -> dict[str, float]:
        """Average PII probability of perturbed ``X`` under p_Φ — an evaluation helper."""
        if self.pii_classifier_ is None:
            raise NotFittedError("TextCrafter is not fitted yet")
        adv = np.asarray(self.perturb(np.asarray(X), rng=rng), dtype=np.float64)
        return {"p_pii_clean": float(np.mean(self.pii_classifier_.predict_proba(X))),
                "p_pii_perturbed": float(np.mean(self.pii_classifier_.predict_proba(adv)))}

    # -- persistence -----------------------------------------------------------------
    def _artefact(self) -> tuple[dict[str, Any], dict[str, Any]]:
        import torch

        assert self.pii_classifier_ is not None and self.pii_classifier_.coef_ is not None
        tensors = {f"policy.{k}": v for k, v in self.policy_.state_dict().items()}
        tensors["pii.coef"] = torch.as_tensor(self.pii_classifier_.coef_, dtype=torch.float64)
        tensors["pii.intercept"] = torch.tensor([self.pii_classifier_.intercept_], dtype=torch.float64)
        return {}, tensors

    def _restore(self, config: dict[str, Any], tensors: dict[str, Any]) -> None:
        n = int(config["n_features_in"])
        policy = _build_policy(n, self.token_dim, self.d_model, self.n_heads, self.ffn_dim, self.init_log_sigma)
        policy.load_state_dict({k[len("policy."):]: v for k, v in tensors.items() if k.startswith("policy.")}, strict=True)
        policy.to(self.device).eval()
        clf = PIIClassifier(l2=self.pii_l2)
        clf.coef_ = tensors["pii.coef"].numpy().astype(np.float64)
        clf.intercept_ = float(tensors["pii.intercept"][0])
        clf.n_features_in_ = n
        self.policy_, self.pii_classifier_ = policy, clf
        self.n_features_in_ = n
        self.dim = n


def n_norm(mu: Any) -> float:
    """Scale of the score-function term: the log-density sums over n coordinates, so divide by √n."""
    return math.sqrt(mu.shape[1])
