"""Each span rule of the text stage's default ruleset, switched off one at a time.

Shows every rule's effect on the tuning parts of four corpora and on the evasion generator, as
the project requires of a detection rule (no rule without two corpora), switched off through the
registry (``Sanitizer("PII", rules_off=[name])``; a part of a rule: ``"context-free.ages"``;
``--detector rules``, the default: ``library-rules`` in the two child scripts; ``--detector model``:
with the learned tagger, ``library-model``):

* TAB court judgments, ``train`` split: PERSON and LOC token recall, DIRECT+QUASI recall, precision;
* presidio's synthetic set, the tuning half (never the held-out one): PERSON, LOCATION, PHONE
  recall, precision;
* news: the first half of the CoNLL-2003 validation documents (the second half only reports):
  PER and LOC token recall, precision (``benchmarks/real_text.py``'s scorer);
* SciFact documents 300-600: share of documents changed (over-replacement; the first 300 are
  the measured set and are not used here);
* the evasion generator (``benchmarks/evasion.py``): leaking cases of the default stage without a
  key, ``--evasion-cases`` per category (seed 0), summed over the categories;
* the every-path corpus: ground-truth names (full names, given names, surnames: 600 values) left
  in the output for the 200 generated documents and their author metadata of
  ``tests/test_every_path.py`` (:func:`private_vectors.eval.synthetic.people_corpus`).

A rule stays if switching it off lowers a per-label token recall by 0.5 point or more, or raises
SciFact documents changed by 1 point or more, on some corpus, and it costs no recall column more
than 1 point on another. Scorers: ``benchmarks/_shared.py``, ``benchmarks/real_text.py``.

    .venv/bin/python benchmarks/text_rules.py --out benchmarks/results/text/rules.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _shared import DATA, score_scifact, score_synthetic, score_tab

HERE = Path(__file__).resolve().parent


def _rules() -> list[str]:
    """Every rule of the default ruleset, and every part of one, by name (``rules_off`` entries)."""
    from private_vectors.text import registry
    from private_vectors.text.rules import DEFAULT_RULESET, RULESETS

    out = []
    for name in RULESETS[DEFAULT_RULESET]:
        out.append(name)
        out += [f"{name}.{part}" for part in getattr(registry.rule_class(name), "parts", ())]
    return out


EVERY_PATH_KEY = "every-path-test-key-9f3K2xQ7"
"""The every-path test's key (the keyed second pass depends on it)."""


def _every_path_missed(data: Path, off: list[str], detector: str = "rules") -> int:
    """Ground-truth names of the every-path test's corpus left in the text stage's output."""
    from private_vectors.eval.synthetic import people_corpus
    from private_vectors.text import Sanitizer

    corpus = people_corpus(data / "pii" / "FakeNameGenerator.com_3000.csv", 200)
    sanitizer = Sanitizer("PII", key=EVERY_PATH_KEY, rules_off=off, timeout=None, detector=detector)
    outputs = sanitizer.apply(corpus.texts) + sanitizer.apply([m["author"] for m in corpus.metadatas])
    return len(corpus.missed(outputs))


