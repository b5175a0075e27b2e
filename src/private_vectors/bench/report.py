"""Tables and plots from the harness's JSON lines.

* ``table.md`` — per data set, in the shape of the SPARSE paper's Table 1: mechanism × ε,
  leakage and confidence per attacker and utility, mean ± std over seeds.
* ``equal_utility.md`` — per data set and attacker, each mechanism's leakage linearly
  interpolated (in utility, between its ε points) at the utility Laplace reaches at ε = 10,
  and its ratio to Laplace's leakage there; next to it the same ratio for the leakage
  *above the no-vector prior* (what the stored vectors add to what a guesser knows anyway).
* ``pareto_<dataset>.png`` — leakage vs utility, one line per mechanism, points at each ε.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["aggregate", "equal_utility", "load_lines", "merge_and_report", "write_report"]

ORDER = ["none", "laplace", "purkayastha", "gaussian", "sparse-diagonal", "concept-subspace",
         "concept-subspace+qt", "cape", "textcrafter"]


def load_lines(path: str | Path) -> list[dict[str, Any]]:
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def eps_value(v: Any) -> float:
    """ε from a config or a JSON line: a number, or "inf" / "infinity" / "∞" (the clean row)."""
    return math.inf if str(v).lower() in ("inf", "infinity", "∞") else float(v)


def _attackers(lines: list[dict[str, Any]]) -> list[str]:
    return sorted({k.split("_", 1)[1] for r in lines for k in r if k.startswith("leakage_")})


def aggregate(lines: list[dict[str, Any]]) -> dict[tuple[str, str, str, float], dict[str, tuple[float, float, int]]]:
    """(dataset, backend, mechanism, ε) → {metric: (mean, std, n)} over seeds."""
    groups: dict[tuple[str, str, str, float], list[dict[str, Any]]] = defaultdict(list)
    for r in lines:
        groups[(r["dataset"], r.get("backend", "chroma"), r["mechanism"], eps_value(r["eps"]))].append(r)
    out: dict[tuple[str, str, str, float], dict[str, tuple[float, float, int]]] = {}
    for key, rows in groups.items():
        metrics = {k for r in rows for k, v in r.items()
                   if isinstance(v, (int, float)) and (k.startswith(("leakage_", "confidence_")) or k == "utility")}
        out[key] = {}
        for m in metrics:
            vals = np.array([float(r[m]) for r in rows if m in r], dtype=float)
            out[key][m] = (float(np.nanmean(vals)), float(np.nanstd(vals)) if len(vals) > 1 else 0.0, len(vals))
    return out


def _fmt(cell: tuple[float, float, int] | None, scale: float = 100.0) -> str:
    if cell is None or math.isnan(cell[0]):
        return "–"
    mean, std, n = cell
    return f"{scale * mean:.2f} ± {scale * std:.2f}" if n > 1 else f"{scale * mean:.2f}"


def _sorted_keys(agg: dict, dataset: str, backend: str) -> list[tuple[str, float]]:
    keys = [(m, e) for (d, b, m, e) in agg if d == dataset and b == backend]
    rank = {m: i for i, m in enumerate(ORDER)}
    return sorted(keys, key=lambda k: (rank.get(k[0], 99), k[1]))


def table_markdown(lines: list[dict[str, Any]]) -> str:
    agg = aggregate(lines)
    atts = _attackers(lines)
    metric_of = {r["dataset"]: r.get("utility_metric", "utility") for r in lines}
    source_of = {r["dataset"]: r.get("token_source") for r in lines}
    parts = ["Values ×100, mean ± std over seeds (no ± with one seed). Leakage = share of sensitive token "
             "instances recovered (SPARSE eq. 13); confidence = mean probability on them (eq. 14).\n"]
    for dataset, backend in sorted({(d, b) for (d, b, _, _) in agg}):
        parts.append(f"### {dataset} ({backend}; utility = {metric_of[dataset]}; sensitive tokens: "
                     f"{source_of[dataset]})\n")
        head = ["mechanism", "ε"] + [f"{h} ({a})" for a in atts for h in ("leakage", "confidence")] + ["utility"]
        parts.append("| " + " | ".join(head) + " |")
        parts.append("|" + "---|" * len(head))
        for m, e in _sorted_keys(agg, dataset, backend):
            cell = agg[(dataset, backend, m, e)]
            row = [m, "∞" if math.isinf(e) else f"{e:g}"]
            for a in atts:
                row += [_fmt(cell.get(f"leakage_{a}")), _fmt(cell.get(f"confidence_{a}"))]
            row.append(_fmt(cell.get("utility")))
            parts.append("| " + " | ".join(row) + " |")
        parts.append("")
    return "\n".join(parts)


PRIOR_BASED = ("mlc", "mlc-enc")
"""Attackers that start from the token prior (their output biases), so their leakage never
falls below it: only for them is "leakage above the prior" meaningful. The nearest-neighbour
attacker and the generative one without ``prior_weight`` have no prior fallback and can sit
below it. A results line names its run's prior-based attackers under ``"prior_based"``; this
is the default for lines without that key."""

MIN_EXCESS = 0.01
"""Laplace's leakage above the prior (share) below which the excess ratio is not reported."""


