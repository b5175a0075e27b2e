"""The entity-retrieval task's report (``entity.md``): what the key holder keeps, what each
attacker recovers of the original values, and the headline attacker per row.

* **Utility**: NDCG@10 of the person queries and of the city queries, the person queries'
  top-1 rate, and the person NDCG as a ratio to *the same configuration without a text stage*
  (:data:`SAME_WITHOUT_TEXT`: ``surrogate+laplace`` → ``laplace`` at the same ε, ...).
* **Leakage** (×100, mean over seeds): per vector attacker, known-plaintext on the identity
  split (no victim identity in its training data), known-plaintext on a document split
  (``-docsplit``: it has labelled documents of the victims themselves), key-less (``-keyless``:
  trained on documents it protected itself under another key); the no-vector token prior; the
  frequency / linking attacker (share of *documents* whose real identity is recovered) and its
  no-information baseline.
* **Headline**: per row, the attacker with the largest leakage *above its own baseline* (token
  prior for the vector attackers, the most-frequent-identity guess for the linker), named.
  Token leakage and document linking are different units; the table gives both.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from .cells import aggregate, eps_value, prior_of
from .report import load_lines

__all__ = ["SAME_WITHOUT_TEXT", "entity_markdown", "headline", "write_entity_report"]

SAME_WITHOUT_TEXT = {
    "redact": "none", "surrogate": "none", "presidio": "none",
    "redact+laplace": "laplace", "surrogate+laplace": "laplace", "presidio+laplace": "laplace",
    "redact+concept": "concept-subspace", "surrogate+concept": "concept-subspace",
}
"""Each text-stage row's configuration without the text stage (same noise, same ε)."""

ROW_ORDER = ["none", "laplace", "concept-subspace", "presidio", "presidio+laplace", "redact", "redact+laplace",
             "redact+concept", "surrogate", "surrogate+laplace", "surrogate+concept"]

EXTRAS = ("stored_raw_name_share", "linking_pseudonym_share")

SPLITS = (("", "kp, identity split"), ("-docsplit", "kp, document split"), ("-keyless", "key-less"))


def _vector_attackers(cells: dict) -> list[str]:
    names = {k.split("_", 1)[1] for c in cells.values() for k in c if k.startswith("leakage_")}
    base = sorted(n for n in names if not n.endswith(("-keyless", "-docsplit")) and not n.startswith("linking")
                  and n != "prior")
    return base


def _v(cell: dict, key: str) -> float:
    got = cell.get(key)
    return float("nan") if got is None else float(got[0])


def _baseline(cell: dict, name: str) -> float:
    """Attacker ``name``'s own no-information baseline (:func:`~private_vectors.eval.report.prior_of`);
    a vector attacker's split variant without its own prior falls back to the token prior."""
    base = _v(cell, f"leakage_{prior_of(name)}")
    if math.isnan(base) and not name.startswith("linking"):
        base = _v(cell, "leakage_prior")
    return base


def headline(cell: dict, attackers: list[str]) -> tuple[str, float, float]:
    """(attacker, leakage, leakage above its baseline) with the largest excess in one cell."""
    names = [f"{a}{suffix}" for a in attackers for suffix, _ in SPLITS]
    names += sorted(k.removeprefix("leakage_") for k in cell
                    if k.startswith("leakage_linking") and k != "leakage_linking-prior")
    best = ("–", float("nan"), -math.inf)
    for name in names:
        lk = _v(cell, f"leakage_{name}")
        excess = lk - _baseline(cell, name)
        if not math.isnan(lk) and excess > best[2]:
            best = (name, lk, excess)
    return best


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f}"


