"""A fixed family of attribute attackers, each trained to convergence on protected vectors.

The attacker holds protected vectors of some identities together with their attribute
(sex, age band, ...) and trains a classifier; it is scored on the vectors of other
identities. Four attackers, the strongest of which counts:

* ``logistic``: standardised logistic regression, C chosen on the validation part;
* ``mlp256``: an MLP with one hidden layer of 256 units;
* ``mlp256x128``: an MLP with two hidden layers (256, 128);
* ``gbt``: gradient-boosted trees (scikit-learn's histogram GBT), the number of trees chosen
  on the validation part.

Both MLPs (torch) train with Adam until the validation accuracy has not improved for ``patience``
epochs and keep their best epoch (early stopping on a validation part that holds whole
identities, so no identity is both fitted and used for stopping).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..._validation import as_float_matrix
from ...errors import Described, InvalidParameterError
from .attribute import wilson_interval

__all__ = ["ATTACKER_FAMILY", "attack_family", "identity_split", "strongest"]

ATTACKER_FAMILY = ("logistic", "mlp256", "mlp256x128", "gbt")


def identity_split(groups: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (first, second): whole identities, ``share`` of them in the first part."""
    uniq = np.unique(groups)
    rng = np.random.default_rng(seed)
    rng.shuffle(uniq)
    first = set(uniq[: max(1, round(len(uniq) * share))].tolist())
    mask = np.asarray([g in first for g in groups])
    return np.flatnonzero(mask), np.flatnonzero(~mask)


def _logistic(Xf: np.ndarray, zf: np.ndarray, Xv: np.ndarray, zv: np.ndarray, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    best, best_acc = None, -1.0
    for c in (0.01, 0.1, 1.0):
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=3000))
        clf.fit(Xf, zf)
        acc = float(np.mean(clf.predict(Xv) == zv))
        if acc > best_acc:
            best, best_acc = clf, acc
    return best


def _mlp(hidden: tuple[int, ...], Xf: np.ndarray, zf: np.ndarray, Xv: np.ndarray, zv: np.ndarray, seed: int,
         max_epochs: int = 300, patience: int = 20, batch_size: int = 128) -> Any:
    """Torch MLP (ReLU, Adam, weight decay 1e-4), the epoch with the best validation accuracy kept."""
    import torch
    from torch import nn

    mu, sd = Xf.mean(0), Xf.std(0) + 1e-8
    classes = np.unique(np.concatenate([zf, zv]))
    index = {c: i for i, c in enumerate(classes.tolist())}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        width = Xf.shape[1]
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        net = nn.Sequential(*layers, nn.Linear(width, len(classes)))
        xf = torch.as_tensor((Xf - mu) / sd, dtype=torch.float32)
        xv = torch.as_tensor((Xv - mu) / sd, dtype=torch.float32)
        yf = torch.as_tensor([index[c] for c in zf.tolist()])
        yv = torch.as_tensor([index[c] for c in zv.tolist()])
        opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
        loss_fn = nn.CrossEntropyLoss()
        gen = torch.Generator().manual_seed(seed)
        best, best_acc, since = copy.deepcopy(net.state_dict()), -1.0, 0
        for _ in range(max_epochs):
            net.train()
            order = torch.randperm(len(xf), generator=gen)
            for lo in range(0, len(xf), batch_size):
                idx = order[lo:lo + batch_size]
                opt.zero_grad()
                loss_fn(net(xf[idx]), yf[idx]).backward()
                opt.step()
            net.eval()
            with torch.no_grad():
                acc = float((net(xv).argmax(1) == yv).float().mean())
            if acc > best_acc:
                best, best_acc, since = copy.deepcopy(net.state_dict()), acc, 0
            else:
                since += 1
                if since >= patience:
                    break
        net.load_state_dict(best)
    return _Torch(net, mu, sd, classes)


def _gbt(Xf: np.ndarray, zf: np.ndarray, Xv: np.ndarray, zv: np.ndarray, seed: int, max_iter: int = 200) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    clf = HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=0.1, early_stopping=False,
                                         random_state=seed)
    clf.fit(Xf, zf)
    accs = [float(np.mean(p == zv)) for p in clf.staged_predict(Xv)]
    return _Staged(clf, int(np.argmax(accs)))


