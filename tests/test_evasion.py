"""The evasion probe generator (benchmarks/evasion.py): deterministic, its names outside every
shipped word list, and a leak check that sees through the disguises it generates."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from _scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


ev = load_script("benchmarks/evasion.py", "evasion_bench")


def test_generator_is_deterministic_and_seeded() -> None:
    a = ev.generate(20, seed=0)
    b = ev.generate(20, seed=0)
    c = ev.generate(20, seed=1)
    assert a == b
    assert a != c
    assert set(a) == set(ev.CATEGORIES)
    assert all(len(ps) == 20 for ps in a.values())


def test_full_size_has_distinct_names_per_category() -> None:
    probes = ev.generate(150, seed=0)
    for cat, ps in probes.items():
        if cat in ("query_typo", "reopened_surname"):
            continue  # typo'd parts / surname alone
        firsts = [p.parts[0].casefold() for p in ps]
        lasts = [p.parts[-1].casefold() for p in ps]
        assert len(set(firsts)) == 150 and len(set(lasts)) == 150, cat


def test_name_source_is_disjoint_from_shipped_lists() -> None:
    data = json.loads(ev.NAMES_FILE.read_text("utf-8"))
    entries = [w for key in ("first", "last") for ws in data[key].values() for w in ws]
    shipped = ev.shipped_words()
    assert len(shipped) > 30_000  # the surrogate pool alone has ~60k entries: the scan found it
    overlap = sorted(w for w in entries if ev._words(w) & shipped)
    assert overlap == [], f"probe names now in a shipped list (drop them or keep them out): {overlap}"
    firsts, lasts = ev.name_source()
    assert len(firsts) >= 150 and len(lasts) >= 150
    assert len(ev.name_origins()) >= 30  # many naming traditions, most of them non-Western


def test_name_source_drops_entries_a_shipped_list_gains() -> None:
    firsts, lasts = ev.name_source()
    gained = frozenset({firsts[0].casefold(), lasts[0].casefold()})
    f2, l2 = ev.name_source(shipped=gained)
    assert firsts[0] not in f2 and lasts[0] not in l2
    assert len(f2) == len(firsts) - 1 and len(l2) == len(lasts) - 1


def test_probes_carry_the_disguise_and_the_name() -> None:
    probes = ev.generate(10, seed=3)
    for p in probes["url"]:
        text = p.batches[0][0]
        assert "/" in text or "." in text
        assert ev.leaked_parts(p.parts, text) == list(p.parts)
    for p in probes["placeholder"]:
        assert f"<{p.parts[0].upper()}_{p.parts[1].upper()}>" in p.batches[0][0]
    for p in probes["full_width"]:
        assert p.parts[0] not in p.batches[0][0]  # really disguised
        assert ev.leaked_parts(p.parts, p.batches[0][0]) == list(p.parts)
    for p in probes["zero_width"]:
        assert p.parts[0] not in p.batches[0][0]
        assert ev.leaked_parts(p.parts, p.batches[0][0]) == list(p.parts)
    for p in probes["line_break"]:
        assert f"{p.parts[0]}\n{p.parts[1]}" in p.batches[0][0]
    for p in probes["cross_document_case"]:
        first, second = p.batches[0]
        assert p.parts[0] in first and p.parts[0].lower() in second and p.check == ("document", 1)
    for p in probes["cross_batch_case"]:
        assert len(p.batches) == 2 and p.check == ("document", 1)
    for p in probes["reopened_upper"] + probes["reopened_surname"]:
        assert p.reopen and p.queries
    for p in probes["query_typo"]:
        assert ev.leaked_parts(p.parts, p.queries[0]) == list(p.parts)
        assert not ev.leaked_parts(p.parts, p.batches[0][0])  # the typo'd form is not the ingested one


def test_leak_check() -> None:
    parts = ("Amelia", "Okafor")
    assert ev.leaked_parts(parts, "I met <PERSON> yesterday.") == []
    assert ev.leaked_parts(parts, "I met amelia <PERSON>.") == ["Amelia"]
    assert ev.leaked_parts(parts, "linkedin.com/in/amelia-okafor") == ["Amelia", "Okafor"]
    assert ev.leaked_parts(parts, "‹AMELIA_OKAFOR›") == ["Amelia", "Okafor"]
    assert ev.leaked_parts(parts, "Ame\u200blia Oka\u00adfor") == ["Amelia", "Okafor"]
    assert ev.leaked_parts(parts, ev.full_width("Amelia")) == ["Amelia"]
    assert ev.leaked_parts(parts, "Okaforian ameliorate") == []  # whole words only
    assert ev.leaked_parts(("Al", "Okafor"), "al <PERSON>") == []  # parts under 3 letters never count


def test_typo_changes_one_inner_letter() -> None:
    rng = random.Random(0)
    for word in ("Okafor", "Tse", "Thirunavukkarasu"):
        for _ in range(50):
            out = ev.typo(word, rng)
            assert out.casefold() != word.casefold() and out[0] == word[0]
            assert abs(len(out) - len(word)) <= 1


def test_run_category_counts_leaks_in_the_checked_text() -> None:
    class Echo(ev.TextStage):  # stores everything as written: every probe must leak
        def documents(self, texts):
            return list(texts)

        def queries(self, texts):
            return list(texts)

        def reopened(self):
            return self

    class Blank(Echo):  # stores nothing: no probe may leak
        def documents(self, texts):
            return ["<REDACTED>" for _ in texts]

        def queries(self, texts):
            return ["<REDACTED>" for _ in texts]

    probes = ev.generate(5, seed=0)
    leaks = {name: ev.summary(ev.evaluate(probes, {name: stage}))[name]
             for name, stage in (("echo", Echo), ("blank", Blank))}
    assert all(v["leaks"] == 5 for v in leaks["echo"].values())
    assert all(v["leaks"] == 0 for v in leaks["blank"].values())


@pytest.mark.slow
def test_library_default_runs_on_probes() -> None:
    probes = ev.generate(3, seed=0, categories=("all_caps", "reopened_upper"))
    out = ev.summary(ev.evaluate(probes, {"library": ev.LibraryStage}))
    assert set(out["library"]) == {"all_caps", "reopened_upper"}


def test_form_and_common_probes_carry_their_form() -> None:
    probes = ev.generate(150, seed=0, categories=ev.FORM_CATEGORIES + ev.COMMON_CATEGORIES)
    firsts, lasts = ev.common_source()
    common = {w.casefold() for w in firsts + lasts}
    for cat in ev.COMMON_CATEGORIES:
        for p in probes[cat]:
            names = p.parts[1:] if cat == "common_hashtag" else p.parts
            assert all(part.casefold() in common for part in names), (cat, p.parts)
    for cat in ("possessive", "common_possessive"):
        for p in probes[cat]:
            text = p.batches[0][0]
            assert re.search(rf"{re.escape(p.parts[1])}'s? ", text), text
            assert ev.leaked_parts(p.parts, text) == list(p.parts)
    for cat in ("initial", "common_initial"):
        for p in probes[cat]:
            assert p.parts == (p.parts[0],) and re.search(rf"\b\w\. {re.escape(p.parts[0])}\b", p.batches[0][0])
    shapes = {"initial_joined": r"\b\w\.{last}\b", "initial_after": r"\b{last}, \w\.",
              "possessive_surname": r"^{last}'s? "}
    for kind, shape in shapes.items():
        for cat in (kind, f"common_{kind}"):
            for p in probes[cat]:
                text = p.batches[0][0]
                assert len(p.parts) == 1 and re.search(shape.format(last=re.escape(p.parts[0])), text), text
    for cat in ("hashtag", "common_hashtag"):
        for p in probes[cat]:
            text = p.batches[0][0]
            assert f"#{p.parts[0]}" in text
            assert ev.leaked_parts(p.parts, text) == [p.parts[0]]  # the joined form is what a reader sees
            assert ev.leaked_parts(p.parts, text.replace(f"#{p.parts[0]}", f"#<PERSON>{p.parts[2]}")) == [p.parts[2]]
    for p in probes["common_lower_case"]:
        text = p.batches[0][0]
        assert f"{p.parts[0]} {p.parts[1]}".lower() in text


def test_common_names_are_common_and_long_enough() -> None:
    firsts, lasts = ev.common_source()
    assert len(firsts) >= 150 and len(lasts) >= 150
    assert all(len(w) >= 3 and " " not in w for w in firsts + lasts)
    assert {"Smith", "Garcia", "Wang", "Kumar", "Nguyen", "Müller"} <= set(lasts)


def test_the_held_out_probes_share_no_template_or_name_with_the_tuning_generator() -> None:
    templates, (firsts, lasts), (cfirsts, clasts) = ev.fresh()
    tuning = {s for group in vars(ev.TUNING).values() for s in group}
    assert not tuning & {s for group in vars(templates).values() for s in group}
    tuning_names = {w for names in (*ev.name_source(shipped=frozenset()), *ev.common_source()) for n in names
                    for w in ev._words(n)}
    held = {w for names in (firsts, lasts, cfirsts, clasts) for n in names for w in ev._words(n)}
    assert not held & tuning_names and not {w for n in firsts + lasts for w in ev._words(n)} & ev.shipped_words()
    probes = ev.generate(150, seed=0, names=(firsts, lasts), templates=templates, common=(cfirsts, clasts))
    assert set(probes) == set(ev.CATEGORIES) and all(len(ps) == 150 for ps in probes.values())
    frames = {t.split("{")[0] for t in ev.TUNING.sentences if not t.startswith("{")}
    assert not any(p.batches[0][0].startswith(f) for p in probes["lower_case"] for f in frames)
