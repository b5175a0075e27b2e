"""CAPE: Context-Aware Private Embeddings (Plant, Gkatzia & Giuffrida, EMNLP 2021).

On top of a frozen sentence encoder, CAPE learns a projection head g; a text's stored
vector is

    x̃ = g(f₀) / ‖g(f₀)‖₁ + Lap(0, Δf/ε)^d,   Δf = 2,

i.e. the Laplace mechanism on the L1-normalised projection. Any two L1-normalised vectors
are at most 2 apart in L1 (the corrected sensitivity the paper adopts from Maheshwari et
al.), so every stored vector is pure ε-local-DP with respect to *any* other input text.
The noise is drawn fresh for every input and every call (the public CAPE code draws it
once, when the graph is built; we do not).

Training (paper Alg. 1, eq. 3): the head is trained with a task head P(y|x̃) and, behind
a gradient-reversal layer (Ganin & Lempitsky 2015), an adversarial head P(z|x̃) on a
private attribute z, on noisy x̃ (noise also fresh per batch):

    L = −log P(y|x̃) − λ·log P(¬z|x̃)

realised as: the adversary minimises −log P(z|x̃); the reversed gradient (scaled by λ)
makes the projection head maximise it, i.e. hide z *from that adversary*. As is known for
adversarial removal (Elazar & Goldberg 2018), a freshly trained probe may still recover z;
benchmarks/learned_training.py reports both. Queries go through the same head and
L1 normalisation without noise (:meth:`CapeEncoder.transform_query`): the head defines a
new vector space of dimension ``out_dim``.

The shipped artefact for all-MiniLM-L6-v2 is trained on Pri-DDXPlus vignettes with task
y = diagnosis and private attribute z = sex × age band (see benchmarks/learned_training.py).
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
from .learned import Adam, LearnedMechanism, small_model_threads, torch_generator

__all__ = ["SENSITIVITY", "CapeEncoder", "laplace_noise"]

SENSITIVITY = 2.0
"""L1 sensitivity Δf of an L1-normalised vector (Maheshwari et al., as adopted by CAPE)."""


def laplace_noise(rng: RandomSource, size: tuple[int, int], scale: float) -> np.ndarray:
    """Laplace(0, scale) variates as a difference of two unit exponentials.

    E = −log(1 − U) with U uniform on [0, 1) is finite and Exp(1); E₁ − E₂ is Laplace(0, 1).
    Uses only ``rng.random`` so keyed streams work.
    """
    e1 = -np.log1p(-rng.random(size))
    e2 = -np.log1p(-rng.random(size))
    return scale * (e1 - e2)


def _l1_normalize_np(H: np.ndarray) -> np.ndarray:
    norms = np.abs(H).sum(axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return H / norms


def _encode_labels(values: Any, name: str, m: int) -> tuple[np.ndarray, list[Any]]:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != m:
        raise InvalidParameterError(name, f"a 1-d array of {m} labels (one per row of X)", values)
    classes, idx = np.unique(arr, return_inverse=True)
    if len(classes) < 2:
        raise InvalidParameterError(name, "at least two distinct labels", values)
    return idx.astype(np.int64), [c.item() if hasattr(c, "item") else c for c in classes]


def _build_modules(n: int, out_dim: int, hidden: int, n_y: int, n_z: int) -> Any:
    import torch
    from torch import nn

    class _GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor, lam: float) -> torch.Tensor:
            ctx.lam = lam
            return x.view_as(x)

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
            return -ctx.lam * grad, None

    class _Scale(nn.Module):
        def __init__(self, factor: float) -> None:
            super().__init__()
            self.factor = float(factor)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.factor

    class _Cape(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.projection = nn.Linear(n, out_dim)
            # L1-normalised entries are O(1/out_dim); the heads see out_dim·x̃ (a fixed rescaling,
            # post-processing of the private vector) so they train at a usual scale.
            self.task = nn.Sequential(_Scale(out_dim), nn.Linear(out_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_y))
            self.adversary = nn.Sequential(_Scale(out_dim), nn.Linear(out_dim, hidden), nn.ReLU(),
                                           nn.Linear(hidden, n_z))

        def project(self, x: torch.Tensor) -> torch.Tensor:
            h = self.projection(x)
            return h / h.abs().sum(dim=1, keepdim=True).clamp_min(1e-12)

        @staticmethod
        def reverse(x: torch.Tensor, lam: float) -> torch.Tensor:
            return _GradReverse.apply(x, lam)

    return _Cape()


class CapeEncoder(LearnedMechanism):
    """CAPE privacy encoder: projection head + L1 normalisation + Laplace(2/ε) noise.

    Args:
        epsilon: privacy budget of the Laplace mechanism (scale 2/ε per coordinate); pure
            ε-LDP of each stored vector against any other text.
        out_dim: dimension of the projected (stored) vectors.
        hidden_dim: width of the task and adversary heads.
        lambda_adv: weight λ of the adversarial term (0 disables it).
        epochs, batch_size, lr, weight_decay: training settings.
        adversary_steps: adversary updates per batch (1 = plain simultaneous GRL training as in
            the paper; more approximates the inner maximisation better).
        train_epsilon: ε of the noise used during training (default: ``epsilon``).
        device: torch device; default CUDA when available.
        random_state: None (secure noise) or an int seed (tests/benchmarks only; also seeds
            weight init and batch order).
        show_progress: tqdm bar over epochs.

    Attributes (after fit):
        n_features_in_, classes_y_, classes_z_, module_, history_, encoder_fingerprint_.
    """

    name: ClassVar[str] = "cape"
    metric: ClassVar[str] = "l1"
    _load_overrides = ("epsilon", "random_state", "device", "show_progress")

    def __init__(
        self,
        *,
        epsilon: float = 10.0,
        out_dim: int = 128,
        hidden_dim: int = 128,
        lambda_adv: float = 1.0,
        epochs: int = 30,
        batch_size: int = 64,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        adversary_steps: int = 1,
        train_epsilon: float | None = None,
        device: Any = None,
        random_state: Any = None,
        show_progress: bool = False,
    ) -> None:
        super().__init__(random_state=random_state)
        self.epsilon = check_positive_finite(epsilon, "epsilon")
        self.out_dim = check_int(out_dim, "out_dim", minimum=1)
        self.hidden_dim = check_int(hidden_dim, "hidden_dim", minimum=1)
        self.lambda_adv = check_non_negative_finite(lambda_adv, "lambda_adv")
        self.epochs = check_int(epochs, "epochs", minimum=1)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.lr = check_positive_finite(lr, "lr")
        self.weight_decay = check_non_negative_finite(weight_decay, "weight_decay")
        self.adversary_steps = check_int(adversary_steps, "adversary_steps", minimum=1)
        self.train_epsilon = None if train_epsilon is None else check_positive_finite(train_epsilon, "train_epsilon")
        self.module_: Any = None
        self.classes_y_: list[Any] = []
        self.classes_z_: list[Any] = []
        self._init_learned(device, show_progress)

    # -- the mechanism ---------------------------------------------------------------
    @property
    def scale(self) -> float:
        """Laplace scale per coordinate: Δf/ε = 2/ε."""
        return SENSITIVITY / self.epsilon

    def output_dim(self, n: int) -> int:
        return self.out_dim

    def _project(self, X: np.ndarray) -> np.ndarray:
        """Projection head + L1 normalisation (float64), no noise."""
        import torch

        with torch.no_grad(), small_model_threads():
            xt = torch.as_tensor(X, dtype=torch.float32, device=self.device)
            h = self.module_.projection(xt).double().cpu().numpy()
        return _l1_normalize_np(h)

    def _perturb(self, X: np.ndarray, rng: RandomSource) -> np.ndarray:
        H = self._project(X)
        return H + laplace_noise(rng, H.shape, self.scale)

    def transform_query(self, X: Any) -> np.ndarray:
        """Queries: the projection head and L1 normalisation, no noise (post-processing)."""
        self._require_fitted()
        mat, single = as_float_matrix(X, "X", dim=self.n_features_in_)
        out = self._project(mat).astype(np.float32)
        return out[0] if single else out

    def _describe(self, n: int | None) -> dict[str, Any]:
        d = self.out_dim
        return {
            "epsilon": self.epsilon,
            "sensitivity_l1": SENSITIVITY,
            "laplace_scale": self.scale,
            "output_dim": d,
            "distance": "any two texts (L1 sensitivity 2 after L1 normalisation)",
            "expected_noise_norm": self.scale * math.sqrt(2 * d),
            "noise_norm_rms": self.scale * math.sqrt(2 * d),
            "indistinguishability_radius": "unbounded (pure epsilon-LDP between any two inputs)",
            "guarantee": f"pure {self.epsilon:g}-LDP per stored vector: Laplace(2/eps) on the "
                         "L1-normalised projection (Plant et al. 2021); queries are projected without noise",
            "private_attribute_classes": list(self.classes_z_),
            "task_classes": len(self.classes_y_),
        }

    def get_params(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon, "out_dim": self.out_dim, "hidden_dim": self.hidden_dim,
            "lambda_adv": self.lambda_adv, "epochs": self.epochs, "batch_size": self.batch_size,
            "lr": self.lr, "weight_decay": self.weight_decay, "adversary_steps": self.adversary_steps,
            "train_epsilon": self.train_epsilon,
        }

    def with_epsilon(self, epsilon: float) -> CapeEncoder:
        """A copy sharing the trained weights with another ε (noise scale 2/ε)."""
        self._require_fitted()
        other = CapeEncoder(**{**self.get_params(), "epsilon": epsilon}, device=self.device,
                            random_state=self.random_state)
        other._adopt(self)
        return other

    def _adopt(self, src: CapeEncoder) -> None:
        self.module_ = src.module_
        self.n_features_in_ = src.n_features_in_
        self.dim = src.n_features_in_
        self.classes_y_, self.classes_z_ = list(src.classes_y_), list(src.classes_z_)
        self.encoder_fingerprint_ = src.encoder_fingerprint_
        self.training_ = dict(src.training_)

    # -- training --------------------------------------------------------------------
    def fit(self, X: Any, y: Any, z: Any, *, encoder: Any = None) -> CapeEncoder:
        """Train the projection, task and adversary heads (paper Alg. 1).

        Args:
            X: clean encoder embeddings (m, n).
            y: task labels (m,), any hashable values.
            z: private-attribute labels (m,) the adversary tries to predict and the head hides.
            encoder: the encoder that produced ``X``; its fingerprint is recorded so a saved
                artefact refuses another encoder.

        Returns:
            self.
        """
        with small_model_threads():
            return self._fit(X, y, z, encoder)

    def _fit(self, X: Any, y: Any, z: Any, encoder: Any) -> CapeEncoder:
        import torch
        from torch.nn import functional as nnf
        from tqdm.auto import tqdm

        mat, _ = as_float_matrix(X, "X")
        m, n = mat.shape
        yi, self.classes_y_ = _encode_labels(y, "y", m)
        zi, self.classes_z_ = _encode_labels(z, "z", m)
        gen = torch_generator(self.random_state)
        torch_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            module = _build_modules(n, self.out_dim, self.hidden_dim, len(self.classes_y_), len(self.classes_z_))
        module.to(self.device)
        opt = Adam(module.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        adv_opt = Adam(module.adversary.parameters(), lr=self.lr)
        Xt = torch.as_tensor(mat, dtype=torch.float32)
        yt, zt = torch.as_tensor(yi), torch.as_tensor(zi)
        train_scale = SENSITIVITY / (self.train_epsilon or self.epsilon)

        def lap(shape: Any) -> torch.Tensor:  # Laplace as a difference of exponentials, seeded generator
            e = -torch.log1p(-torch.rand((2, *shape), generator=gen))
            return (train_scale * (e[0] - e[1])).to(self.device)

        self.history_ = []
        start = time.perf_counter()
        for epoch in tqdm(range(self.epochs), desc="CAPE", disable=not self.show_progress):
            order = torch.randperm(m, generator=gen)
            totals = np.zeros(4)
            for lo in range(0, m, self.batch_size):
                idx = order[lo:lo + self.batch_size]
                xb, yb, zb = Xt[idx].to(self.device), yt[idx].to(self.device), zt[idx].to(self.device)
                h = module.project(xb)
                noise = lap(h.shape)  # fresh Laplace noise for every input
                x_tilde = h + noise
                task_logits = module.task(x_tilde)
                adv_logits = module.adversary(module.reverse(x_tilde, self.lambda_adv))
                task_loss = nnf.cross_entropy(task_logits, yb)
                adv_loss = nnf.cross_entropy(adv_logits, zb)
                loss = task_loss + adv_loss  # reversed, λ-scaled gradient reaches the projection
                opt.zero_grad()
                loss.backward()
                opt.step()
                for _ in range(self.adversary_steps - 1):  # extra adversary-only updates (inner max)
                    with torch.no_grad():
                        x_fixed = module.project(xb) + lap(h.shape)
                    extra = nnf.cross_entropy(module.adversary(x_fixed), zb)
                    adv_opt.zero_grad()
                    extra.backward()
                    adv_opt.step()
                k = len(idx)
                totals += k * np.array([
                    task_loss.item(), adv_loss.item(),
                    (task_logits.argmax(1) == yb).float().mean().item(),
                    (adv_logits.argmax(1) == zb).float().mean().item()])
            t = totals / m
            self.history_.append({"epoch": epoch + 1, "task_loss": float(t[0]), "adversary_loss": float(t[1]),
                                  "task_accuracy": float(t[2]), "adversary_accuracy": float(t[3])})
        module.eval()
        self.module_ = module
        self.n_features_in_ = n
        self.dim = n
        self.training_ = {"n_samples": m, "seconds": round(time.perf_counter() - start, 3),
                          "device": self.device, "final": self.history_[-1]}
        self._record_encoder(encoder)
        return self

    def predict_task(self, X: Any, *, rng: RandomSource | None = None) -> np.ndarray:
        """Task-head predictions (labels) on freshly noised vectors — an evaluation helper."""
        return self._heads(X, rng, "task", self.classes_y_)

    def predict_private(self, X: Any, *, rng: RandomSource | None = None) -> np.ndarray:
        """Adversary-head predictions of the private attribute on freshly noised vectors."""
        return self._heads(X, rng, "adversary", self.classes_z_)

    def _heads(self, X: Any, rng: RandomSource | None, head: str, classes: list[Any]) -> np.ndarray:
        import torch

        noisy = np.asarray(self.perturb(np.asarray(X), rng=rng), dtype=np.float32)
        with torch.no_grad(), small_model_threads():
            logits = getattr(self.module_, head)(torch.as_tensor(noisy, device=self.device).reshape(-1, self.out_dim))
        return np.asarray(classes, dtype=object)[logits.argmax(1).cpu().numpy()]

    # -- persistence -----------------------------------------------------------------
    def _artefact(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return ({"classes_y": self.classes_y_, "classes_z": self.classes_z_},
                dict(self.module_.state_dict()))

    def _restore(self, config: dict[str, Any], tensors: dict[str, Any]) -> None:
        n = int(config["n_features_in"])
        self.classes_y_, self.classes_z_ = list(config["classes_y"]), list(config["classes_z"])
        module = _build_modules(n, self.out_dim, self.hidden_dim, len(self.classes_y_), len(self.classes_z_))
        module.load_state_dict(tensors, strict=True)
        module.to(self.device).eval()
        self.module_ = module
        self.n_features_in_ = n
        self.dim = n
