"""Each span rule of the text stage's default ruleset, switched off one at a time.

Shows every rule's effect on both tuning corpora and on the over-replacement corpus, as the
project requires of a detection rule (no rule without two corpora): TAB court judgments
(``train`` split: PERSON and LOC token recall, DIRECT+QUASI recall, precision), presidio's
synthetic set (the tuning half, never the held-out one: PERSON, LOCATION, PHONE recall,
precision) and SciFact documents 300-600 (share of documents changed; the first 300 are the
measured set and are not used here). Scorers: ``benchmarks/_shared.py`` (as ``text_tuning.py``).

A rule (or a part of one) is switched off through the registry: ``Sanitizer("PII",
rules_off=[name])``.

A fourth column counts the ground-truth names (full names, given names, surnames: 600 values)
left in the text stage's output for the 200 generated documents and their author metadata of
``tests/test_every_path.py`` (FakeNameGenerator identities outside every shipped list,
:func:`private_vectors.eval.synthetic.people_corpus`): the
evidence for the rule that a surname the model took without the given name beside it
("Dzhamalay [Batukayev]") is not a lone word.

    .venv/bin/python benchmarks/text_rules.py --out benchmarks/results/text/rules_v4.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _shared import DATA, score_scifact, score_synthetic, score_tab


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


def _every_path_missed(data: Path, off: list[str]) -> int:
    """Ground-truth names of the every-path test's corpus left in the text stage's output."""
    from private_vectors.eval.synthetic import people_corpus
    from private_vectors.text import Sanitizer

    corpus = people_corpus(data / "pii" / "FakeNameGenerator.com_3000.csv", 200)
    sanitizer = Sanitizer("PII", key=EVERY_PATH_KEY, rules_off=off, timeout=None)
    outputs = sanitizer.apply(corpus.texts) + sanitizer.apply([m["author"] for m in corpus.metadatas])
    return len(corpus.missed(outputs))


def _row(name: str, data: Path, off: list[str]) -> dict[str, Any]:
    from private_vectors.text import Sanitizer

    def stage() -> Any:
        return Sanitizer("PII", rules_off=off, timeout=None)

    tab = score_tab(stage(), "train", data)
    syn = score_synthetic(stage(), data, "tuning")
    sci = score_scifact(stage(), data, offset=300)
    return {"rule off": name, "TAB PERSON": tab["recall"]["PERSON"], "TAB LOC": tab["recall"]["LOC"],
            "TAB D+Q": tab["recall"]["DIRECT+QUASI"], "TAB precision": tab["precision"],
            "synthetic PERSON": syn["recall"]["PERSON"], "synthetic LOCATION": syn["recall"]["LOCATION"],
            "synthetic PHONE": syn["recall"]["PHONE"], "synthetic precision": syn["precision"],
            "SciFact docs changed": sci["changed_documents"],
            "every-path names missed (of 600)": _every_path_missed(data, off)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    data = Path(args.data)
    t0 = time.perf_counter()
    rows = [_row("(none: the default ruleset)", data, [])]
    for name in _rules():
        rows.append(_row(name, data, [name]))
        print(rows[-1], flush=True)
    keys = list(rows[0])
    lines = ["# Text stage: each rule switched off", "",
             f"Command: `.venv/bin/python benchmarks/text_rules.py --out {args.out}`; "
             f"wall {time.perf_counter() - t0:.0f} s. `Sanitizer(\"PII\")`; TAB train split, synthetic tuning half, "
             "SciFact documents 300-600 (see the script's docstring). Each row switches one rule off; "
             "compare it with the first row.", "",
             "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
