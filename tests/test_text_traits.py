"""Rules read the traits recognizers declare (``text.traits``), never a recognizer's name."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from private_vectors.errors import InvalidParameterError
from private_vectors.text import registry
from private_vectors.text.entity_index import strong_evidence
from private_vectors.text.recognizers import BUILTIN_KINDS, builtin_kind
from private_vectors.text.rules import RuleContext, StageSettings
from private_vectors.text.rules.name_shape import MixedCaps
from private_vectors.text.spans import Span
from private_vectors.text.traits import BUILTIN, PATTERN, TRAITS, has, traits_of

ROOT = Path(__file__).resolve().parents[1] / "src" / "private_vectors" / "text"
READERS = [*sorted((ROOT / "rules").glob("*.py")), *(ROOT / f for f in (
    "entity_index.py", "job_index.py", "job_steps.py", "precedence.py", "explain.py"))]
"""Modules that weigh spans: they may read a span's traits, never compare its recognizer's name."""


def _compared_names(path: Path) -> list[str]:
    """String literals a comparison sets against ``.detector`` or a built-in recognizer name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        strings = [c.value for side in sides for c in ast.walk(side)
                   if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        on_detector = any(isinstance(a, ast.Attribute) and a.attr == "detector" for s in sides for a in ast.walk(s))
        found += [s for s in strings if on_detector or s in BUILTIN]
    return found


@pytest.mark.parametrize("path", READERS, ids=lambda p: p.name)
def test_no_rule_compares_a_recognizer_name(path: Path) -> None:
    assert _compared_names(path) == []


def test_the_scan_sees_a_name_comparison(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('def f(s):\n    return s.detector in ("regex", "x") or kind == "presidio"\n')
    assert sorted(_compared_names(bad)) == ["presidio", "regex", "x"]


def test_each_set_is_defined_once() -> None:
    defined = [p.name for p in ROOT.rglob("*.py")
               for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.Assign) and any(getattr(t, "id", "").endswith("PATTERN_RECOGNIZERS")
                                                       for t in node.targets)]
    assert defined == []


@pytest.mark.parametrize("kind", sorted(BUILTIN_KINDS))
def test_builtin_classes_declare_the_table_traits(kind: str) -> None:
    cls = builtin_kind(kind)
    assert cls is not None and cls.traits <= TRAITS
    if cls.name in BUILTIN or kind == "tagger":
        assert cls.traits == BUILTIN[getattr(cls, "name", kind) if kind != "tagger" else "tagger"]
    else:
        assert cls.traits == frozenset()
    concept = importlib.import_module("private_vectors.text.recognizers.concept")
    assert concept.NerDetector.traits == BUILTIN["ner"] and concept.QuantityDetector.traits == frozenset()


class _Guesser:
    """A user's recognizer reporting PERSON spans (the whole text), with the traits given."""

    version = "1"
    labels = ("PERSON",)

    def __init__(self, name: str, traits: frozenset[str] | str = frozenset()) -> None:
        self.name, self.traits = name, traits

    def spans(self, texts: list[str]) -> list[list[Span]]:
        return [[Span(0, len(t), "PERSON", 0.6, self.name)] for t in texts]

    def get_config(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}


@pytest.fixture
def users():
    names = [registry.add_recognizer(_Guesser("test-patterns", frozenset([PATTERN])), replace=True),
             registry.add_recognizer(_Guesser("test-guesses"), replace=True)]
    yield names
    for name in names:
        registry.remove_recognizer(name)


def test_a_user_recognizer_declaring_a_trait_is_weighed_like_a_builtin_one(users: list[str]) -> None:
    patterns, guesses = users
    text = "CONCLUSION Lobular"  # a heading mixing capitals: a lone model guess is dropped
    ctx = RuleContext(StageSettings())
    rule = MixedCaps()
    for detector, kept in (("identifiers", True), (patterns, True), ("presidio", False), (guesses, False)):
        span = Span(0, len(text), "PERSON", 0.6, detector)
        assert (rule.apply(text, [span], ctx) == [span]) is kept, detector
        assert strong_evidence(text, span, [span]) is kept, detector
    assert has(Span(0, 1, "PERSON", 0.6, patterns), PATTERN) and traits_of(guesses) == frozenset()


def test_traits_are_forgotten_with_the_recognizer_and_checked() -> None:
    name = registry.add_recognizer(_Guesser("test-forgotten", frozenset([PATTERN])), replace=True)
    registry.remove_recognizer(name)
    assert traits_of(name) == frozenset()
    for bad in ("pattern", frozenset(["checksum"])):
        with pytest.raises(InvalidParameterError, match="traits"):
            registry.add_recognizer(_Guesser("test-bad", bad))
    assert "test-bad" not in registry.recognizers()


def test_a_user_tagger_is_learned() -> None:
    assert traits_of("tagger:my-model") == BUILTIN["tagger"] and traits_of("taggers") == frozenset()


def _literal_score_defaults(path: Path) -> list[str]:
    """Score and threshold defaults written as numbers: a parameter's default, or the default of
    ``config.get("..._score", 0.9)`` (both read :data:`~private_vectors.text.scores.SCORES`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.arguments):
            named = [*node.posonlyargs, *node.args][-len(node.defaults):] if node.defaults else []
            pairs = [*zip(named, node.defaults), *zip(node.kwonlyargs, node.kw_defaults)]
            found += [f"{path.name}:{a.arg}" for a, d in pairs if ("score" in a.arg or "threshold" in a.arg)
                      and isinstance(d, ast.Constant) and isinstance(d.value, float)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get" and len(node.args) == 2:
            key, default = node.args
            if isinstance(key, ast.Constant) and ("score" in str(key.value) or "threshold" in str(key.value)) \
                    and isinstance(default, ast.Constant) and isinstance(default.value, float):
                found.append(f"{path.name}:{key.value}")
    return found


def test_score_defaults_come_from_one_table(tmp_path: Path) -> None:
    modules = [ROOT / "sanitizer.py", ROOT / "stage_options.py", ROOT / "rules" / "base.py",
               *sorted((ROOT / "recognizers").glob("*.py"))]
    assert [x for p in modules for x in _literal_score_defaults(p)] == []
    bad = tmp_path / "bad.py"
    bad.write_text('def f(*, cue_score=0.88):\n    return config.get("score", 0.5)\n')
    assert _literal_score_defaults(bad) == ["bad.py:cue_score", "bad.py:score"]


def test_linked_scores_read_the_same_entry() -> None:
    from private_vectors.text.recognizers.places import PlaceDetector
    from private_vectors.text.rules.context_free import ContextFree
    from private_vectors.text.scores import SCORES

    cued = PlaceDetector().cue_score
    assert cued == SCORES.place_cue == PlaceDetector.from_config({}).cue_score
    text = "Hodgkin"  # a one-word name: a lone guess is dropped in a text about no one, a cued one kept
    spans = [Span(0, 7, "PERSON", s, "presidio") for s in (cued, cued - 0.01)]
    assert [ContextFree().apply(text, [s], RuleContext(StageSettings())) == [s] for s in spans] == [True, False]


def test_recorded_versions_are_compared_on_reopen() -> None:
    import copy
    import warnings

    from private_vectors.errors import ConfigMismatchError
    from private_vectors.text import Sanitizer

    config = Sanitizer("PII").get_config()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Sanitizer.from_config(config).version_changes == ()
    older = copy.deepcopy(config)
    places = next(d for d in older["detectors"] if d["type"] == "places")
    rule = next(r for r in older["rules"] if r["name"] == "context-free")
    places["version"], rule["version"] = "0", "0"
    with pytest.warns(UserWarning, match="other versions") as caught:
        reopened = Sanitizer.from_config(older)
    assert [c.split(" 0 recorded")[0] for c in reopened.version_changes] == ["recognizer places",
                                                                             "rule context-free"]
    assert "places" in str(caught[0].message) and reopened.get_config()["detectors"] == config["detectors"]
    merged = copy.deepcopy(config)
    merged["precedence"] = ["score", "regex", "keyed-index", "length"]
    with pytest.raises(ConfigMismatchError, match="merges overlapping spans"):
        Sanitizer.from_config(merged)


class _Agents:
    """A user's recognizer object, not registered: agent codes ("AX7Q") as PERSON."""

    name, labels = "agents", ("PERSON",)

    def __init__(self, traits: object) -> None:
        self.traits = traits

    def spans(self, texts: list[str]) -> list[list[Span]]:
        return [[Span(m.start(), m.end(), "PERSON", 0.9, self.name) for m in re.finditer(r"\bAX\d[A-Z]\b", t)]
                for t in texts]

    def get_config(self) -> dict[str, str]:
        return {"type": "agents", "version": "1"}


def test_an_unregistered_recognizer_keeps_its_traits() -> None:
    """``Sanitizer(detectors=[obj])``: a code no name is shaped like is dropped as a model's guess
    (rule ``name-shape``) unless its recognizer declares ``"pattern"``, as a presidio
    ``PatternRecognizer`` does by default; a bad declaration is refused naming the detector."""
    from presidio_analyzer import Pattern, PatternRecognizer

    from private_vectors.text import Sanitizer
    from private_vectors.text.recognizers.user import PresidioRecognizer

    text = "The file went to agent AX7Q on Monday."
    presidio = PresidioRecognizer(PatternRecognizer("PERSON", name="agents", patterns=[Pattern("a", r"\bAX\d[A-Z]\b", 0.9)]))
    out = [Sanitizer("PII", detectors=[d], detector="rules").apply([text])[0]
           for d in (_Agents(frozenset([PATTERN])), presidio, _Agents(None))]
    assert out == [text.replace("AX7Q", "<PERSON>")] * 2 + [text]
    with pytest.raises(InvalidParameterError, match=r"detectors\[0\]\.traits"):
        Sanitizer("PII", detectors=[_Agents("pattern")], detector="rules")
    assert traits_of("agents") == frozenset()  # nothing left in the process