def entity_markdown(lines: list[dict[str, Any]]) -> str:
    """The report for every entity data set in ``lines`` ('' when there is none)."""
    ent = [r for r in lines if r.get("kind") == "entity"]
    if not ent:
        return ""
    agg = aggregate(ent)
    for key, cell in agg.items():  # the task's own descriptive figures, averaged like the metrics
        rows = [r for r in ent if (r["dataset"], r.get("backend", "chroma"), r["mechanism"],
                                   eps_value(r["eps"])) == key]
        for extra in EXTRAS:
            vals = [float(r[extra]) for r in rows if isinstance(r.get(extra), (int, float))]
            if vals:
                cell[extra] = (sum(vals) / len(vals), 0.0, len(vals))
    seeds = sorted({r["seed"] for r in ent})
    parts = ["# Entity retrieval: utility for the key holder, leakage of the original values\n",
             f"Mean over seeds {seeds}; leakage ×100. Utility through the store with the default query "
             "policy (the row's text stage sanitizes queries with `apply_queries`, same key). kp = "
             "known-plaintext (trained on the victim's stored vectors with true tokens); identity split = no "
             "victim identity in its training data; document split = the harness's usual split (labelled "
             "documents of the victims themselves); key-less = trained on the attacker-side documents "
             "protected by the same configuration under another key (rows without a key: other noise). "
             "Vector attackers: share of sensitive token instances recovered (top-k). Linking: share of "
             "documents whose real identity (hence full name) the frequency / linking attacker recovers "
             "from the stored texts; baseline = always the most frequent identity.\n"]
    for dataset in sorted({r["dataset"] for r in ent}):
        cells = {(m, e): c for (d, _b, m, e), c in agg.items() if d == dataset}
        atts = _vector_attackers(cells)
        linkers = sorted({k.removeprefix("leakage_") for c in cells.values() for k in c
                          if k.startswith("leakage_linking-") and k != "leakage_linking-prior"})
        rank = {m: i for i, m in enumerate(ROW_ORDER)}
        keys = sorted(cells, key=lambda k: (rank.get(k[0], 99), k[1]))
        parts.append(f"## {dataset}: utility\n")
        parts.append("| row | ε | person NDCG@10 | × same config without text stage | person top-1 | city NDCG@10 |")
        parts.append("|---|---|---|---|---|---|")
        for m, e in keys:
            c = cells[(m, e)]
            ref = SAME_WITHOUT_TEXT.get(m)
            ratio = "–"
            if ref and (ref, e) in cells:
                ratio = f"{_v(c, 'utility') / _v(cells[(ref, e)], 'utility'):.2f}× ({ref})"
            elif ref and (ref, math.inf) in cells and ref == "none":
                ratio = f"{_v(c, 'utility') / _v(cells[(ref, math.inf)], 'utility'):.2f}× ({ref})"
            parts.append(f"| {m} | {'∞' if math.isinf(e) else f'{e:g}'} | {_v(c, 'utility'):.3f} | {ratio} | "
                         f"{_v(c, 'utility_person_top1'):.3f} | {_v(c, 'utility_city'):.3f} |")
        parts.append("")
        parts.append(f"## {dataset}: leakage of the original values (×100)\n")
        head = ["row", "ε"] + [f"{a} ({lab})" for a in atts for _, lab in SPLITS] + \
            ["token prior (identity split)", "token prior (document split)", "linking", *linkers, "linking baseline", "texts with a pseudonym", "stored texts with the raw full name",
             "headline attacker"]
        parts.append("| " + " | ".join(head) + " |")
        parts.append("|" + "---|" * len(head))
        for m, e in keys:
            c = cells[(m, e)]
            row = [m, "∞" if math.isinf(e) else f"{e:g}"]
            row += [_pct(_v(c, f"leakage_{a}{s}")) for a in atts for s, _ in SPLITS]
            row += [_pct(_v(c, "leakage_prior")), _pct(_v(c, "leakage_prior-docsplit")), _pct(_v(c, "leakage_linking")),
                    *[_pct(_v(c, f"leakage_{x}")) for x in linkers],
                    _pct(_v(c, "leakage_linking-prior")), _pct(_v(c, "linking_pseudonym_share")),
                    _pct(_v(c, "stored_raw_name_share"))]
            name, lk, ex = headline(c, atts)
            row.append(f"{name}: {_pct(lk)} ({_pct(ex)} above baseline)" if name != "–" else "–")
            parts.append("| " + " | ".join(row) + " |")
        parts.append("")
    return "\n".join(parts)


def write_entity_report(lines_path: str | Path, out_dir: str | Path) -> Path | None:
    """Write ``entity.md`` beside the other reports when the run holds an entity data set."""
    text = entity_markdown(load_lines(lines_path))
    if not text:
        return None
    out = Path(out_dir) / "entity.md"
    out.write_text(text, encoding="utf-8")
    return out


if __name__ == "__main__":  # python -m private_vectors.eval.entity_report results.jsonl out_dir
    print(write_entity_report(sys.argv[1], sys.argv[2]))
