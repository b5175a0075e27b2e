"""Attribute erasure: affine maps that remove what vectors reveal about a label.

Every eraser here learns a short sequence of low-rank affine *steps*

    x ← x − L·R·(x − b)          (L: n×k, R: k×n, b: n)

applied in order, so a fitted eraser is a few small float arrays that are saved in
safetensors and applied with numpy (no torch, no pickle at load time).

* :class:`LeaceErasure` — LEACE (Belrose et al., "LEACE: Perfect linear concept erasure
  in closed form", NeurIPS 2023) through ``concept_erasure.LeaceFitter``: after erasure
  the class-conditional means are equal, so no *linear* probe beats a constant.
* :class:`ClusterLeaceErasure` — this project's piecewise extension: LEACE against the
  global label **and** the label's deviation inside each of K k-means regions
  (z_ik = (onehot(z_i) − p̂(z | k)) · 1[i ∈ k]), re-clustered and repeated ``n_iter`` times.
  Afterwards class means are equal globally and inside every region (on the fitting
  data), which also defeats probes that switch between linear rules by region — the way
  an MLP reads an attribute off a few symptom clusters. Region means themselves are left
  alone (they are orthogonal to the within-region columns), so cluster structure — here the
  diagnosis — is kept.
* :class:`AdversarialErasure` — LEACE, then a rank-r orthogonal projection x − UUᵀ(x − μ)
  learned against an MLP adversary with a gradient-reversal layer (the adversarial objective of
  CAPE, Plant et al. EMNLP 2021, applied as a linear map on the frozen encoder; close to
  R-LACE, Ravfogel et al. ICML 2022, with a non-linear adversary).
* :class:`RegionLeaceErasure` — the concept matrix of :class:`ClusterLeaceErasure` with the
  regions given by a task label at fitting time (e.g. the diagnosis) instead of k-means; one
  affine step, so the task label is not needed afterwards.
* :class:`TaskProjectionErasure` — keep only what a task label needs: the orthogonal projection
  onto the task's discriminant directions (Fisher 1936; LDA with Ledoit–Wolf shrinkage), filled
  up to ``rank`` with the leading principal directions of the rest, then LEACE.

Every method ends with, or contains, LEACE's constraint on the global label, so the class means
of the attribute are equal on the fitting data after any of them (no linear predictor beats a
constant there). Non-linear attackers are not bounded by any of them; what they read is measured
(:mod:`private_vectors.fitted.measured`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._validation import (
    as_float_matrix,
    check_int,
    check_non_negative_finite,
    check_positive_finite,
)
from ..errors import Described, InvalidParameterError, InvalidTypeError, require

__all__ = [
    "ERASURE_METHODS",
    "AdversarialErasure",
    "ClusterLeaceErasure",
    "Erasure",
    "LeaceErasure",
    "RegionLeaceErasure",
    "TaskProjectionErasure",
    "apply_steps",
    "encode_labels",
    "make_erasure",
]

Step = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(left (n, k), right (k, n), bias (n,)): x ← x − ((x − bias) @ rightᵀ) @ leftᵀ."""


def apply_steps(X: np.ndarray, steps: list[Step]) -> np.ndarray:
    """Apply affine erasure steps in order (float64 arithmetic, same shape out)."""
    out = np.asarray(X, dtype=np.float64)
    for left, right, bias in steps:
        out = out - ((out - bias) @ right.T) @ left.T
    return out


def encode_labels(labels: Any, m: int, name: str = "labels") -> tuple[np.ndarray, list[Any]]:
    """Integer codes (m,) and sorted class list; refuses NaN/None, a wrong length or < 2 classes."""
    if isinstance(labels, (str, bytes)) or labels is None:
        raise InvalidTypeError(name, "a sequence of class labels, one per text", labels)
    items = list(np.asarray(labels).tolist()) if hasattr(labels, "shape") else list(labels)
    if len(items) != m:
        raise InvalidParameterError(name, f"{m} labels (one per text/vector)", labels, note=f"got {len(items)}")
    for i, v in enumerate(items):
        if v is None or (isinstance(v, float) and not np.isfinite(v)) or not isinstance(v, (str, int, np.integer, bool)):
            raise InvalidParameterError(f"{name}[{i}]", "a str or int class label", v)
    classes = sorted(set(items), key=lambda v: (str(type(v)), v))
    if len(classes) < 2:
        raise InvalidParameterError(name, "at least two distinct classes", classes)
    index = {c: j for j, c in enumerate(classes)}
    return np.asarray([index[v] for v in items], dtype=np.int64), classes