def _child(script: str, args: list[str], out: Path) -> dict[str, Any]:
    """Run another benchmark script in a child process (scripts import no other script) and read its JSON."""
    subprocess.run([sys.executable, str(HERE / script), *args, "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads(out.with_suffix(".json").read_text("utf-8"))


_SYSTEM = {"rules": "library-rules", "model": "library-model"}
"""The name of the text stage with each detector in ``real_text.py`` and ``evasion.py``."""


def _news(data: Path, off: list[str], tmp: Path, detector: str = "rules") -> dict[str, Any]:
    """The library's scores on the first half of the CoNLL-2003 validation documents (``real_text.py``)."""
    got = _child("real_text.py", ["--data", str(data), "--corpora", "news", "--half", "first",
                                  "--systems", _SYSTEM[detector], "--rules-off", ",".join(off)], tmp / "news.md")
    return got["news"][0]["scores"]


def _evasion_leaks(off: list[str], cases: int, tmp: Path, detector: str = "rules") -> int:
    """Leaking cases of the default stage without a key (``evasion.py``, seed 0), all categories."""
    got = _child("evasion.py", ["--cases", str(cases), "--systems", _SYSTEM[detector], "--rules-off", ",".join(off)],
                 tmp / "evasion.md")
    return sum(c["leaks"] for c in got["results"][_SYSTEM[detector]].values())


_PARTS = ("tab", "synthetic", "news", "scifact", "evasion", "every-path")


def _row(name: str, data: Path, off: list[str], cases: int, detector: str = "rules",
         skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """One row of the table; the corpora in ``skip`` (of :data:`_PARTS`) are left out (``-``)."""
    from private_vectors.text import Sanitizer

    def stage() -> Any:
        return Sanitizer("PII", rules_off=off, timeout=None, detector=detector)

    r3 = lambda x: round(x, 3)  # noqa: E731
    row: dict[str, Any] = {"rule off": name}
    tab = score_tab(stage(), "train", data) if "tab" not in skip else None
    row.update({"TAB PERSON": tab["recall"]["PERSON"], "TAB LOC": tab["recall"]["LOC"],
                "TAB D+Q": tab["recall"]["DIRECT+QUASI"], "TAB precision": tab["precision"]} if tab else
               dict.fromkeys(("TAB PERSON", "TAB LOC", "TAB D+Q", "TAB precision"), "-"))
    syn = score_synthetic(stage(), data, "tuning") if "synthetic" not in skip else None
    row.update({"synthetic PERSON": syn["recall"]["PERSON"], "synthetic LOCATION": syn["recall"]["LOCATION"],
                "synthetic PHONE": syn["recall"]["PHONE"], "synthetic precision": syn["precision"]} if syn else
               dict.fromkeys(("synthetic PERSON", "synthetic LOCATION", "synthetic PHONE", "synthetic precision"), "-"))
    with tempfile.TemporaryDirectory() as tmp:
        news = _news(data, off, Path(tmp), detector) if "news" not in skip else None
        leaks = _evasion_leaks(off, cases, Path(tmp), detector) if "evasion" not in skip else "-"
    row.update({"news PER": r3(news["recall"]["PER"]), "news LOC": r3(news["recall"]["LOC"]),
                "news precision": r3(news["precision"])} if news else
               dict.fromkeys(("news PER", "news LOC", "news precision"), "-"))
    row["SciFact docs changed"] = score_scifact(stage(), data, offset=300)["changed_documents"] \
        if "scifact" not in skip else "-"
    row[f"evasion leaks (of {cases} x categories)"] = leaks
    row["every-path names missed (of 600)"] = _every_path_missed(data, off, detector) \
        if "every-path" not in skip else "-"
    return row


def _table(rows: list[dict[str, Any]], command: str, seconds: float, cases: int, detector: str = "rules") -> str:
    keys = list(rows[0])
    lines = ["# Text stage: each rule switched off", "",
             f"Command: `{command}`; wall {seconds:.0f} s. `Sanitizer(\"PII\", detector={detector!r})`; TAB train split, synthetic "
             "tuning half, news = first half of the CoNLL-2003 validation documents, SciFact documents 300-600, "
             f"evasion generator ({cases} cases per category, seed 0, no key), every-path corpus (see the "
             "script's docstring). Each row switches one rule (or part) off; compare it with the first row.", "",
             "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--rules", default=None, help="comma-separated rules_off entries (default: every rule and part; "
                   "'none': the first row only)")
    p.add_argument("--detector", default="rules", choices=tuple(_SYSTEM), help="the Sanitizer's detector")
    p.add_argument("--skip", default="", help=f"comma-separated corpora to leave out, of {','.join(_PARTS)}")
    p.add_argument("--evasion-cases", type=int, default=20)
    p.add_argument("--out", default=None, help="markdown table, rewritten after each row (JSON rows beside it)")
    args = p.parse_args()
    data = Path(args.data)
    command = "python benchmarks/text_rules.py" + (f" --rules {args.rules}" if args.rules else "") + \
        (f" --detector {args.detector}" if args.detector != "rules" else "") + \
        (f" --skip {args.skip}" if args.skip else "") + \
        f" --evasion-cases {args.evasion_cases}" + (f" --out {args.out}" if args.out else "")
    t0 = time.perf_counter()
    skip = frozenset(x for x in args.skip.split(",") if x)
    if skip - set(_PARTS):
        p.error(f"--skip: expected some of {','.join(_PARTS)}, got {','.join(sorted(skip - set(_PARTS)))}")
    names = [] if args.rules == "none" else args.rules.split(",") if args.rules else _rules()
    rows = []
    for name, off in [("(none: the default ruleset)", []), *((n, [n]) for n in names)]:
        rows.append(_row(name, data, off, args.evasion_cases, args.detector, skip))
        print(rows[-1], flush=True)
        if args.out:
            Path(args.out).write_text(_table(rows, command, time.perf_counter() - t0, args.evasion_cases, args.detector), "utf-8")
            Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    print(_table(rows, command, time.perf_counter() - t0, args.evasion_cases, args.detector))


if __name__ == "__main__":
    main()
