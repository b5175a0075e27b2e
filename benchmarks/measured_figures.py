"""The benchmark figures the library quotes at run time, written from the committed results into
the one shipped data file ``src/private_vectors/data/measured.json``.

The privacy report quotes retrieval kept and leakage per ε for Laplace on the default encoder
(SciFact with inserted PII, two seeds: ``results/findings/text-scifact-presets`` with redaction,
``results/findings`` without a text stage); ``erase=`` chooses its method from, and the report
quotes, the erasure rows of ``results/attribute_attackers*.json``. The library never reads
``benchmarks/`` (the wheel does not ship it): re-run this script after re-running one of those
benchmarks, and commit the data file (a test checks it matches this script's output)::

    .venv/bin/python benchmarks/measured_figures.py            # rewrite the data file
    .venv/bin/python benchmarks/measured_figures.py --check    # exit 1 if it differs
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT = ROOT / "src" / "private_vectors" / "data" / "measured.json"
ATTACKERS = ("mlc", "mlc-enc", "nn")
"""The vector attackers of the harness; leakage is the strongest one's."""

# Each erasure row: (results file stem, its row name, method, parameters, ε of the Laplace noise).
# ``builtin`` is a shipped artefact as ``erase=`` loads it (its method in the parameters).
_MAIN, _EPS, _COMB, _BUILT = ("attribute_attackers", "attribute_attackers-sex-eps",
                              "attribute_attackers-sex-combined", "attribute_attackers-sex-builtin")
_K32 = {"n_clusters": 32, "n_iter": 4}
_SHIPPED = "built-in erase={'attribute': 'sex', 'method': '%s'} (as shipped)"
ERASURE_ROWS: tuple[tuple[str, str, str, dict[str, Any], float | None], ...] = (
    (_MAIN, "LEACE", "leace", {}, None),
    (_MAIN, "LEACE inside each task label (regions = diagnoses)", "region-leace", {}, None),
    (_MAIN, "cluster-LEACE (K=16, ×2)", "cluster-leace", {}, None),
    (_MAIN, "cluster-LEACE (K=32, ×4)", "cluster-leace", _K32, None),
    (_MAIN, "LEACE + adversarial projection (r=16, MLP adversary)", "adversarial", {"hidden": 256}, None),
    (_MAIN, "LEACE + adversarial projection (r=64, MLP adversary)", "adversarial", {"rank": 64, "hidden": 256},
     None),
    (_MAIN, "task projection (rank 32) + LEACE", "task-projection", {"rank": 32}, None),
    (_MAIN, "task projection (rank 10) + LEACE", "task-projection", {}, None),
    (_MAIN, "LEACE + Laplace (ε=10)", "leace", {}, 10.0),
    (_EPS, "LEACE + Laplace (ε=20)", "leace", {}, 20.0),
    (_EPS, "LEACE + Laplace (ε=40)", "leace", {}, 40.0),
    (_COMB, "cluster-LEACE (K=16, ×2) + Laplace (ε=20)", "cluster-leace", {}, 20.0),
    (_COMB, "cluster-LEACE (K=32, ×4) + Laplace (ε=20)", "cluster-leace", _K32, 20.0),
    (_COMB, "cluster-LEACE (K=32, ×4) + Laplace (ε=40)", "cluster-leace", _K32, 40.0),
    (_BUILT, _SHIPPED % "cluster-leace", "builtin", {"method": "cluster-leace"}, None),
    (_BUILT, _SHIPPED % "cluster-leace" + " + Laplace (ε=10)", "builtin", {"method": "cluster-leace"}, 10.0),
    (_BUILT, _SHIPPED % "leace", "builtin", {"method": "leace"}, None),
)
ERASURE_DATA = ("8 000 generated clinical notes of 4 000 patients, 11 diagnoses, explicit sex and age words "
                "removed by the text stage; the sex and age signal beyond the diagnosis is there by construction")


def _lines(relative: str) -> list[dict[str, Any]]:
    text = (RESULTS / relative).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def _per_eps(rows: list[dict[str, Any]], mechanism: str, clean: float) -> dict[str, list[float]]:
    """ε → [NDCG@10 over the unprotected store's, the strongest attacker's leakage in %], means
    over seeds, rounded as quoted (2 and 1 decimals)."""
    cells: dict[float, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["mechanism"] == mechanism and r["dataset"] == "scifact":
            cells[float(r["eps"])].append(r)
    return {f"{eps:g}": [round(_mean(c, "utility") / clean, 2),
                         round(100 * max(_mean(c, f"leakage_{a}") for a in ATTACKERS), 1)]
            for eps, c in sorted(cells.items())}


def laplace_figures() -> dict[str, Any]:
    """The privacy report's rows: Laplace on SciFact + PII, with redaction and with no text stage."""
    grid = _lines("findings/results_merged.jsonl")
    presets = _lines("findings/text-scifact-presets/results.jsonl")
    clean = _mean([r for r in grid if r["mechanism"] == "none" and r["dataset"] == "scifact"], "utility")
    models = {r["model"] for r in grid + presets if r["dataset"] == "scifact"}
    assert len(models) == 1, models
    return {"model": models.pop(), "data": "SciFact with inserted PII",
            "prior_percent": round(100 * _mean([r for r in presets if r["mechanism"] == "redact+laplace"],
                                               "leakage_prior"), 1),
            "redact": _per_eps(presets, "redact+laplace", clean), "none": _per_eps(grid, "laplace", clean)}


def _erasure_row(stem: str, row: str, method: str, params: dict[str, Any], eps: float | None) -> dict[str, Any]:
    block = json.loads((RESULTS / f"{stem}.json").read_text(encoding="utf-8"))["attributes"]["sex"]
    rows = {r["row"]: r for r in block["rows"]}
    acc = {k: v["accuracy"] for k, v in rows[row]["attackers"].items()}
    attacker = max(acc, key=acc.get)
    return {"method": method, "params": params, "eps": eps, "attribute": "sex",
            "strongest": round(acc[attacker], 3), "attacker": attacker,
            "floor": round(max(v["accuracy"] for v in block["floor"].values()), 3),
            "ndcg": round(rows[row]["ndcg10"], 4), "ndcg_leace": round(rows["LEACE"]["ndcg10"], 4),
            "task": round(rows[row]["task_probe"], 4),
            "task_unprotected": round(rows["text stage only"]["task_probe"], 4), "results": stem, "row": row}


def erasure_figures() -> dict[str, Any]:
    """What retrained attackers read after each erasure method (one split, seed 0)."""
    first = json.loads((RESULTS / f"{_MAIN}.json").read_text(encoding="utf-8"))["attributes"]["sex"]
    return {"data": ERASURE_DATA, "attackers": list(first["rows"][0]["attackers"]),
            "rows": [_erasure_row(*spec) for spec in ERASURE_ROWS]}


def build() -> str:
    """The data file's text."""
    data = {"about": ("Benchmark figures the library quotes at run time, written by benchmarks/measured_figures.py "
                      "from the committed results; do not edit by hand."),
            "laplace": laplace_figures(), "erasure": erasure_figures()}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the shipped file differs; write nothing")
    args = p.parse_args(argv)
    text = build()
    if args.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT} differs from the results: re-run without --check")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