def _one_hot(codes: np.ndarray, c: int) -> np.ndarray:
    out = np.zeros((len(codes), c))
    out[np.arange(len(codes)), codes] = 1.0
    return out


def _leace_step(X: np.ndarray, Z: np.ndarray, svd_tol: float) -> Step | None:
    """One LEACE step for concept matrix Z via concept_erasure; None when nothing is erased."""
    import torch

    LeaceFitter = require("concept_erasure", "fitting a LEACE erasure needs concept-erasure: "
                          "pip install 'private-vectors[fit]'").LeaceFitter

    x = torch.as_tensor(X, dtype=torch.float64)
    z = torch.as_tensor(Z, dtype=torch.float64)
    eraser = LeaceFitter.fit(x, z, svd_tol=svd_tol).eraser
    left = eraser.proj_left.numpy()
    right = eraser.proj_right.numpy()
    bias = eraser.bias.numpy() if eraser.bias is not None else np.zeros(X.shape[1])
    keep = (np.linalg.norm(left, axis=0) > 1e-10) & (np.linalg.norm(right, axis=1) > 1e-10)
    if not np.any(keep):
        return None
    return left[:, keep].copy(), right[keep].copy(), bias.copy()


class Erasure:
    """Base class: ``fit(X, z)`` returns self; ``transform(X)`` applies the learned steps.

    Methods that need a task label to fit (``needs_task_labels``) take it as ``fit(X, z, y=...)``;
    the fitted map never needs it.

    Attributes (after fit):
        steps_: list of (left, right, bias) affine steps; n_features_in_; classes_; rank_ (sum of k).
    """

    method: ClassVar[str] = ""
    needs_task_labels: ClassVar[bool] = False

    def __init__(self) -> None:
        self.steps_: list[Step] = []
        self.n_features_in_: int | None = None
        self.classes_: list[Any] = []

    @property
    def rank_(self) -> int:
        return int(sum(s[0].shape[1] for s in self.steps_))

    def fit(self, X: Any, z: Any, y: Any = None) -> Erasure:
        """Fit on vectors X (m, n) and attribute labels z (m,); ``y``: task labels (m,), for the
        methods that need them (refused by the others). Returns self."""
        mat, _ = as_float_matrix(X, "X")
        if mat.shape[0] < 4:
            raise InvalidParameterError("X", "at least 4 vectors", X)
        codes, self.classes_ = encode_labels(z, mat.shape[0], "z")
        if self.needs_task_labels and y is None:
            raise InvalidParameterError("task_labels", f"a task label per vector for method {self.method!r}", None)
        if not self.needs_task_labels and y is not None:
            raise InvalidParameterError("task_labels", f"None for method {self.method!r} (it uses no task label; "
                                        "'region-leace' and 'task-projection' do)", Described("task labels"))
        self.n_features_in_ = mat.shape[1]
        if self.needs_task_labels:
            task, _ = encode_labels(y, mat.shape[0], "task_labels")
            self.steps_ = self._fit_task(mat, codes, len(self.classes_), task)
        else:
            self.steps_ = self._fit(mat, codes, len(self.classes_))
        return self

    def _fit(self, X: np.ndarray, codes: np.ndarray, c: int) -> list[Step]:
        raise NotImplementedError

    def _fit_task(self, X: np.ndarray, codes: np.ndarray, c: int, task: np.ndarray) -> list[Step]:
        raise NotImplementedError

    def transform(self, X: Any) -> np.ndarray:
        """Erase: (n,) or (m, n) in, float32 of the same shape out."""
        if self.n_features_in_ is None:
            raise InvalidParameterError("eraser", "a fitted eraser (call fit first)", self)
        mat, single = as_float_matrix(X, "X", dim=self.n_features_in_)
        out = apply_steps(mat, self.steps_).astype(np.float32)
        return out[0] if single else out

    def get_params(self) -> dict[str, Any]:
        return {}


class LeaceErasure(Erasure):
    """LEACE (Belrose et al. 2023), fitted with concept-erasure's ``LeaceFitter``.

    Args:
        svd_tol: singular values of the whitened cross-covariance below this are kept
            (concept-erasure's default 0.01).
    """

    method: ClassVar[str] = "leace"

    def __init__(self, *, svd_tol: float = 0.01) -> None:
        super().__init__()
        self.svd_tol = check_positive_finite(svd_tol, "svd_tol")

    def _fit(self, X: np.ndarray, codes: np.ndarray, c: int) -> list[Step]:
        step = _leace_step(X, _one_hot(codes, c), self.svd_tol)
        return [] if step is None else [step]

    def get_params(self) -> dict[str, Any]:
        return {"svd_tol": self.svd_tol}


