"""The cells of a results file: one (data set, backend, row, ε) each, averaged over seeds.

A results line (:func:`~private_vectors.eval.runner.cell_record`) names its mechanism and, since
the store kind became a dimension of the grid, its store kind (``"store"``: ``"clear"`` — the
sanitized text stored in clear, as before — or ``"sealed"``). The reports group lines by
:func:`row_name`, so a sealed store is a row of its own beside the same mechanism's clear store.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["aggregate", "eps_value", "prior_of", "row_name", "store_kind"]

SEALED_SUFFIX = " (sealed)"
"""What :func:`row_name` adds to the mechanism of a sealed store's line."""


def store_kind(line: Mapping[str, Any]) -> str:
    """``"clear"`` or ``"sealed"`` (lines written before the store kind existed: clear)."""
    return str(line.get("store") or "clear")


def row_name(line: Mapping[str, Any]) -> str:
    """The report row of a results line: its mechanism, with :data:`SEALED_SUFFIX` for a sealed store."""
    return line["mechanism"] + (SEALED_SUFFIX if store_kind(line) == "sealed" else "")


def eps_value(v: Any) -> float:
    """ε from a config or a JSON line: a number, or "inf" / "infinity" / "∞" (the clean row)."""
    return math.inf if str(v).lower() in ("inf", "infinity", "∞") else float(v)


def aggregate(lines: list[dict[str, Any]]) -> dict[tuple[str, str, str, float], dict[str, tuple[float, float, int]]]:
    """(dataset, backend, mechanism, ε) → {metric: (mean, std, n)} over seeds."""
    groups: dict[tuple[str, str, str, float], list[dict[str, Any]]] = defaultdict(list)
    for r in lines:
        groups[(r["dataset"], r.get("backend", "chroma"), row_name(r), eps_value(r["eps"]))].append(r)
    out: dict[tuple[str, str, str, float], dict[str, tuple[float, float, int]]] = {}
    for key, rows in groups.items():
        metrics = {k for r in rows for k, v in r.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and (k.startswith(("leakage_", "confidence_", "epochs_", "utility_")) or k in ("utility", "noise_norm"))}
        out[key] = {}
        for m in metrics:
            vals = np.array([float(r[m]) for r in rows if isinstance(r.get(m), (int, float))], dtype=float)
            out[key][m] = (float(np.nanmean(vals)), float(np.nanstd(vals)) if len(vals) > 1 else 0.0, len(vals))
    return out


def prior_of(attacker: str) -> str:
    """The no-information baseline of ``attacker`` on its own split: ``prior`` (the token prior),
    ``prior-docsplit`` / ``prior-keyless`` for the entity task's split variants,
    ``linking-prior`` for the linking attacker."""
    if attacker.startswith("linking"):
        return "linking-prior"
    for suffix in ("-docsplit", "-keyless"):
        if attacker.endswith(suffix):
            return f"prior{suffix}"
    return "prior"
