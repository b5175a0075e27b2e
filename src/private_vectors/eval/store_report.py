"""Leakage per store kind: what a copy of the store gives away, whichever attacker is strongest.

The harness's threat model hands the attacker the whole store. What it recovers depends on what
the store keeps readable:

* a **clear-text** store (a text stage, the sanitized text stored in clear beside each vector —
  or the presidio anchor's redacted text) is read: the attacker recovers at least the sensitive
  tokens readable in the stored text (``leakage_text``,
  :func:`~private_vectors.eval.readable.text_reader`), at every ε, and by encoding that text with
  the public encoder it gets the noiseless vectors of the row's ε = ∞ cell (the same text stage,
  no noise), so its strongest *vector* attack there counts too;
* a **sealed** store keeps no readable text (one AEAD record per document; a keyed marker in the
  text field): the strongest vector attacker on its noisy vectors is what it gives away.

``store_kinds.md`` has, per data set and ε, each row's store leakage = the maximum of those
attackers, the three figures beside it, and the practitioner's anchor (presidio's redaction with
the same noise, text in clear: ``presidio+laplace``; ``presidio`` at ε = ∞) read the same way.
For a sealed store, the utility is what the key holder gets (exact vectors re-rank the noisy
candidates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .cells import SEALED_SUFFIX, aggregate, prior_of, row_name

__all__ = ["store_kinds", "store_kinds_markdown", "store_leakage"]

ANCHOR_ROWS = ("presidio+laplace", "presidio")
"""The anchor's rows: with noise (finite ε) and without (ε = ∞)."""


def _is_vector_attacker(name: str) -> bool:
    return name != "text" and not name.startswith("linking") and prior_of(name) != name


def _strongest(cell: Mapping[str, Any]) -> tuple[str | None, float]:
    """(name, leakage) of the strongest vector attacker of an aggregated cell (NaN when none ran)."""
    best: tuple[str | None, float] = (None, math.nan)
    for key, value in cell.items():
        name = key.removeprefix("leakage_")
        measured = key.startswith("leakage_") and _is_vector_attacker(name) and not math.isnan(value[0])
        if measured and (best[0] is None or value[0] > best[1]):
            best = (name, value[0])
    return best


def _first(values: Sequence[float]) -> float:
    found = [v for v in values if not math.isnan(v)]
    return max(found) if found else math.nan


def store_leakage(cell: Mapping[str, Any], *, sealed: bool, reencoded: float = math.nan) -> dict[str, Any]:
    """One cell's store leakage (see the module docstring) from its aggregated metrics.

    Args:
        cell: ``{metric: (mean, std, n)}`` of the cell (:func:`~private_vectors.eval.cells.aggregate`).
        sealed: whether the store is sealed (no readable text).
        reencoded: for a clear-text store, the strongest vector attacker of the same text stage at
            ε = ∞ (what encoding the stored text gives); NaN when not run or not applicable.

    Returns:
        ``text`` (the reader's leakage), ``vector`` and ``vector_attacker`` (the strongest vector
        attacker at this ε), ``reencoded`` and ``store`` = the maximum of those that were measured
        (NaN when the text reader was not measured for a clear store: lines from before it existed).
    """
    text = cell.get("leakage_text", (math.nan,))[0]
    name, vector = _strongest(cell)
    if sealed:
        store = _first([vector, text])
        reencoded = math.nan
    else:
        store = math.nan if math.isnan(text) else _first([text, vector, reencoded])
    return {"text": text, "vector": vector, "vector_attacker": name, "reencoded": reencoded, "store": store}