class _Torch:
    def __init__(self, net: Any, mu: np.ndarray, sd: np.ndarray, classes: np.ndarray) -> None:
        self.net, self.mu, self.sd, self.classes = net, mu, sd, classes

    def predict(self, X: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.net(torch.as_tensor((X - self.mu) / self.sd, dtype=torch.float32)).argmax(1).numpy()
        return self.classes[out]


class _Staged:
    def __init__(self, clf: Any, stage: int) -> None:
        self.clf, self.stage = clf, stage

    def predict(self, X: np.ndarray) -> np.ndarray:
        for i, p in enumerate(self.clf.staged_predict(X)):
            if i == self.stage:
                return p
        raise AssertionError("stage out of range")


def _train(kind: str, Xf: np.ndarray, zf: np.ndarray, Xv: np.ndarray, zv: np.ndarray, seed: int) -> Any:
    """One attacker, on one thread (OpenMP and BLAS pools spin badly on a shared machine)."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            return _train_one(kind, Xf, zf, Xv, zv, seed)
    finally:
        torch.set_num_threads(before)


def _train_one(kind: str, Xf: np.ndarray, zf: np.ndarray, Xv: np.ndarray, zv: np.ndarray, seed: int) -> Any:
    if kind == "logistic":
        return _logistic(Xf, zf, Xv, zv, seed)
    if kind == "mlp256":
        return _mlp((256,), Xf, zf, Xv, zv, seed)
    if kind == "mlp256x128":
        return _mlp((256, 128), Xf, zf, Xv, zv, seed)
    if kind == "gbt":
        return _gbt(Xf, zf, Xv, zv, seed)
    raise InvalidParameterError("attacker", f"one of {', '.join(ATTACKER_FAMILY)}", kind)


def attack_family(X: Any, z: Any, groups: Any, train: np.ndarray, test: np.ndarray, *,
                  attackers: tuple[str, ...] = ATTACKER_FAMILY, validation_share: float = 0.2,
                  seed: int = 0) -> dict[str, dict[str, float]]:
    """Accuracy of each attacker trained on rows ``train`` and scored on rows ``test``.

    Args:
        X: protected vectors (m, n) (or features such as a one-hot task label, for a floor).
        z: the attribute (m,).
        groups: identity of each row (m,); the validation part holds whole identities.
        train: rows the attacker knows (its fitting and validation parts).
        test: rows it is scored on (identities disjoint from ``train``'s).
        attackers: names from :data:`ATTACKER_FAMILY`.
        validation_share: share of the training identities held out for early stopping
            and model choice.
        seed: split and initialisation seed.

    Returns:
        ``{name: {"accuracy", "ci_low", "ci_high", "n"}}`` (Wilson 95% interval).
    """
    mat, _ = as_float_matrix(X, "X")
    labels = np.asarray(list(z))
    grp = np.asarray(list(groups))
    if len(labels) != len(mat) or len(grp) != len(mat):
        raise InvalidParameterError("z", f"{len(mat)} labels and groups", (len(labels), len(grp)))
    if set(grp[train].tolist()) & set(grp[test].tolist()):
        raise InvalidParameterError("test", "rows of identities not in train", Described("overlapping identities"))
    val_rows, fit_rows = identity_split(grp[train], validation_share, seed)
    fit, val = train[fit_rows], train[val_rows]
    out = {}
    for kind in attackers:
        clf = _train(kind, mat[fit], labels[fit], mat[val], labels[val], seed)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            correct = int(np.sum(clf.predict(mat[test]) == labels[test]))
        lo, hi = wilson_interval(correct, len(test))
        out[kind] = {"accuracy": correct / len(test), "ci_low": lo, "ci_high": hi, "n": float(len(test))}
    return out


def strongest(result: dict[str, dict[str, float]]) -> tuple[str, float]:
    """(name, accuracy) of the most accurate attacker in an :func:`attack_family` result."""
    name = max(result, key=lambda k: result[k]["accuracy"])
    return name, result[name]["accuracy"]
