"""The audit's report: the headline, the plain-language summary (Markdown), the plot and the files.

Every figure in the headline is one of the summary's tables, with the attacker it belongs to.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .audit_attack import NAME_MARGIN, TRAIN_SHARE
from .audit_residual import identifier_counts, is_identifier, type_order

__all__ = ["summary_text", "write_report"]


def _pct(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * float(x):.1f} %"


def _types_text(counts: Mapping[str, int], order: Sequence[str]) -> str:
    return ", ".join(f"{t} {counts[t]}" for t in order if counts.get(t)) or "none"


def _retrieval_value(r: Mapping[str, Any]) -> Any:
    return None if r.get("mode") is None else r.get("ndcg@10")


def comparison(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The before/after table of a plain store and its copy written through the library: one row
    per measure, ``before`` and ``after`` as numbers (None: not measured)."""
    before, after = report, report["after"]
    concept = report["store"].get("concept", "PII")
    b_total, b_types = identifier_counts(before["residual_pii"])
    a_total, a_types = identifier_counts(after["residual_pii"])
    rows: list[dict[str, Any]] = [{"measure": "identifier values kept in readable text", "unit": "count",
                                   "before": b_total, "after": a_total}]
    for t in type_order(set(b_types) | set(a_types), concept):
        rows.append({"measure": f"  of which {t}", "unit": "count", "before": b_types.get(t, 0),
                     "after": a_types.get(t, 0)})
    ba, aa = before["attack"], after["attack"]
    rows += [
        {"measure": "first and last names an attacker recovers from the vectors", "unit": "share",
         "before": ba["name_recovery"], "after": aa["name_recovery"],
         "attackers": [ba["strongest"], aa["strongest"]]},
        {"measure": "first and last names guessed without the vectors (most frequent names)", "unit": "share",
         "before": ba["name_recovery_prior"], "after": aa["name_recovery_prior"]},
        {"measure": "sensitive words an attacker recovers from the vectors", "unit": "share",
         "before": ba["token_recovery"], "after": aa["token_recovery"], "attackers": [ba["strongest"], aa["strongest"]]},
        {"measure": f"retrieval, NDCG@10 ({before['retrieval'].get('mode') or after['retrieval'].get('mode')})",
         "unit": "score", "before": _retrieval_value(before["retrieval"]), "after": _retrieval_value(after["retrieval"])},
    ]
    return rows


