"""Patterns of the text stage that were once fitted to one data set, measured on four corpora.

Three patterns were written while tuning on presidio's synthetic set or TAB; each is now either
a general form or gone, and this script shows where each fires:

* ``military``: US military postal addresses in the form of USPS Publication 28 (section 225),
  ``private_vectors.text.recognizers.regex._MILITARY`` (kept; the CMR box added);
* ``street types``: street names by their type word, the street suffixes of USPS Publication 28
  Appendix C1 (``PlaceDetector``'s street spans, kept), split into the types the project's
  street-address regex also lists ("Street", "Road", "Avenue", ...) and the other C1 types
  ("Forges", "Knolls", "Stravenue", ...);
* ``occupation, "applicant" cue (removed)``: the two alternatives of the PHI occupation cue that
  named the party of one kind of court judgment ("the applicant, a lorry driver,", "the
  applicant was a ..."), as they were; the general cues ("worked as a", "who/he/she was a")
  stay.

For each corpus (the tuning parts only: TAB train, the synthetic tuning half, the first half of
the CoNLL-2003 validation documents, SciFact 300-600): texts with a match, matches, and where
the corpus is annotated, the share of matched word tokens inside an annotated span (DIRECT or
QUASI for TAB; any label for the others). Regexes and word lists only: seconds.

    .venv/bin/python benchmarks/fitted_patterns.py --out benchmarks/results/text/fitted_patterns.md
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from _shared import DATA, HERE, SPLIT_FILE

_TOKEN = re.compile(r"\w+")
Ann = list[tuple[int, int]]

APPLICANT_CUE = re.compile(
    r"(?:\bapplicant[ \t]+(?:is|was|had[ \t]+been|has[ \t]+been)[ \t]+an?[ \t]+|\bapplicant,[ \t]+an?[ \t]+)"
    r"(?P<occ>(?:(?!the\b|an?\b)[a-z][a-z’'-]*[ \t]+){0,2}?(?!the\b|an?\b)[a-z][a-z’'-]*)"
    r"(?=[ \t]*(?:[,.;:()]|\b(?:of|at|in|for|with|and|who|from|to|on|by|until|since|when|between|employed|"
    r"working|attached|under|during|whose|which|that)\b))")
"""The removed alternatives of the occupation cue, as they were (recorded here only)."""


def corpora(data: Path) -> dict[str, list[tuple[str, Ann]]]:
    """(text, annotated ranges) of each tuning corpus."""
    rows = [json.loads(x) for x in (data / "pii" / "tab" / "tab_train_dev.jsonl").read_text("utf-8").splitlines()]
    tab = [(r["text"], [(e["start_offset"], e["end_offset"]) for e in r["entities"]
                        if e["identifier_type"] in ("DIRECT", "QUASI")])
           for r in rows if r["metadata"]["provenance"]["dataset_type"] == "train"]
    synth = json.loads((data / "pii" / "synth_dataset_v2.json").read_text("utf-8"))
    held = set(json.loads(SPLIT_FILE.read_text("utf-8"))["held_out"])
    syn = [(r["full_text"], [(s["start_position"], s["end_position"]) for s in r["spans"]])
           for i, r in enumerate(synth) if i not in held]
    news = [(t, [(a, b) for a, b in ann]) for t, ann in _news(data)]
    lines = (data / "retrieval" / "scifact" / "corpus.jsonl").read_text("utf-8").splitlines()[300:600]
    sci = [(f"{d.get('title', '')}\n{d['text']}", []) for d in map(json.loads, lines)]
    return {"TAB train": tab, "synthetic tuning half": syn, "news first half": news, "SciFact 300-600": sci}


def _news(data: Path) -> list[tuple[str, list[list[int]]]]:
    """The first half of the CoNLL-2003 validation documents, read by ``real_text.py`` in a child
    process (scripts import no other script)."""
    code = ("import json, sys; from pathlib import Path; from real_text import load_news; "
            "print(json.dumps([[d.text, [e[:2] for e in d.entities]] for d in load_news(Path(sys.argv[1]), 'first')]))")
    out = subprocess.run([sys.executable, "-c", code, str(data)], cwd=HERE, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _street_spans(text: str) -> list[tuple[int, int]]:
    from private_vectors.text.recognizers.places import PlaceDetector

    det = _street_spans.__dict__.setdefault("det", PlaceDetector())
    return [(s.start, s.end) for s in det.spans([text])[0] if s.score == det.street_score]


def _common_type(text: str, span: tuple[int, int]) -> bool:
    from private_vectors.text.recognizers.regex import _STREET

    last = text[span[0]:span[1]].split()[-1]
    return bool(_STREET.search(f"1 Main {last}"))


def finders() -> dict[str, Callable[[str], list[tuple[int, int]]]]:
    from private_vectors.text.recognizers.regex import _MILITARY

    return {
        "military (USPS Pub. 28 s. 225)": lambda t: [m.span() for m in _MILITARY.finditer(t)],
        "street types, common (also in the street regex)":
            lambda t: [s for s in _street_spans(t) if _common_type(t, s)],
        "street types, other USPS C1 types": lambda t: [s for s in _street_spans(t) if not _common_type(t, s)],
        'occupation, "applicant" cue (removed)': lambda t: [m.span("occ") for m in APPLICANT_CUE.finditer(t)],
    }


def measure(docs: Iterable[tuple[str, Ann]], find: Callable[[str], list[tuple[int, int]]],
            annotated: bool) -> dict[str, object]:
    texts = matches = tokens = inside = 0
    for text, ann in docs:
        found = find(text)
        texts += bool(found)
        matches += len(found)
        for a, b in found:
            for m in _TOKEN.finditer(text, a, b):
                tokens += 1
                inside += any(s < m.end() and m.start() < e for s, e in ann)
    share = f"{inside / tokens:.2f}" if annotated and tokens else "-"
    return {"texts": texts, "matches": matches, "inside": share}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    data = corpora(Path(args.data))
    lines = ["# Once-fitted patterns on four corpora", "",
             "Command: `.venv/bin/python benchmarks/fitted_patterns.py"
             + (f" --out {args.out}`" if args.out else "`") + ". Tuning parts only. Each cell: texts with a "
             "match / matches / share of matched word tokens inside an annotated span (TAB: DIRECT or QUASI; "
             "`-`: the corpus has no annotation, or nothing matched).", "",
             "| pattern | " + " | ".join(f"{k} ({len(v)} texts)" for k, v in data.items()) + " |",
             "|---|" + "---|" * len(data)]
    for name, find in finders().items():
        cells = [measure(docs, find, corpus != "SciFact 300-600") for corpus, docs in data.items()]
        lines.append(f"| {name} | " + " | ".join(f"{c['texts']} / {c['matches']} / {c['inside']}" for c in cells) + " |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        Path(args.out).write_text(table, "utf-8")


if __name__ == "__main__":
    main()