def _kmeans(X: np.ndarray, k: int, seed: int, iters: int = 50) -> np.ndarray:
    """Cluster assignments from k-means++ (Arthur & Vassilvitskii 2007) + Lloyd iterations."""
    rng = np.random.default_rng(seed)
    m = X.shape[0]
    k = min(k, m)
    centres = [X[rng.integers(m)]]
    d2 = np.sum((X - centres[0]) ** 2, axis=1)
    for _ in range(1, k):
        total = d2.sum()
        idx = int(rng.choice(m, p=d2 / total)) if total > 0 else int(rng.integers(m))
        centres.append(X[idx])
        d2 = np.minimum(d2, np.sum((X - X[idx]) ** 2, axis=1))
    C = np.asarray(centres)
    assign = np.zeros(m, dtype=np.int64)
    for it in range(iters):
        dist = (X ** 2).sum(1)[:, None] - 2 * X @ C.T + (C ** 2).sum(1)[None, :]
        new = dist.argmin(1)
        if it and np.array_equal(new, assign):
            break
        assign = new
        for j in range(k):
            members = X[assign == j]
            if len(members):
                C[j] = members.mean(0)
    return assign


def region_concept_matrix(codes: np.ndarray, c: int, regions: np.ndarray, min_size: int) -> np.ndarray:
    """[onehot − p̂, per region r with ≥ ``min_size`` members: (onehot − p̂(·|r))·1[r]].

    After LEACE against these columns the attribute's class means are equal globally and
    inside every such region (on the fitting data); the region means themselves are orthogonal
    to the within-region columns and are kept.
    """
    Y = _one_hot(codes, c)
    cols = [Y - Y.mean(0)]
    for j in np.unique(regions):
        inside = regions == j
        if inside.sum() < min_size:
            continue
        block = np.zeros_like(Y)
        block[inside] = Y[inside] - Y[inside].mean(0)
        cols.append(block)
    return np.hstack(cols)


class ClusterLeaceErasure(Erasure):
    """LEACE against the label globally and inside each k-means region, iterated.

    Args:
        n_clusters: regions K per iteration.
        n_iter: rounds of (cluster the current vectors → erase); each adds rank ≤ (K + 1)(C − 1).
        min_cluster: regions with fewer members are merged into the global column (their
            within-region means are too noisy to erase).
        svd_tol: as in :class:`LeaceErasure`.
        random_state: seed of k-means (an int: fitting is not privacy noise).
    """

    method: ClassVar[str] = "cluster-leace"

    def __init__(self, *, n_clusters: int = 16, n_iter: int = 2, min_cluster: int = 10, svd_tol: float = 0.01,
                 random_state: int = 0) -> None:
        super().__init__()
        self.n_clusters = check_int(n_clusters, "n_clusters", minimum=1)
        self.n_iter = check_int(n_iter, "n_iter", minimum=1)
        self.min_cluster = check_int(min_cluster, "min_cluster", minimum=2)
        self.svd_tol = check_positive_finite(svd_tol, "svd_tol")
        self.random_state = check_int(random_state, "random_state", minimum=0)

    def concept_matrix(self, X: np.ndarray, codes: np.ndarray, c: int, seed: int) -> np.ndarray:
        """[onehot − p̂, per region k: (onehot − p̂(·|k))·1[k]] for the current vectors."""
        return region_concept_matrix(codes, c, _kmeans(X, self.n_clusters, seed), self.min_cluster)

    def _fit(self, X: np.ndarray, codes: np.ndarray, c: int) -> list[Step]:
        steps: list[Step] = []
        cur = X
        for it in range(self.n_iter):
            step = _leace_step(cur, self.concept_matrix(cur, codes, c, self.random_state + it), self.svd_tol)
            if step is None:
                break
            steps.append(step)
            cur = apply_steps(cur, [step])
        return steps

    def get_params(self) -> dict[str, Any]:
        return {"n_clusters": self.n_clusters, "n_iter": self.n_iter, "min_cluster": self.min_cluster,
                "svd_tol": self.svd_tol, "random_state": self.random_state}