def _cell(value: Any, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not measured"
    if unit == "share":
        return _pct(value)
    if unit == "score":
        return f"{float(value):.3f}"
    return str(int(value))


def headline(report: Mapping[str, Any]) -> str:
    """The summary's first lines, in plain words, every figure one of the tables'."""
    order = type_order(identifier_counts(report["residual_pii"])[1], report["store"].get("concept", "PII"))
    if "comparison" in report:
        return _headline_compared(report, order)
    a = report["attack"]
    if a["strongest"] is None:
        first = ""  # only the prior ran: nothing was attacked
    elif a["names_scored"] in (0, None) or math.isnan(a["name_recovery"]):
        first = "No person names were found in the audited raw documents, so name recovery was not measured."
    elif a["names_recoverable"]:
        first = (f"Names can be read from the stored vectors: the {a['strongest']} attacker recovers "
                 f"{_pct(a['name_recovery'])} of first and last names, against {_pct(a['name_recovery_prior'])} "
                 "by guessing the most frequent names.")
    else:
        first = (f"Names cannot be read from the stored vectors beyond guessing: the strongest attacker "
                 f"({a['strongest']}) recovers {_pct(a['name_recovery'])} of first and last names, guessing "
                 f"{_pct(a['name_recovery_prior'])}.")
    parts = [first, _text_sentence(report, order), _retrieval_sentence(report.get("retrieval") or {}),
             _ids_sentence(report.get("ids"))]
    return " ".join(p for p in parts if p)


def _text_sentence(report: Mapping[str, Any], order: Sequence[str]) -> str:
    """What the stored text keeps: identifier values in full and in part, then places, ages and dates."""
    r = report["residual_pii"]
    total, types = identifier_counts(r)
    if report.get("sealed"):
        return _sealed_sentence(report)
    if not r["documents_with_text"]:
        return "The store keeps no document text."
    if r.get("raw_values") is None:
        return f"The stored text holds {total} identifier values: {_types_text(types, order)}."
    part = r.get("raw_identifiers_left_in_part") or 0
    quasi, quasi_left = r["raw_values"] - r["raw_identifiers"], r["raw_values_left"] - r["raw_identifiers_left"]
    return (f"The stored text keeps {total} of the {r['raw_identifiers']} identifier values (names, contact details, "
            f"ID and account numbers) in your {r['documents']} raw documents in full ({_types_text(types, order)})"
            f"{f' and {part} more in part (a first or last name)' if part else ''}, and {quasi_left} of the {quasi} "
            "places, ages, dates and other values that describe a person.")


def _sealed_sentence(report: Mapping[str, Any]) -> str:
    s, r = report["sealed"], report["residual_pii"]
    head = (f"Without the key the store keeps no document text: {s['records']} of its {s['documents']} documents are "
            f"sealed records; readable are the noisy vectors, the ids, {s['readable_metadata_keys']} metadata keys kept "
            f"readable, the markers (keyed hashes) and the configuration, and that readable text holds "
            f"{identifier_counts(r)[0]} identifier values.")
    inside = report.get("sealed_content")
    if not inside or inside.get("raw_values") is None:
        return head
    return (f"{head} Inside the records (what is read with the key): {inside['raw_identifiers_left']} of the "
            f"{inside['raw_identifiers']} identifier values kept in full.")


def _retrieval_sentence(q: Mapping[str, Any]) -> str:
    if q.get("mode") is None:
        return ""
    if "ndcg@10_clean" not in q:
        return f"Retrieval ({q['mode']}): NDCG@10 {q['ndcg@10']:.3f} through the store."
    who = "for the key holder (exact vectors re-rank the noisy candidates)" if q.get("key_holder") else "through the store"
    return (f"Retrieval kept ({q['mode']}): NDCG@10 {q['ndcg@10']:.3f} {who} against "
            f"{q['ndcg@10_clean']:.3f} unprotected ({_pct(q['ndcg@10_kept'])}).")


def _ids_sentence(ids: Mapping[str, Any] | None) -> str:
    if not ids or not ids.get("personal"):
        return ""
    kinds = ", ".join(f"{t} {n}" for t, n in ids["by_type"].items())
    return (f"{ids['personal']} of the {ids['ids']} ids look personal ({kinds}): ids are stored as given; "
            "keyed ids (seal=Sealing(ids='hmac')) or your own opaque ids keep them out of the store.")


def _headline_compared(report: Mapping[str, Any], order: Sequence[str]) -> str:
    rows = {r["measure"]: r for r in report["comparison"]}
    kept = rows["identifier values kept in readable text"]
    names = rows["first and last names an attacker recovers from the vectors"]
    guess = rows["first and last names guessed without the vectors (most frequent names)"]
    _, types = identifier_counts(report["residual_pii"])
    first = (f"Your store keeps {_cell(kept['before'], 'count')} identifier values (names, contact details, ID and "
             f"account numbers) in readable text ({_types_text(types, order)}); written through private_vectors, "
             f"{_cell(kept['after'], 'count')}.")
    if report["attack"]["names_scored"] in (0, None):
        second = "No person names were found in the documents, so name recovery was not measured."
    else:
        b_att, a_att = names.get("attackers") or [None, None]
        second = (f"From its vectors, an attacker holding {100 * TRAIN_SHARE:.0f} % of your documents recovers "
                  f"{_cell(names['before'], 'share')} of the first and last names in the others ({b_att} attacker; "
                  f"guessing the most frequent names gives {_cell(guess['before'], 'share')}); through "
                  f"private_vectors, {_cell(names['after'], 'share')} ({a_att} attacker).")
    ret = rows.get(next((m for m in rows if m.startswith("retrieval")), ""), {})
    third = "" if ret.get("before") is None or ret.get("after") is None else (
        f"Retrieval ({ret['measure'].split('(')[-1].rstrip(')')}): NDCG@10 {ret['before']:.3f} in your store, "
        f"{ret['after']:.3f} through private_vectors.")
    return " ".join(p for p in (first, second, third, _ids_sentence(report.get("ids"))) if p)


def summary_text(report: Mapping[str, Any]) -> str:
    """The plain-language summary (Markdown): the headline, then one table per question."""
    a, r, q, c = report["attack"], report["residual_pii"], report["retrieval"], report["coverage"]
    store, concept = report["store"], report["store"].get("concept", "PII")
    lines = [f"# Audit of {store['where']}", "", f"**{report['headline']}**", ""]
    if store.get("protected"):
        p = store["protection"]
        lines.append(f"Written through private_vectors: text stage {p['text_stage'] or 'none'}, noise "
                     f"{p['mechanism']} at eps {p['eps']}, {'with' if p['keyed'] else 'without'} a key.")
    else:
        enc = store.get("encoder") or {}
        lines.append("Written without private_vectors: its text and vectors are stored as given.")
        lines.append(f"Encoder: {enc.get('model')} ({'named with --model' if enc.get('source') == '--model' else 'as the store records it'})."
                     if enc.get("runs") else f"Encoder: not run here, because {enc.get('why')}. The attacks below need "
                     "only the stored vectors and your documents; the retrieval figures need the encoder.")
    source = "your raw documents" if store.get("raw") == "given" else "the store's own text"
    lines += [f"Documents: {c['audited']} of the {c['stored']} stored documents are compared with {source}; "
              f"{c['sampled']} audited.", ""]
    if "comparison" in report:
        p = report["after"]["protection"]
        lines += ["## Your store, and the same documents written through private_vectors", "",
                  f"The copy: `PrivateEmbedding(concept={concept!r}, eps={p['eps']:g})`, the text stage "
                  f"{p['text_stage']}, the same encoder when it runs here.", "",
                  "| | your store | through private_vectors |", "|---|---|---|"]
        for row in report["comparison"]:
            lines.append(f"| {row['measure'].strip()} | {_cell(row['before'], row['unit'])} | "
                         f"{_cell(row['after'], row['unit'])} |")
        lines.append("")
    lines += ["## Personal data in the stored text", ""]
    lines += _sealed_lines(report) + _residual_lines(r, concept)
    if report.get("sealed_content"):
        lines += ["", "### Inside the sealed records (read with the key)", "",
                  *_residual_lines(report["sealed_content"], concept)]
    lines += ["", "## What an attacker recovers from the stored vectors", "",
              f"Each attacker gets {100 * TRAIN_SHARE:.0f} % of the documents with their vectors and guesses the "
              "words of the others from their vectors alone.", "",
              "| attacker | first and last names | first names | last names | full names | sensitive words | "
              "names, clean vectors | words, clean vectors |", "|---|---|---|---|---|---|---|---|"]
    for name, row in a["attackers"].items():
        cl = row.get("clean") or {}
        lines.append(f"| {name} | {_pct(row['name_recovery'])} | {_pct(row['names_first'])} | "
                     f"{_pct(row['names_last'])} | {_pct(row['names_full'])} | {_pct(row['token_recovery'])} | "
                     f"{_pct(cl.get('name_recovery')) if cl else 'not run'} | "
                     f"{_pct(cl.get('token_recovery')) if cl else 'not run'} |")
    lines += ["", f"The strongest attacker is {a['strongest']} ({a['names_scored']:.0f} people in the held-out "
              f"documents). Names count as readable when it beats guessing (the prior row) by more than "
              f"{100 * NAME_MARGIN:.0f} points."]
    if not store.get("protected"):
        lines.append("The clean-vector columns are not run for this store: its vectors carry no protection, so they "
                     "are the clean vectors.")
    lines += ["", "## What retrieval keeps", "", _retrieval_line(q), "", *_ids_lines(report.get("ids")),
              *_index_files_text(report), "## Not tested", ""]
    lines += [f"- {x}" for x in report["not_tested"]] + ["", report["threat_model"], ""]
    return "\n".join(lines)


def _sealed_lines(report: Mapping[str, Any]) -> list[str]:
    s = report.get("sealed")
    if not s:
        return []
    return [f"A sealed store: {s['records']} of {s['documents']} documents are sealed records (AES-GCM-SIV), their "
            f"text field a keyed marker. Without the key, a copy gives {s['readable']}; below, what that readable "
            "part holds, then what the records hold.", ""]


def _residual_lines(r: Mapping[str, Any], concept: Any) -> list[str]:
    if not r["documents_with_text"]:
        return ["The store keeps no document text."]
    detectors = "; ".join(r.get("detectors") or ["presidio's default recognizers"])
    lines = [f"Counted by {detectors}, over the text the store keeps (document text and string metadata) of "
             f"{r['documents']} documents; identifier types first by what the {concept} preset replaces. Surrogate "
             "names look like names by design and are counted.", ""]
    if r.get("raw_values") is not None:
        present, left = r.get("raw_values_by_type") or {}, r.get("raw_values_left_by_type") or {}
        part = r.get("raw_values_left_in_part_by_type") or {}
        lines += ["A value is kept in full when it appears as written in what the store keeps of its document, in "
                  "part when one of its words does. Values are those found in your documents, and those the store "
                  f"replaced in one document and left in another ({r.get('raw_values_from_difference', 0)}).", "",
                  "| type | identifier | in your documents | kept in full | kept in part |", "|---|---|---|---|---|"]
        for t in type_order(present, concept):
            lines.append(f"| {t} | {'yes' if is_identifier(t) else 'no'} | {present[t]} | {left.get(t, 0)} | "
                         f"{part.get(t, 0)} |")
    else:
        found = r.get("findings_by_type") or {}
        lines += ["| type | identifier | found in the store |", "|---|---|---|"]
        for t in type_order(found, concept):
            lines.append(f"| {t} | {'yes' if is_identifier(t) else 'no'} | {found[t]} |")
    values = r.get("values_left_by_type")
    if values:
        lines += ["", "Values kept (--show-values; at most 20 per type):", ""]
        lines += [f"- {t}: {', '.join(v)}" for t, v in values.items()]
    elif r.get("finding_values"):
        lines += ["", "Values found (--show-values; at most 50): " + ", ".join(r["finding_values"])]
    return lines


def _retrieval_line(q: Mapping[str, Any]) -> str:
    if q.get("mode") is None:
        return f"Not measured: {q.get('not_run', 'no encoder')}."
    if "ndcg@10_clean" not in q:
        return (f"{q['mode']} over {q['queries']} queries: NDCG@10 {q['ndcg@10']:.3f} through the store (no "
                "protection, so this is the reference for a protected copy).")
    return (f"{q['mode']} over {q['queries']} queries: NDCG@10 {q['ndcg@10']:.3f} through the store, "
            f"{q['ndcg@10_clean']:.3f} on an unprotected index of the same documents ({_pct(q['ndcg@10_kept'])} "
            f"kept); the top 10 results agree with the unprotected ones on {_pct(q['top10_overlap'])}.")

def _ids_lines(ids: Mapping[str, Any] | None) -> list[str]:
    if not ids:
        return []
    kinds = ", ".join(f"{t} {n}" for t, n in ids["by_type"].items()) or "none"
    return ["## Ids", "", f"Of {ids['ids']} ids read, {ids['personal']} look personal (an e-mail address, a phone-like "
            f"number of seven digits or more, or a name): {kinds}. Ids are stored as given.", ""]


def _index_files_text(report: Mapping[str, Any]) -> list[str]:
    """The summary's lines on heap bytes in a Chroma folder's HNSW files (none for other stores)."""
    f = report.get("index_files")
    if not f:
        return []
    head = ["## Chroma's index files", ""]
    if not f["heap_bytes"]:
        return [*head, f"None of the {f['segments']} HNSW segments holds a byte outside what its index wrote.", ""]
    where = ", ".join(f"{k} {v}" for k, v in f["collections"].items() if v)
    return [*head,
            f"{f['segments_with_heap_bytes']} of {f['segments']} HNSW segments hold {f['heap_bytes']} non-zero "
            f"bytes outside what the index wrote ({where}). chromadb persists uninitialised memory there, "
            "which can hold any text the writing process handled, raw documents included; "
            "`private_vectors.chroma.scrub_index_files(collection)` zeroes it.", ""]


def write_report(report: Mapping[str, Any], out: str | Path) -> dict[str, Path]:
    """``audit.json``, ``audit.md`` (the summary) and ``audit.png`` (the plot) in ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "audit.json", "md": folder / "audit.md", "png": folder / "audit.png"}
    paths["json"].write_text(json.dumps(report, indent=2, default=float, allow_nan=True) + "\n")
    paths["md"].write_text(summary_text(report))
    plot(report, paths["png"])
    return paths


def plot(report: Mapping[str, Any], path: str | Path) -> Path:
    """Bars per attacker: name and sensitive-token recovery on the stored vectors, and, where the
    report has them, on clean vectors and on the copy written through private_vectors. Only the
    series with a measured value are drawn and named in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = _plot_series(report)
    names = list(dict.fromkeys(n for _, rows in series for n in rows))
    x = np.arange(len(names))
    width = 0.8 / max(len(series), 1)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, metric, title in ((axes[0], "name_recovery", "first and last names"),
                              (axes[1], "token_recovery", "sensitive tokens")):
        for k, (label, rows) in enumerate(series):
            values = [_nan((rows.get(n) or {}).get(metric)) for n in names]
            ax.bar(x - 0.4 + width * (k + 0.5), values, width, label=label)
        ax.set_xticks(x, names)
        ax.set_title(f"recovered: {title}")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("share recovered (held-out documents)")
    axes[1].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _plot_series(report: Mapping[str, Any]) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """(legend label, {attacker: figures}) of every series with at least one measured figure."""
    per = report["attack"]["attackers"]
    out = [("stored vectors", dict(per)), ("clean vectors (no protection)", {n: r.get("clean") or {} for n, r in per.items()})]
    if "after" in report:
        out.append(("through private_vectors", dict(report["after"]["attack"]["attackers"])))
    measured = [(label, rows) for label, rows in out if any(
        not math.isnan(_nan(r.get(m))) for r in rows.values() for m in ("name_recovery", "token_recovery"))]
    return measured or out[:1]


def _nan(v: Any) -> float:
    return float("nan") if v is None else float(v)