def _interp_leakage(points: list[tuple[float, float]], target: float) -> float:
    """Leakage at ``target`` utility by linear interpolation between adjacent ε points (NaN outside)."""
    pts = sorted(points)
    for (u0, l0), (u1, l1) in itertools.pairwise(pts):
        if u0 <= target <= u1:
            return l0 if u1 == u0 else l0 + (l1 - l0) * (target - u0) / (u1 - u0)
    if pts and math.isclose(pts[-1][0], target, abs_tol=1e-9):
        return pts[-1][1]
    return math.nan


def equal_utility(lines: list[dict[str, Any]], *, reference: str = "laplace", ref_eps: float = 10.0
                  ) -> list[dict[str, Any]]:
    """Per data set, backend, attacker and mechanism: leakage at the reference's utility."""
    agg = aggregate(lines)
    from_prior = {a for r in lines for a in r.get("prior_based", PRIOR_BASED)}
    rows = []
    for dataset, backend in sorted({(d, b) for (d, b, _, _) in agg}):
        ref = agg.get((dataset, backend, reference, ref_eps))
        if ref is None or "utility" not in ref:
            continue
        target = ref["utility"][0]
        prior = ref.get("leakage_prior", (math.nan,))[0]
        for a in _attackers(lines):
            ref_leak = ref.get(f"leakage_{a}", (math.nan,))[0]
            ref_excess = ref_leak - prior if a in from_prior else math.nan
            for m, _ in sorted({(m, 0) for (d, b, m, _e) in agg if d == dataset and b == backend and m != "none"},
                               key=lambda k: ORDER.index(k[0]) if k[0] in ORDER else 99):
                pts = [(v["utility"][0], v[f"leakage_{a}"][0]) for (d, b, mm, _e), v in agg.items()
                       if d == dataset and b == backend and mm == m and f"leakage_{a}" in v and "utility" in v]
                if not pts:  # this attacker did not run on this mechanism (a restricted attacker)
                    continue
                leak = _interp_leakage(pts, target)
                rng = (min(p[0] for p in pts), max(p[0] for p in pts))
                bound = False
                if math.isnan(leak) and target < rng[0]:
                    # even its strongest ε keeps more utility than the target: its leakage at equal
                    # utility is at most its leakage there (more noise leaks less)
                    leak, bound = min(pts)[1], True
                rows.append({"dataset": dataset, "backend": backend, "attacker": a, "mechanism": m,
                             "target_utility": target, "leakage": leak, "laplace_leakage": ref_leak,
                             "ratio": leak / ref_leak if ref_leak and not math.isnan(leak) else math.nan,
                             "prior_leakage": prior,
                             # below MIN_EXCESS Laplace leaks nothing beyond the prior: nothing to rank
                             "excess_ratio": (leak - prior) / ref_excess if ref_excess >= MIN_EXCESS else math.nan,
                             "upper_bound": bound, "utility_range": rng})
    return rows


