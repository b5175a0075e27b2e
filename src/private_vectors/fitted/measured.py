"""Which attackers each erasure method bounds, and what retrained attackers were measured to read.

Every method in :mod:`private_vectors.fitted.erasure` keeps LEACE's constraint on the global
label, so after it the attribute's class means are equal on the fitting data and no linear
predictor beats a constant there in expected (convex) loss (Belrose et al., "LEACE: Perfect
linear concept erasure in closed form", NeurIPS 2023, Thm. 3.1). That is the whole guarantee:
it says nothing about accuracy, about data unlike the fitting data, or about non-linear
attackers. What those read is measured, not bounded: :data:`MEASURED` holds, per method, the
strongest of a fixed family of attackers (logistic regression, MLPs with one hidden layer of
256 and two of 256 and 128, gradient-boosted trees; :mod:`private_vectors.eval.attacks.family`)
retrained on the protected vectors of identities the eraser never saw, with the utility kept.

:func:`choose_method` applies the rule that picked
:data:`~private_vectors.fitted.erase.DEFAULT_METHOD` to that table;
:func:`attacker_coverage` is what the privacy report says about an erasure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._files import measured_figures

__all__ = ["ATTACKER_FAMILY", "MEASURED", "MeasuredErasure", "attacker_coverage", "choose_method"]

_FIGURES = measured_figures()["erasure"]
ATTACKER_FAMILY = tuple(_FIGURES["attackers"])
"""The attackers measured (the names of :data:`private_vectors.eval.attacks.family.ATTACKER_FAMILY`)."""
DATA = _FIGURES["data"]


@dataclass(frozen=True)
class MeasuredErasure:
    """One measured row: a method (with its parameters, and the store's noise if any) against
    retrained attackers, and the utility it kept.

    Attributes:
        method: an erasure method, or ``"builtin"`` for a shipped artefact as ``erase=`` loads it
            (then ``params`` holds its ``method``).
        params: the eraser's parameters that differ from the method's defaults.
        eps: ε of the Laplace noise added after erasure, or None (erasure alone).
        attribute: the attribute attacked.
        strongest: accuracy of the strongest attacker; ``attacker``: which one.
        floor: the strongest attacker given only the task label (the diagnosis).
        ndcg, ndcg_leace: retrieval NDCG@10 of the row and of LEACE alone in the same run.
        task, task_unprotected: the task probe's accuracy, and on the text stage's vectors alone.
        results: the benchmark results that measured it (``benchmarks/FINDINGS.md`` lists them);
            ``row``: the row's name there.
    """

    method: str
    params: dict[str, Any]
    eps: float | None
    attribute: str
    strongest: float
    attacker: str
    floor: float
    ndcg: float
    ndcg_leace: float
    task: float
    task_unprotected: float
    results: str
    row: str
    key: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.method, tuple(sorted(self.params.items())), self.eps))

    @property
    def retrieval_vs_leace(self) -> float:
        return self.ndcg / self.ndcg_leace

    @property
    def task_kept(self) -> float:
        return self.task / self.task_unprotected

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe summary for the privacy report."""
        return {"attribute": self.attribute, "data": DATA, "attackers": list(ATTACKER_FAMILY),
                "strongest_attacker": self.attacker, "strongest_accuracy": self.strongest,
                "task_label_floor": self.floor, "noise": None if self.eps is None else f"laplace, epsilon {self.eps:g}",
                "retrieval_ndcg10_vs_leace": round(self.retrieval_vs_leace, 3),
                "task_accuracy_kept": round(self.task_kept, 3), "results": self.results, "row": self.row}


# Sex on the generated notes (seed 0, one split: fitting 2 400 vectors, attackers trained on 3 360
# and scored on 2 240 of other patients, 95 % intervals about ±0.02), in the order the rule breaks
# ties by. The shipped artefacts as ``erase=`` loads them are the ``builtin`` rows (the
# cluster-LEACE one was fitted on the fitting identities; the LEACE one on Pri-DDXPlus, other data,
# so its guarantee does not carry over).
MEASURED: tuple[MeasuredErasure, ...] = tuple(MeasuredErasure(**row) for row in _FIGURES["rows"])


def choose_method(*, attribute: str = "sex", min_retrieval: float = 0.9, min_task: float = 0.9,
                  methods: tuple[str, ...] | None = None) -> tuple[str, dict[str, Any]]:
    """The measured method with the lowest strongest attacker among those that keep
    ``min_retrieval`` × LEACE's NDCG@10 and ``min_task`` × the unprotected task accuracy
    (erasure alone, no noise; ties: the row listed first).

    With the defaults this names :data:`~private_vectors.fitted.erase.DEFAULT_METHOD` and
    its default parameters.

    Args:
        attribute: the attribute whose measurements decide.
        min_retrieval: share of LEACE's retrieval a candidate must keep.
        min_task: share of the task accuracy a candidate must keep.
        methods: candidate methods (default: all measured).

    Returns:
        (method, parameters that differ from the method's defaults).
    """
    from .._validation import check_positive_finite
    from ..errors import InvalidParameterError

    check_positive_finite(min_retrieval, "min_retrieval")
    check_positive_finite(min_task, "min_task")
    rows = [r for r in MEASURED if r.attribute == attribute and r.eps is None and r.method != "builtin"
            and (methods is None or r.method in methods)
            and r.retrieval_vs_leace >= min_retrieval and r.task_kept >= min_task]
    if not rows:
        raise InvalidParameterError("min_retrieval", f"a bound that at least one measured method on {attribute!r} meets",
                                    min_retrieval)
    best = min(rows, key=lambda r: r.strongest)
    return best.method, dict(best.params)


_ALSO = {
    "cluster-leace": "linear probes inside each of the k-means regions fitted (on the fitting data)",
    "region-leace": "linear probes inside each task-label region (on the fitting data)",
    "adversarial": "the MLP adversary it was trained against, on the fitting data (not a fresh attacker)",
    "task-projection": "anything outside the kept task directions, which are dropped",
}


def _changed(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that differ from the method's defaults (random_state aside)."""
    from .erasure import make_erasure

    defaults = make_erasure(method).get_params()
    return {k: v for k, v in params.items() if k != "random_state" and defaults.get(k) != v}


def _find(method: str, params: dict[str, Any], attribute: str, eps: float | None) -> MeasuredErasure | None:
    rows = [r for r in MEASURED if r.method == method and r.params == params and r.eps == eps]
    same = [r for r in rows if r.attribute == attribute]
    return (same or rows or [None])[0]


def attacker_coverage(method: str, params: dict[str, Any] | None = None, *, attribute: str = "",
                      builtin: bool = False, mechanism: str | None = None, eps: float | None = None) -> dict[str, Any]:
    """What an erasure bounds, what it does not, and the measurement of its method (JSON-safe).

    Args:
        method: the erasure method.
        params: its parameters (the defaults are left out when matching a measurement).
        attribute: the attribute erased (a measurement of the same attribute is preferred).
        builtin: the shipped artefact (its own measured row is preferred).
        mechanism, eps: the store's noise; a measurement of erasure + Laplace at that ε is added.

    Returns:
        ``{"bounded", "also_bounded", "not_bounded", "measured", "measured_with_noise"}``; the
        measurements are None where this method and these parameters were not measured.
    """
    changed = _changed(method, dict(params or {}))
    own = [method, changed]
    if builtin:
        exact = _find("builtin", {"method": method}, attribute, None)
        measured = exact or _find(*own, attribute, None)
    else:
        measured = _find(*own, attribute, None)
    noisy = None
    if mechanism == "laplace" and eps is not None:
        noisy = (_find("builtin", {"method": method}, attribute, float(eps)) if builtin else None) or _find(
            *own, attribute, float(eps))
    return {
        "bounded": ("linear probes: the attribute's class means are equal on the fitting data, so no linear "
                    "predictor beats a constant there in expected loss (LEACE, Belrose et al. 2023)"),
        "also_bounded": _ALSO.get(method),
        "not_bounded": ("non-linear attackers retrained on the erased vectors (MLPs, boosted trees), and any "
                        "attacker on data unlike the fitting data: measured, not bounded"),
        "measured": None if measured is None else measured.as_dict(),
        "measured_with_noise": None if noisy is None else noisy.as_dict(),
    }