class AdversarialErasure(Erasure):
    """LEACE, then a rank-r projection x − UUᵀ(x − μ) trained against an MLP adversary (gradient reversal).

    The adversary (MLP, one hidden layer) minimises cross-entropy on the projected vectors;
    the reversed gradient moves U to maximise it (CAPE's eq. 3 without the task term, the
    map restricted to an orthogonal projection so that everything outside span U is kept
    exactly). U is the Q factor of a free matrix (random start). LEACE runs first so the
    linear guarantee holds whatever the adversarial step converges to (without it, the
    learned U drifted off the linear direction in the tests).

    Args:
        rank: r, the number of directions removed.
        hidden: adversary width.
        epochs: training epochs.
        lr: learning rate.
        batch_size: training batch size.
        random_state: seed (weights and batches).
    """

    method: ClassVar[str] = "adversarial"

    def __init__(self, *, rank: int = 16, hidden: int = 128, epochs: int = 60, lr: float = 1e-2,
                 batch_size: int = 128, weight_decay: float = 0.0, random_state: int = 0) -> None:
        super().__init__()
        self.rank = check_int(rank, "rank", minimum=1)
        self.hidden = check_int(hidden, "hidden", minimum=1)
        self.epochs = check_int(epochs, "epochs", minimum=1)
        self.lr = check_positive_finite(lr, "lr")
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.weight_decay = check_non_negative_finite(weight_decay, "weight_decay")
        self.random_state = check_int(random_state, "random_state", minimum=0)
        self.history_: list[float] = []

    def _fit(self, X: np.ndarray, codes: np.ndarray, c: int) -> list[Step]:
        import torch
        from torch import nn

        n = X.shape[1]
        if self.rank >= n:
            raise InvalidParameterError("rank", f"an integer < the dimension {n}", self.rank)
        lstep = _leace_step(X, _one_hot(codes, c), 0.01)  # linear erasure first, kept exactly
        if lstep is not None:
            X = apply_steps(X, [lstep])
        mu = X.mean(0)
        init = np.random.default_rng(self.random_state).standard_normal((n, self.rank))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.random_state)
            free = nn.Parameter(torch.as_tensor(init, dtype=torch.float32))
            adv = nn.Sequential(nn.Linear(n, self.hidden), nn.ReLU(), nn.Linear(self.hidden, c))
            xt = torch.as_tensor(X - mu, dtype=torch.float32)
            zt = torch.as_tensor(codes)
            opt_u = torch.optim.Adam([free], lr=self.lr)
            opt_a = torch.optim.Adam(adv.parameters(), lr=1e-3, weight_decay=self.weight_decay)
            loss_fn = nn.CrossEntropyLoss()
            gen = torch.Generator().manual_seed(self.random_state)
            self.history_ = []
            for _ in range(self.epochs):
                order = torch.randperm(len(xt), generator=gen)
                total = 0.0
                for lo in range(0, len(xt), self.batch_size):
                    idx = order[lo:lo + self.batch_size]
                    U, _ = torch.linalg.qr(free)
                    xb = xt[idx]
                    proj = xb - (xb @ U) @ U.T
                    # adversary step on detached projections (inner max), then the map step (reversed)
                    a_loss = loss_fn(adv(proj.detach()), zt[idx])
                    opt_a.zero_grad()
                    a_loss.backward()
                    opt_a.step()
                    u_loss = -loss_fn(adv(proj), zt[idx])
                    opt_u.zero_grad()
                    u_loss.backward()
                    opt_u.step()
                    total += a_loss.item() * len(idx)
                self.history_.append(total / len(xt))
            U, _ = torch.linalg.qr(free.detach())
        u = U.double().numpy()
        return [*([] if lstep is None else [lstep]), (u.copy(), u.T.copy(), mu.copy())]

    def get_params(self) -> dict[str, Any]:
        return {"rank": self.rank, "hidden": self.hidden, "epochs": self.epochs, "lr": self.lr,
                "batch_size": self.batch_size, "weight_decay": self.weight_decay, "random_state": self.random_state}


class RegionLeaceErasure(Erasure):
    """LEACE against the attribute globally and inside each task-label region (one affine step).

    The concept matrix of :class:`ClusterLeaceErasure` (:func:`region_concept_matrix`) with the
    regions given by the task label ``y`` at fitting time instead of k-means; the map is one
    affine step applied to every vector, so ``y`` is not needed afterwards.

    Args:
        min_region: regions with fewer members are left to the global column.
        svd_tol: as in :class:`LeaceErasure`.
    """

    method: ClassVar[str] = "region-leace"
    needs_task_labels: ClassVar[bool] = True

    def __init__(self, *, min_region: int = 10, svd_tol: float = 0.01) -> None:
        super().__init__()
        self.min_region = check_int(min_region, "min_region", minimum=2)
        self.svd_tol = check_positive_finite(svd_tol, "svd_tol")

    def _fit_task(self, X: np.ndarray, codes: np.ndarray, c: int, task: np.ndarray) -> list[Step]:
        step = _leace_step(X, region_concept_matrix(codes, c, task, self.min_region), self.svd_tol)
        return [] if step is None else [step]

    def get_params(self) -> dict[str, Any]:
        return {"min_region": self.min_region, "svd_tol": self.svd_tol}


