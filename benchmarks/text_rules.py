"""Each detection rule of the text stage's behaviour version 4, switched off one at a time.

Shows every rule's effect on both tuning corpora and on the over-replacement corpus, as the
project requires of a detection rule (no rule without two corpora): TAB court judgments
(``train`` split: PERSON and LOC token recall, DIRECT+QUASI recall, precision), presidio's
synthetic set (the tuning half, never the held-out one: PERSON, LOCATION, PHONE recall,
precision) and SciFact documents 300-600 (share of documents changed; the first 300 are the
measured set and are not used here). Scorers: ``benchmarks/_shared.py`` (as ``text_tuning.py``).

A rule is switched off by replacing the function that applies it (benchmark-only; the library
has no switch for single rules: a stored configuration records the behaviour version).

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
import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _shared import DATA, score_scifact, score_synthetic, score_tab


@contextlib.contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _rules() -> dict[str, Callable[[], contextlib.AbstractContextManager[None]]]:
    from private_vectors.text import normalise, regex
    from private_vectors.text import sanitizer as stage

    return {
        "context: one-word guesses and countries kept without personal context":
            lambda: _patched(stage, "_context_free", lambda text, spans: spans),
        "context: a surname beside a capitalised word is not a lone word":
            lambda: _patched(stage, "_in_capitalised_run", lambda text, span: False),
        "phones: phonenumbers validation (regex) and model phones checked":
            lambda: _both(_patched(regex, "phone_ok", lambda v: True), _patched(stage, "_valid_phones", lambda t, s: s)),
        "headings: spans mixing capitals and other words are no names":
            lambda: _patched(stage, "_mixed_caps", lambda v: False),
        "domains: a bare domain a letter continues is no URL":
            lambda: _patched(stage, "_whole_domains", lambda t, s: s),
        "index: an English word of a name (no known name) is not propagated alone":
            lambda: _patched(stage, "_plain_word", lambda token: False),
        "cues: name cues shaped like names, no film credits":
            lambda: _both(_patched(regex, "_NAME_CUE", regex._NAME_CUE_V3),
                          _patched(regex, "_cue_name_shaped", lambda v: True)),
        "addresses: no literal 'nan' address line":
            lambda: _patched(regex, "_TAIL", regex._TAIL_V3),
        "context: no rule for long texts (agreed one-word names, name-list phrases ending in a plain noun)":
            lambda: _patched(stage, "_long_text", lambda text: False),
        "addresses: a town line above a country line is joined to it and gives no personal context":
            lambda: _both(_patched(normalise, "country_line", lambda chars, start: False),
                          _patched(stage, "_town_line", lambda text, s: False)),
        "context: an age is kept without personal context":
            lambda: _patched(stage, "_group_age", lambda s: False),
        "phones: numbers joined to a longer code by - or / are phones":
            lambda: _both(_patched(regex, "in_code", lambda t, a, b: False),
                          _patched(stage, "in_code", lambda t, a, b: False)),
        "addresses: a count in a sentence may be a continental address":
            lambda: _patched(regex, "_in_sentence", lambda v: False),
    }


@contextlib.contextmanager
def _both(a: contextlib.AbstractContextManager[None], b: contextlib.AbstractContextManager[None]) -> Iterator[None]:
    with a, b:
        yield


EVERY_PATH_KEY = "every-path-test-key-9f3K2xQ7"
"""The every-path test's key (the keyed second pass depends on it)."""


def _every_path_missed(data: Path) -> int:
    """Ground-truth names of the every-path test's corpus left in the text stage's output."""
    from private_vectors.eval.synthetic import people_corpus
    from private_vectors.text import Sanitizer

    corpus = people_corpus(data / "pii" / "FakeNameGenerator.com_3000.csv", 200)
    sanitizer = Sanitizer("PII", key=EVERY_PATH_KEY)
    outputs = sanitizer.apply(corpus.texts) + sanitizer.apply([m["author"] for m in corpus.metadatas])
    return len(corpus.missed(outputs))


def _row(name: str, data: Path) -> dict[str, Any]:
    from private_vectors.text import Sanitizer

    tab = score_tab(Sanitizer("PII"), "train", data)
    syn = score_synthetic(Sanitizer("PII"), data, "tuning")
    sci = score_scifact(Sanitizer("PII"), data, offset=300)
    return {"rule off": name, "TAB PERSON": tab["recall"]["PERSON"], "TAB LOC": tab["recall"]["LOC"],
            "TAB D+Q": tab["recall"]["DIRECT+QUASI"], "TAB precision": tab["precision"],
            "synthetic PERSON": syn["recall"]["PERSON"], "synthetic LOCATION": syn["recall"]["LOCATION"],
            "synthetic PHONE": syn["recall"]["PHONE"], "synthetic precision": syn["precision"],
            "SciFact docs changed": sci["changed_documents"], "every-path names missed (of 600)": _every_path_missed(data)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    data = Path(args.data)
    t0 = time.perf_counter()
    rows = [_row("(none: the version-4 text stage)", data)]
    for name, off in _rules().items():
        with off():
            rows.append(_row(name, data))
        print(rows[-1], flush=True)
    keys = list(rows[0])
    lines = ["# Text stage version 4: each rule switched off", "",
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