def equal_utility_markdown(lines: list[dict[str, Any]]) -> str:
    rows = equal_utility(lines)
    parts = ["Leakage (×100) of each mechanism interpolated at the utility Laplace reaches at ε = 10, and "
             "its ratio to Laplace's leakage there (goal: ≤ 0.5). '≤' = even the mechanism's strongest ε keeps "
             "more utility than the target, so its leakage there bounds it from above; 'n/a' = its grid never "
             "reaches the target utility (its utility range is shown). *Excess ratio* = (leakage − prior) / "
             "(Laplace's leakage − prior), the prior being the no-vector attacker's leakage on the same split: "
             "the share of what the vectors add beyond a frequency guess that the mechanism still lets "
             f"through (negative = below the prior; 'n/a' where Laplace leaks < {100 * MIN_EXCESS:.0f} points "
             "above the prior, i.e. the attacker cannot rank mechanisms there, and for the attackers that "
             "do not start from the prior — nearest neighbour, generative without prior_weight).\n",
             "| data set | attacker | mechanism | target utility | leakage | ratio vs Laplace | prior | "
             "excess ratio | utility range |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        le = "≤ " if r.get("upper_bound") else ""
        leak = "n/a" if math.isnan(r["leakage"]) else f"{le}{100 * r['leakage']:.2f}"
        ratio = "n/a" if math.isnan(r["ratio"]) else f"{le}{r['ratio']:.2f}×"
        excess = "n/a" if math.isnan(r["excess_ratio"]) else f"{le}{r['excess_ratio']:.2f}×"
        prior = "n/a" if math.isnan(r["prior_leakage"]) else f"{100 * r['prior_leakage']:.2f}"
        lo, hi = r["utility_range"]
        parts.append(f"| {r['dataset']} | {r['attacker']} | {r['mechanism']} | {100 * r['target_utility']:.2f} | "
                     f"{leak} | {ratio} | {prior} | {excess} | {100 * lo:.1f}–{100 * hi:.1f} |")
    return "\n".join(parts) + "\n"


def pareto_plots(lines: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One PNG per data set: a leakage-vs-utility panel per attacker (the prior baseline, when
    measured, as a dashed line), one line per mechanism, points labelled with ε."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = aggregate(lines)
    attackers = [a for a in _attackers(lines) if a != "prior"]
    paths = []
    for dataset, backend in sorted({(d, b) for (d, b, _, _) in agg}):
        fig, axes = plt.subplots(1, len(attackers), figsize=(5.5 * len(attackers), 4.6), squeeze=False)
        metric = next(r.get("utility_metric", "utility") for r in lines if r["dataset"] == dataset)
        for ax, attacker in zip(axes[0], attackers, strict=True):
            for m in ORDER:
                pts = sorted((e, v["utility"][0], v.get(f"leakage_{attacker}", (math.nan,))[0])
                             for (d, b, mm, e), v in agg.items() if d == dataset and b == backend and mm == m
                             and "utility" in v)
                if not pts:
                    continue
                xs, ys = [p[1] for p in pts], [p[2] for p in pts]
                ax.plot(xs, ys, marker="o" if m != "none" else "*", markersize=12 if m == "none" else 5,
                        label=m, linestyle="-" if m != "none" else "")
                for e, x, y in pts:
                    ax.annotate("∞" if math.isinf(e) else f"{e:g}", (x, y), fontsize=7, xytext=(3, 3),
                                textcoords="offset points")
            prior = [v["leakage_prior"][0] for (d, b, _m, _e), v in agg.items()
                     if d == dataset and b == backend and "leakage_prior" in v]
            if prior:
                ax.axhline(float(np.mean(prior)), color="grey", linestyle="--", linewidth=1,
                           label="prior (no vector)")
            ax.set_xlabel(f"utility ({metric})")
            ax.set_ylabel(f"leakage ({attacker} attacker, top-k)")
            ax.set_title(f"{dataset}: {attacker} (labels: ε)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        suffix = "" if backend == "chroma" else f"_{backend}"
        path = out_dir / f"pareto_{dataset}{suffix}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def write_report(lines_path: str | Path, out_dir: str | Path) -> dict[str, Path]:
    """Write ``table.md``, ``equal_utility.md`` and the Pareto PNGs next to the JSON lines."""
    out = Path(out_dir)
    lines = load_lines(lines_path)
    files = {"table": out / "table.md", "equal_utility": out / "equal_utility.md"}
    if not lines:
        files["table"].write_text("No results.\n")
        return files
    files["table"].write_text(table_markdown(lines))
    files["equal_utility"].write_text(equal_utility_markdown(lines))
    for p in pareto_plots(lines, out):
        files[p.stem] = p
    return files


def merge_and_report(inputs: Sequence[str | Path], out_dir: str | Path) -> dict[str, Path]:
    """Concatenate several runs' JSON lines into ``out_dir/results_merged.jsonl`` and report on it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    merged = out / "results_merged.jsonl"
    with merged.open("w", encoding="utf-8") as fh:
        for p in inputs:
            for rec in load_lines(p):
                fh.write(json.dumps(rec) + "\n")
    return write_report(merged, out)


if __name__ == "__main__":  # python -m private_vectors.bench.report OUT_DIR RUN1.jsonl [RUN2.jsonl ...]
    import sys

    if len(sys.argv) < 3:
        raise SystemExit("usage: python -m private_vectors.bench.report OUT_DIR RESULTS.jsonl [MORE.jsonl ...]")
    for name, path in merge_and_report(sys.argv[2:], sys.argv[1]).items():
        print(f"{name}: {path}")