def task_basis(X: np.ndarray, task: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """(orthonormal basis (n, rank), mean (n,)): the task's discriminant directions, then the
    leading principal directions of what they leave.

    Discriminant directions: LDA (Fisher 1936) with Ledoit–Wolf shrinkage of the within-class
    covariance (scikit-learn's ``LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto")``),
    at most (number of task classes − 1) of them; orthonormalised, then filled up to ``rank`` with
    the right singular vectors of the centred residual.
    """
    lda = require("sklearn.discriminant_analysis", "fitting a task projection needs scikit-learn: pip install "
                  "'private-vectors[fit]'").LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(X, task)
    W = lda.scalings_[:, : len(np.unique(task)) - 1]
    Q, _ = np.linalg.qr(W)
    mu = X.mean(0)
    if rank > Q.shape[1]:
        R = (X - mu) - ((X - mu) @ Q) @ Q.T
        _, _, Vt = np.linalg.svd(R, full_matrices=False)
        Q, _ = np.linalg.qr(np.hstack([Q, Vt[: rank - Q.shape[1]].T]))
    return Q[:, :rank], mu


class TaskProjectionErasure(Erasure):
    """Keep only what a task label needs, then LEACE: x ↦ LEACE(μ + QQᵀ(x − μ)).

    Q (n × ``rank``) spans the task's discriminant directions and, up to ``rank``, the leading
    principal directions of the rest (:func:`task_basis`); everything orthogonal to it is
    dropped, so what the attribute shares with the dropped directions goes with them. LEACE on
    the projected vectors then removes the attribute's linear part inside the kept span.
    Retrieval inside a task class keeps only ``rank`` − (classes − 1) directions.

    Args:
        rank: directions kept (≥ 1, < the dimension).
        svd_tol: as in :class:`LeaceErasure`.
    """

    method: ClassVar[str] = "task-projection"
    needs_task_labels: ClassVar[bool] = True

    def __init__(self, *, rank: int = 10, svd_tol: float = 0.01) -> None:
        super().__init__()
        self.rank = check_int(rank, "rank", minimum=1)
        self.svd_tol = check_positive_finite(svd_tol, "svd_tol")

    def _fit_task(self, X: np.ndarray, codes: np.ndarray, c: int, task: np.ndarray) -> list[Step]:
        n = X.shape[1]
        if self.rank >= n:
            raise InvalidParameterError("rank", f"an integer < the dimension {n}", self.rank)
        Q, mu = task_basis(X, task, self.rank)
        U = np.linalg.qr(Q, mode="complete")[0][:, self.rank:]  # orthonormal complement: UUᵀ = I − QQᵀ
        steps: list[Step] = [(U, U.T, mu)]  # x − UUᵀ(x − μ) = μ + QQᵀ(x − μ)
        step = _leace_step(apply_steps(X, steps), _one_hot(codes, c), self.svd_tol)
        return steps if step is None else [*steps, step]

    def get_params(self) -> dict[str, Any]:
        return {"rank": self.rank, "svd_tol": self.svd_tol}


_METHODS: dict[str, type[Erasure]] = {
    "leace": LeaceErasure,
    "cluster-leace": ClusterLeaceErasure,
    "adversarial": AdversarialErasure,
    "region-leace": RegionLeaceErasure,
    "task-projection": TaskProjectionErasure,
}
ERASURE_METHODS = tuple(_METHODS)


def make_erasure(method: Any, **params: Any) -> Erasure:
    """An eraser from a method name (:data:`ERASURE_METHODS`) and its parameters, or an Erasure as is."""
    if isinstance(method, Erasure):
        if params:
            raise InvalidParameterError("params", "no extra parameters with a ready Erasure instance", params)
        return method
    if not isinstance(method, str) or method not in _METHODS:
        raise InvalidParameterError("method", f"one of {', '.join(ERASURE_METHODS)} or an Erasure", method)
    return _METHODS[method](**params)