def _reencoded(agg: Mapping[tuple, Any], stages: Mapping[str, Any], dataset: str, backend: str,
               mechanism: str) -> float:
    """The strongest vector attacker of the clear ε = ∞ row with ``mechanism``'s text stage."""
    text = stages.get(mechanism, {}).get("text")
    if not text:
        return math.nan
    for (d, b, m, e), cell in agg.items():
        st = stages.get(m, {})
        if d == dataset and b == backend and math.isinf(e) and not m.endswith(SEALED_SUFFIX) \
                and st.get("text") == text and not st.get("noise") and st.get("erasure") == stages[mechanism].get("erasure"):
            return _strongest(cell)[1]
    return math.nan


def store_kinds(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (data set, backend, report row, ε): its utility, the store leakage figures of
    :func:`store_leakage` and the anchor's store leakage at the same ε (``anchor``, ``ratio``)."""
    agg = aggregate(lines)
    stages = {row_name(r): dict(r.get("stages") or {}) for r in lines}
    out = []
    for (d, b, m, e), cell in sorted(agg.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3], kv[0][2])):
        sealed = m.endswith(SEALED_SUFFIX)
        base = m.removesuffix(SEALED_SUFFIX)
        fig = store_leakage(cell, sealed=sealed, reencoded=math.nan if sealed else _reencoded(agg, stages, d, b, m))
        anchor_row = ANCHOR_ROWS[1] if math.isinf(e) else ANCHOR_ROWS[0]
        anchor_cell = agg.get((d, b, anchor_row, e))
        anchor = store_leakage(anchor_cell, sealed=False, reencoded=_reencoded(agg, stages, d, b, anchor_row)) \
            if anchor_cell is not None else None
        a_store = anchor["store"] if anchor else math.nan
        out.append({"dataset": d, "backend": b, "row": base, "store_kind": "sealed" if sealed else "clear", "eps": e,
                    "utility": cell.get("utility", (math.nan,))[0], **fig, "anchor_row": anchor_row,
                    "anchor": a_store, "ratio": fig["store"] / a_store if a_store and not math.isnan(a_store) else math.nan})
    return out


def _pct(v: float) -> str:
    return "–" if math.isnan(v) else f"{100 * v:.2f}"


def store_kinds_markdown(lines: list[dict[str, Any]]) -> str:
    """``store_kinds.md``: the table of :func:`store_kinds`, per data set and backend."""
    rows = store_kinds(lines)
    parts = ["Leakage (×100) of what a copy of the store gives away: **store leakage** = the strongest of the "
             "attacker who reads the store's clear text (*text*: sensitive tokens readable in the stored text and "
             "readable metadata), the strongest vector attacker at this ε (*vectors*, its name) and, for a "
             "clear-text store, the strongest vector attacker on the re-encoded stored text (*re-encoded*: the "
             "same text stage at ε = ∞, no noise). A sealed store keeps no readable text: its store leakage is "
             "its vector attackers', and its utility is the key holder's (exact vectors re-rank the noisy "
             "candidates). *Anchor*: presidio's default redaction with the same noise, text in clear "
             "(`presidio+laplace`; `presidio` at ε = ∞), read the same way; × anchor = store leakage / the "
             "anchor's. '–': not measured.\n"]
    for d, b in sorted({(r["dataset"], r["backend"]) for r in rows}):
        parts += [f"### {d} ({b})\n",
                  "| row | store | ε | utility | text | vectors | re-encoded | store leakage | anchor | × anchor |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in (r for r in rows if (r["dataset"], r["backend"]) == (d, b)):
            vec = f"{_pct(r['vector'])} ({r['vector_attacker']})" if r["vector_attacker"] else "–"
            ratio = "–" if math.isnan(r["ratio"]) else f"{r['ratio']:.2f}×"
            eps = "∞" if math.isinf(r["eps"]) else f"{r['eps']:g}"
            parts.append(f"| {r['row']} | {r['store_kind']} | {eps} | "
                         f"{_pct(r['utility'])} | {_pct(r['text'])} | {vec} | {_pct(r['reencoded'])} | "
                         f"**{_pct(r['store'])}** | {_pct(r['anchor'])} | {ratio} |")
        parts.append("")
    return "\n".join(parts)
