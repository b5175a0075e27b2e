"""PHI's detectors added one at a time: TAB train and presidio's synthetic held-out half per step.

Each step adds one detector (or entity type) to the previous step's; the last step is the
``"PHI"`` preset. TAB train only (the dev documents are never used to choose a rule); scores
as in ``benchmarks/text_tuning.py`` (token recall of DIRECT+QUASI mentions, token precision; the
scorers of ``_shared.py``).

    .venv/bin/python benchmarks/phi_steps.py --out benchmarks/results/text/phi_steps.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import _shared as tt


def _steps() -> list[tuple[str, Any]]:
    from private_vectors.text import concepts as c

    def build(presidio: tuple[str, ...], ids: tuple[str, ...], extra: list[Any]) -> Any:
        return lambda: c._pii_detectors(presidio, ids)[0] + [f() for f in extra]

    tokens = c._demographic_tokens
    jobs = lambda: c.TokenDetector(c.occupations(), label="DEMOGRAPHIC", name="occupation:tokens")  # noqa: E731
    qty = c.QuantityDetector
    return [
        ("PII + dates, date ranges (PHI before, with ranges)", build(("DATE_TIME",), ("DATE_TIME",), [])),
        ("+ presidio NRP", build(("DATE_TIME", "NRP"), ("DATE_TIME",), [])),
        ("+ sex/gender terms", build(("DATE_TIME", "NRP"), ("DATE_TIME",), [tokens])),
        ("+ occupations (Faker job titles)", build(("DATE_TIME", "NRP"), ("DATE_TIME",), [tokens, jobs])),
        ("+ money rule (ISO 4217 codes, currency words)",
         build(("DATE_TIME", "NRP"), ("DATE_TIME", "QUANTITY"), [tokens, jobs])),
        ("+ spaCy MONEY/QUANTITY (validated)", build(("DATE_TIME", "NRP"), ("DATE_TIME", "QUANTITY"), [tokens, jobs, qty])),
        ("+ presidio ORGANIZATION (spaCy ORG)",
         build(("DATE_TIME", "NRP", "ORGANIZATION"), ("DATE_TIME", "QUANTITY"), [tokens, jobs, qty])),
        ("+ institution names by head noun (with a part named before them and their gloss in parentheses)",
         build(("DATE_TIME", "NRP", "ORGANIZATION"), ("DATE_TIME", "QUANTITY", "ORGANIZATION"), [tokens, jobs, qty])),
        ("+ reference numbers (cue word or register-number shape)",
         build(("DATE_TIME", "NRP", "ORGANIZATION"), ("DATE_TIME", "QUANTITY", "ORGANIZATION", "REFERENCE"),
               [tokens, jobs, qty])),
        ("+ occupations named after a cue (= PHI)",
         build(("DATE_TIME", "NRP", "ORGANIZATION"),
               ("DATE_TIME", "QUANTITY", "ORGANIZATION", "REFERENCE", "OCCUPATION"), [tokens, jobs, qty])),
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(tt.DATA))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from private_vectors.text import Sanitizer

    data = Path(args.data)
    lines = ["# PHI, one detector at a time", "",
             "Command: `python benchmarks/phi_steps.py " + " ".join(sys.argv[1:]) + "`", "",
             "TAB train (92 documents): DIRECT+QUASI token recall, token precision, recall of ORG / QUANTITY / DEM "
             "/ CODE; synthetic: presidio's synthetic held-out half (750 sentences), token recall of ORGANIZATION / NRP "
             "and token precision. presidio + spaCy small (every entity type) on TAB train: 0.801 recall, "
             "0.555 precision (`presidio_train.json`). PHI before these steps (without date ranges): 0.793 recall, "
             "0.768 precision. The organisation tidying of presidio spans (no leading \"the\", no bare heads) "
             "is in every step with presidio ORGANIZATION.", "",
             "| step | TAB recall | TAB precision | ORG | QUANTITY | DEM | CODE | synth. ORG | synth. NRP | synth. precision |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, make in _steps():
        tab = tt.score_tab(Sanitizer(detectors=make()), "train", data)
        syn = tt.score_synthetic(Sanitizer(detectors=make()), data)
        r, sr = tab["recall"], syn["recall"]
        lines.append(f"| {name} | {r['DIRECT+QUASI']:.3f} | {tab['precision']:.3f} | {r['ORG']:.3f} | "
                     f"{r['QUANTITY']:.3f} | {r['DEM']:.3f} | {r['CODE']:.3f} | {sr.get('ORGANIZATION', 0):.3f} | "
                     f"{sr.get('NRP', 0):.3f} | {syn['precision']:.3f} |")
        print(lines[-1], flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", "utf-8")


if __name__ == "__main__":
    main()
