"""Tables and plots from the harness's JSON lines.

* ``table.md`` — per data set, in the shape of the SPARSE paper's Table 1: mechanism × ε,
  leakage and confidence per attacker and utility, mean ± std over seeds.
* ``equal_utility.md`` — per data set and attacker, each mechanism's leakage linearly
  interpolated (between adjacent ε points of its curve) at the utility a reference row
  reaches at ε = 10 — Laplace, and the practitioner's anchor (``presidio+laplace``) when the
  run has it — and its ratio to the reference's leakage there. Beside it: the ratio of the
  leakage *net of the no-vector prior* (what the stored vectors add to a frequency guess),
  "uninformative" where both sides sit at or below the prior, every crossing where a
  utility curve crosses the target more than once ("undetermined"), and per-seed ratios
  with a bootstrap 95% confidence interval of their mean.
* ``ablation.md`` — per data set, each row's stages (text stage, erasure, noise, query
  transform) on/off with its utility and leakage at the reference ε and at ε = ∞.
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

from .cells import aggregate, prior_of, row_name
from .store_report import store_kinds_markdown

__all__ = ["ablation_markdown", "aggregate", "bootstrap_ci", "crossings", "equal_utility", "leakage_sets",
           "leakage_sets_markdown", "load_lines", "merge_and_report", "write_report"]

ORDER = ["none", "presidio", "redact", "surrogate", "laplace", "presidio+laplace", "redact+laplace",
         "surrogate+laplace", "redact+concept", "surrogate+concept", "purkayastha", "gaussian", "sparse-diagonal",
         "concept-subspace", "concept-subspace+qt", "cape", "textcrafter"]
"""Display order of the rows; rows not listed follow, by name (tables, ablation and plots all show them)."""

REFERENCES = ("laplace", "presidio+laplace")
"""Rows the equal-utility ratios are taken against, when a run has them: spherical Laplace and
the practitioner's anchor (presidio's default redaction + Laplace)."""


def load_lines(path: str | Path) -> list[dict[str, Any]]:
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _attackers(lines: list[dict[str, Any]]) -> list[str]:
    return sorted({k.split("_", 1)[1] for r in lines for k in r if k.startswith("leakage_")})


def leakage_sets(lines: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Leakage set → the data sets measured on it (from the lines' ``leak_set``; lines written
    before that key existed are left out). Data sets sharing one are one data set for any
    "≥ N data sets" claim: their leakage figures are not independent."""
    out: dict[str, set[str]] = defaultdict(set)
    for r in lines:
        if r.get("leak_set"):
            out[str(r["leak_set"])].add(r["dataset"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def leakage_sets_markdown(lines: list[dict[str, Any]]) -> str:
    """One line naming the distinct leakage sets and the data sets that share one ('' if unknown)."""
    sets = leakage_sets(lines)
    if not sets:
        return ""
    shared = [f"{', '.join(ds)} share the {name} leakage set" for name, ds in sets.items() if len(ds) > 1]
    text = f"**{len(sets)} distinct leakage set(s)** ({', '.join(sets)})"
    if shared:
        text += "; " + "; ".join(shared) + " — count them as **one** data set"
    return text + ".\n"


def _fmt(cell: tuple[float, float, int] | None, scale: float = 100.0) -> str:
    if cell is None or math.isnan(cell[0]):
        return "–"
    mean, std, n = cell
    return f"{scale * mean:.2f} ± {scale * std:.2f}" if n > 1 else f"{scale * mean:.2f}"


def _sorted_keys(agg: dict, dataset: str, backend: str) -> list[tuple[str, float]]:
    keys = [(m, e) for (d, b, m, e) in agg if d == dataset and b == backend]
    rank = {m: i for i, m in enumerate(ORDER)}
    return sorted(keys, key=lambda k: (rank.get(k[0], 99), k[0], k[1]))


def table_markdown(lines: list[dict[str, Any]]) -> str:
    agg = aggregate(lines)
    atts = _attackers(lines)
    metric_of = {r["dataset"]: r.get("utility_metric", "utility") for r in lines}
    source_of = {r["dataset"]: r.get("token_source") for r in lines}
    parts = ["Values ×100, mean ± std over seeds (no ± with one seed). Leakage = share of sensitive token "
             "instances recovered (SPARSE eq. 13); confidence = mean probability on them (eq. 14). Noise norm = "
             "the expected L2 norm of one vector's noise (unit-norm embeddings; ε is per unit of 1/√n).\n",
             leakage_sets_markdown(lines)]
    set_of = {r["dataset"]: r.get("leak_set") for r in lines}
    for dataset, backend in sorted({(d, b) for (d, b, _, _) in agg}):
        lset = f"; leakage set: {set_of[dataset]}" if set_of.get(dataset) else ""
        parts.append(f"### {dataset} ({backend}; utility = {metric_of[dataset]}; sensitive tokens: "
                     f"{source_of[dataset]}{lset})\n")
        head = ["mechanism", "ε", "noise norm"] + [f"{h} ({a})" for a in atts for h in ("leakage", "confidence")] \
            + ["utility"]
        parts.append("| " + " | ".join(head) + " |")
        parts.append("|" + "---|" * len(head))
        for m, e in _sorted_keys(agg, dataset, backend):
            cell = agg[(dataset, backend, m, e)]
            norm = cell.get("noise_norm")
            row = [m, "∞" if math.isinf(e) else f"{e:g}", "–" if norm is None else f"{norm[0]:.3g}"]
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


AT_PRIOR = 0.005
"""Leakage within this share of the prior (or below it) counts as "at the prior"."""

BOOTSTRAP = 2000
"""Bootstrap resamples (over seeds) for the confidence interval of a mean ratio."""


def crossings(points: list[tuple[float, float, float]], target: float) -> list[float]:
    """Leakage wherever a mechanism's utility curve crosses ``target``.

    ``points`` are (ε, utility, leakage); the curve joins *adjacent ε* points (not points
    sorted by utility, which would join non-neighbours of a non-monotone curve). Each segment
    whose utility range holds the target contributes its linearly interpolated leakage; a
    point exactly on the target counts once. Empty when the curve never reaches the target.
    """
    pts = sorted(points)
    out: list[float] = []
    hit_points: set[int] = set()
    for i, ((_, u0, l0), (_, u1, l1)) in enumerate(itertools.pairwise(pts)):
        if not (min(u0, u1) <= target <= max(u0, u1)):
            continue
        if u0 == u1:
            value, at = l0, {i}
        else:
            w = (target - u0) / (u1 - u0)
            value = l0 + (l1 - l0) * w
            at = {i} if w == 0 else {i + 1} if w == 1 else set()
        if at & hit_points:
            continue
        hit_points |= at
        out.append(value)
    if len(pts) == 1 and math.isclose(pts[0][1], target, abs_tol=1e-9):
        out.append(pts[0][2])
    return out


def _interp_leakage(points: list[tuple[float, float]], target: float) -> float:
    """Leakage at ``target`` on a curve given as (utility, leakage) points in ε order; the first
    crossing (NaN when none). Kept for callers of the one-crossing interface."""
    found = crossings([(float(i), u, le) for i, (u, le) in enumerate(points)], target)
    return found[0] if found else math.nan


def bootstrap_ci(values: Sequence[float], *, n: int = BOOTSTRAP, level: float = 0.95, seed: int = 0
                 ) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (NaNs dropped); (NaN, NaN) with
    fewer than 2 values. With few seeds the interval is coarse: it says how much the seeds
    disagree, not a population interval."""
    v = np.asarray([x for x in values if not math.isnan(x)], dtype=float)
    if len(v) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n, len(v)))].mean(axis=1)
    return float(np.quantile(means, (1 - level) / 2)), float(np.quantile(means, (1 + level) / 2))


def _curve(agg: dict, dataset: str, backend: str, mechanism: str, attacker: str) -> list[tuple[float, float, float]]:
    return [(e, v["utility"][0], v[f"leakage_{attacker}"][0]) for (d, b, m, e), v in agg.items()
            if d == dataset and b == backend and m == mechanism and f"leakage_{attacker}" in v and "utility" in v]


def _at_target(pts: list[tuple[float, float, float]], target: float) -> tuple[float, list[float], bool]:
    """(leakage, every crossing, upper_bound) of a curve at ``target`` utility. Several
    crossings with different leakage give the largest (privacy-conservative) as ``leakage``."""
    found = crossings(pts, target)
    if found:
        return max(found), found, False
    if pts and target < min(p[1] for p in pts):
        # even its strongest ε keeps more utility than the target: its leakage at equal utility
        # is at most its leakage at its least utility (more noise leaks less)
        return min(pts, key=lambda p: p[1])[2], [], True
    return math.nan, [], False


def _ratio_row(agg: dict, dataset: str, backend: str, attacker: str, mechanism: str, reference: str,
               ref_eps: float) -> dict[str, Any] | None:
    """One mechanism's equal-utility figures against ``reference`` (None when not computable)."""
    ref = agg.get((dataset, backend, reference, ref_eps))
    if ref is None or "utility" not in ref or f"leakage_{attacker}" not in ref:
        return None
    pts = _curve(agg, dataset, backend, mechanism, attacker)
    if not pts:  # this attacker did not run on this mechanism (a restricted attacker)
        return None
    target = ref["utility"][0]
    ref_leak = ref[f"leakage_{attacker}"][0]
    prior = ref.get(f"leakage_{prior_of(attacker)}", (math.nan,))[0]
    leak, found, bound = _at_target(pts, target)
    ratio = leak / ref_leak if ref_leak and not math.isnan(leak) else math.nan
    ref_net, net = ref_leak - prior, leak - prior
    uninformative = (not math.isnan(prior) and not math.isnan(leak)
                     and net <= AT_PRIOR and ref_net <= AT_PRIOR)
    net_ratio = net / ref_net if ref_net >= MIN_EXCESS and not math.isnan(net) else math.nan
    undetermined = len(found) > 1 and max(found) - min(found) > AT_PRIOR
    return {"dataset": dataset, "backend": backend, "attacker": attacker, "mechanism": mechanism,
            "reference": reference, "target_utility": target, "leakage": leak, "reference_leakage": ref_leak,
            "laplace_leakage": ref_leak, "ratio": ratio, "prior_leakage": prior, "net_leakage": net,
            "net_ratio": net_ratio, "excess_ratio": net_ratio, "uninformative": uninformative,
            "crossing_ratios": [c / ref_leak if ref_leak else math.nan for c in found],
            "undetermined": undetermined, "upper_bound": bound,
            "utility_range": (min(p[1] for p in pts), max(p[1] for p in pts))}


def equal_utility(lines: list[dict[str, Any]], *, reference: str = "laplace", ref_eps: float = 10.0
                  ) -> list[dict[str, Any]]:
    """Per data set, backend, attacker and mechanism: leakage at the reference's utility.

    Each row holds the ratio of the mean-over-seeds curves, the ratio net of the prior, the
    per-seed ratios (each seed's curves against that seed's reference) and a bootstrap 95%
    interval of their mean.
    """
    agg = aggregate(lines)
    seeds = sorted({r.get("seed", 0) for r in lines})
    per_seed = {s: aggregate([r for r in lines if r.get("seed", 0) == s]) for s in seeds} if len(seeds) > 1 else {}
    rows = []
    for dataset, backend in sorted({(d, b) for (d, b, _, _) in agg}):
        # rows without noise (none, presidio: ε = ∞ only) have no curve to meet the target on
        mechs = sorted({m for (d, b, m, e) in agg if d == dataset and b == backend and not math.isinf(e)},
                       key=lambda m: (ORDER.index(m) if m in ORDER else 99, m))
        for a in _attackers(lines):
            if prior_of(a) == a:  # the floor itself: shown in the prior column
                continue
            for m in mechs:
                row = _ratio_row(agg, dataset, backend, a, m, reference, ref_eps)
                if row is None:
                    continue
                seed_rows = [_ratio_row(sa, dataset, backend, a, m, reference, ref_eps) for sa in per_seed.values()]
                row["seed_ratios"] = [r["ratio"] if r else math.nan for r in seed_rows]
                row["seed_net_ratios"] = [r["net_ratio"] if r else math.nan for r in seed_rows]
                row["ratio_ci"] = bootstrap_ci(row["seed_ratios"])
                row["net_ratio_ci"] = bootstrap_ci(row["seed_net_ratios"])
                rows.append(row)
    return rows


def _x(v: float, prefix: str = "") -> str:
    return "n/a" if math.isnan(v) else f"{prefix}{v:.2f}×"


def _ratio_cell(r: dict[str, Any]) -> str:
    le = "≤ " if r.get("upper_bound") else ""
    if r.get("uninformative"):
        return f"uninformative ({_x(r['ratio'], le)})"
    if r.get("undetermined"):
        return "undetermined (" + " / ".join(_x(c) for c in r["crossing_ratios"]) + ")"
    if r["reference_leakage"] - r["prior_leakage"] <= AT_PRIOR:  # only the mechanism rises above it
        return f"{_x(r['ratio'], le)} (reference at prior)"
    return _x(r["ratio"], le)


def _seed_cell(values: list[float], ci: tuple[float, float]) -> tuple[str, str]:
    if not values:
        return "–", "–"
    shown = ", ".join("n/a" if math.isnan(v) else f"{v:.2f}" for v in values)
    return shown, ("n/a" if math.isnan(ci[0]) else f"{ci[0]:.2f}–{ci[1]:.2f}")


REF_EPS = (10.0, 20.0)
"""The reference's ε values the equal-utility tables are taken at. ε = 10 is the headline; ε = 20
is added because at ε = 10 every attacker sits at the prior on some sets (SciFact + PII), where
only a less noisy target can rank the rows."""


def equal_utility_markdown(lines: list[dict[str, Any]], *, references: Sequence[str] = REFERENCES,
                           ref_eps: Sequence[float] = REF_EPS) -> str:
    present = {r["mechanism"] for r in lines}
    parts = ["Leakage (×100) of each mechanism interpolated at the utility the reference row reaches at ε = 10 "
             "(then at ε = 20: a second target with less noise), "
             "and its ratio to the reference's leakage there. The curve joins adjacent ε points. '≤' = even the "
             "mechanism's strongest ε keeps more utility than the target, so its leakage there bounds it from "
             "above; 'n/a' = its grid never reaches the target (its utility range is shown). *Net* = leakage "
             "minus the prior (the no-vector attacker on the same split): the net ratio is (leakage − prior) / "
             "(reference − prior), the share of what the vectors add beyond a frequency guess that the "
             f"mechanism lets through; 'n/a' where the reference leaks < {100 * MIN_EXCESS:.0f} points above the "
             f"prior. 'uninformative' = both sides within {100 * AT_PRIOR:.1f} points of the prior or below it: "
             "the ratio of two at-chance numbers means nothing; '(reference at prior)' = only the mechanism "
             "rises above it, so read its net leakage, not the ratio. 'undetermined' = the utility curve crosses the "
             "target more than once with different leakage; every crossing's ratio is listed (the larger one "
             "is used as the leakage). Per seed: each seed's curves against that seed's reference; CI: "
             f"percentile bootstrap (over seeds, {BOOTSTRAP} resamples) of the mean per-seed ratio.\n",
             leakage_sets_markdown(lines)]
    for ref, eps in itertools.product(references, ref_eps):
        if ref not in present:
            continue
        rows = equal_utility(lines, reference=ref, ref_eps=eps)
        if not rows:
            continue
        parts += [f"## vs {ref} (ε = {eps:g})\n",
                  "| data set | attacker | mechanism | target utility | leakage | reference | prior | ratio | "
                  "net ratio | per-seed ratios | 95% CI | utility range |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            le = "≤ " if r.get("upper_bound") else ""
            leak = "n/a" if math.isnan(r["leakage"]) else f"{le}{100 * r['leakage']:.2f}"
            prior = "n/a" if math.isnan(r["prior_leakage"]) else f"{100 * r['prior_leakage']:.2f}"
            seeds, ci = _seed_cell(r["seed_ratios"], r["ratio_ci"])
            lo, hi = r["utility_range"]
            parts.append(f"| {r['dataset']} | {r['attacker']} | {r['mechanism']} | {100 * r['target_utility']:.2f} | "
                         f"{leak} | {100 * r['reference_leakage']:.2f} | {prior} | {_ratio_cell(r)} | "
                         f"{_x(r['net_ratio'], le)} | {seeds} | {ci} | {100 * lo:.1f}–{100 * hi:.1f} |")
        parts.append("")
    return "\n".join(parts) + "\n"


def _stages(lines: list[dict[str, Any]], mechanism: str) -> dict[str, Any]:
    for r in lines:
        if row_name(r) == mechanism and isinstance(r.get("stages"), dict):
            return dict(r["stages"])
    # lines written before rows recorded their stages: the row name is all there is
    return {"text": None, "erasure": None, "noise": None if mechanism == "none" else mechanism.removesuffix("+qt"),
            "query_transform": "auto" if mechanism.endswith("+qt") else None}


def ablation_markdown(lines: list[dict[str, Any]], *, ref_eps: float = 10.0) -> str:
    """Per data set: every row with its stages switched on (✓ + which) or off (–), its utility
    and leakage per attacker at ε = ``ref_eps`` (noise rows) or ε = ∞ (noiseless rows)."""
    agg = aggregate(lines)
    atts = _attackers(lines)
    parts = [f"Each row's stages and its figures (×100, mean ± std over seeds) at ε = {ref_eps:g} (rows with noise) "
             "or ∞ (rows without). Text stage = what rewrites the text before encoding (presidio = the "
             "practitioner's anchor); erasure = a concept-erasure stage after the encoder; noise = the mechanism; "
             "qt = noise-aware query transform.\n"]
    for dataset, backend in sorted({(d, b) for (d, b, _, _) in agg}):
        keys = [(m, e) for (m, e) in _sorted_keys(agg, dataset, backend) if e == ref_eps or math.isinf(e)]
        if not keys:
            continue
        parts.append(f"### {dataset} ({backend})\n")
        head = ["row", "text stage", "erasure", "noise", "qt", "ε", "utility"] + [f"leakage ({a})" for a in atts]
        parts += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for m, e in keys:
            st, cell = _stages(lines, m), agg[(dataset, backend, m, e)]
            flags = [f"✓ {st[k]}" if st.get(k) else "–" for k in ("text", "erasure", "noise", "query_transform")]
            row = [m, *flags, "∞" if math.isinf(e) else f"{e:g}", _fmt(cell.get("utility"))]
            row += [_fmt(cell.get(f"leakage_{a}")) for a in atts]
            parts.append("| " + " | ".join(row) + " |")
        parts.append("")
    return "\n".join(parts)


def pareto_plots(lines: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One PNG per data set: a leakage-vs-utility panel per attacker (the prior baseline, when
    measured, as a dashed line), one line per mechanism, points labelled with ε."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = aggregate(lines)
    attackers = [a for a in _attackers(lines) if prior_of(a) != a]
    paths = []
    for dataset, backend in sorted({(d, b) for (d, b, _, _) in agg}):
        fig, axes = plt.subplots(1, len(attackers), figsize=(5.5 * len(attackers), 4.6), squeeze=False)
        metric = next(r.get("utility_metric", "utility") for r in lines if r["dataset"] == dataset)
        present = {mm for (d, b, mm, _e) in agg if d == dataset and b == backend}
        rows = [m for m in ORDER if m in present] + sorted(present - set(ORDER))
        for ax, attacker in zip(axes[0], attackers, strict=True):
            colours = plt.get_cmap("tab20")  # > 10 rows: the default cycle would repeat colours
            for i, m in enumerate(rows):
                pts = sorted((e, v["utility"][0], v.get(f"leakage_{attacker}", (math.nan,))[0])
                             for (d, b, mm, e), v in agg.items() if d == dataset and b == backend and mm == m
                             and "utility" in v)
                if not pts:
                    continue
                xs, ys = [p[1] for p in pts], [p[2] for p in pts]
                ax.plot(xs, ys, marker="o" if m != "none" else "*", markersize=12 if m == "none" else 5,
                        label=m, linestyle="-" if m != "none" else "", color=colours(i % 20))
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
    files = {"table": out / "table.md", "equal_utility": out / "equal_utility.md", "ablation": out / "ablation.md",
             "store_kinds": out / "store_kinds.md"}
    if not lines:
        files["table"].write_text("No results.\n")
        return files
    files["table"].write_text(table_markdown(lines))
    files["equal_utility"].write_text(equal_utility_markdown(lines))
    files["ablation"].write_text(ablation_markdown(lines))
    files["store_kinds"].write_text(store_kinds_markdown(lines))
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


if __name__ == "__main__":  # python -m private_vectors.eval.report OUT_DIR RUN1.jsonl [RUN2.jsonl ...]
    import sys

    if len(sys.argv) < 3:
        raise SystemExit("usage: python -m private_vectors.eval.report OUT_DIR RESULTS.jsonl [MORE.jsonl ...]")
    for name, path in merge_and_report(sys.argv[2:], sys.argv[1]).items():
        print(f"{name}: {path}")
