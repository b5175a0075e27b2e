"""What every span rule is: a named, versioned object with one verb, ``apply(text, spans, context)``.

A rule reads one document's spans and returns the spans it keeps (dropped, extended or
relabelled ones differ from what it received). It runs at one **stage** of the text stage:

* ``"detection"``: on the normalised text a recognizer read (:mod:`..normalise`), per chunk;
* ``"document"``: on the original text, once the spans are mapped back to it;
* ``"selection"``: on the spans one document would replace, before overlapping spans merge;
* ``"merged"``: on the merged spans (each a union of overlapping ones).

A :class:`RuleContext` carries what a rule may read besides the text: the resolved settings,
the document's detected spans, the keyed entity index and the words the batch writes in lower
case. When the context holds a ``decisions`` list (an explanation was asked for), the pipeline
records each span a rule dropped, added or changed, and rules may note why they kept one.
Decisions hold the span's offsets and label, never its text, and live in memory only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..overlap import OverlapIndex
from ..shapes import overlaps
from ..spans import Span
from ..traits import LEARNED, has, traits_of

__all__ = ["MODEL_LABELS", "STAGES", "Decision", "Rule", "RuleContext", "RulePipeline",
           "StageSettings", "alone", "learned", "learned_detector"]

STAGES: tuple[str, ...] = ("detection", "document", "selection", "merged")
MODEL_LABELS = frozenset(["PERSON", "LOCATION", "NRP", "ORGANIZATION"])
"""Labels a statistical model or a vocabulary guesses (names, places, groups, organisations)."""


def learned(span: Span) -> bool:
    """Whether ``span`` comes from a learned, case-blind tagger (:func:`learned_detector`)."""
    return has(span, LEARNED)


def learned_detector(name: str) -> bool:
    """Whether the detector named ``name`` declares the ``"learned"`` trait (:mod:`..traits`): the
    built-in tagger, a user's tagger ``"tagger:<name>"`` (:mod:`..recognizers.tagger`), a
    registered recognizer declaring it."""
    return LEARNED in traits_of(name)


def alone(span: Span, spans: Sequence[Span], agreeing: frozenset[str] = frozenset(),
          index: OverlapIndex | None = None) -> bool:
    """Whether no other recognizer of ``span``'s kind (learned or not, :func:`learned`) reported a
    span overlapping it (those of a recognizer with a trait in ``agreeing`` aside). The learned
    tagger and the other models err on the same words ("Hodgkin", "Pol IV", "C. elegans"), so the tagger's agreement does not
    confirm another recognizer's guess, nor theirs the tagger's: each is weighed on its own.
    ``index``, an :class:`~..overlap.OverlapIndex` of ``spans``, reads only the spans near
    ``span`` (a rule asking for every span of a long document stays linear)."""
    near = spans if index is None else index.overlapping(span)
    return not any(o is not span and o.detector != span.detector and not has(o, *agreeing)
                   and learned(o) == learned(span) and overlaps(o, span) for o in near)


@dataclass(frozen=True)
class Decision:
    """One step of an explanation: ``rule`` ``action`` (``"detected"``, ``"dropped"``, ``"added"``,
    ``"changed"``, ``"kept"``) the span at ``start:end`` with ``label``, and why."""

    rule: str
    action: str
    start: int
    end: int
    label: str
    reason: str


@dataclass(frozen=True)
class StageSettings:
    """The text stage's user settings, resolved once (see ``Sanitizer``); ``tagger``: whether a
    learned tagger (:func:`learned`) is among the recognizers, so that its silence on a word is
    a second reader's opinion; ``reported``: the labels the stage's recognizers report (a rule
    that adds spans adds only labels the stage replaces)."""

    entities: tuple[str, ...] | None = None
    score_threshold: float = 0.35
    thresholds: Mapping[str, float] = field(default_factory=dict)
    allow: frozenset[str] = frozenset()
    known_labels: frozenset[str] = frozenset()
    tagger: bool = False
    reported: frozenset[str] = frozenset()

    def threshold(self, label: str) -> float:
        """The score a span labelled ``label`` needs."""
        return self.thresholds.get(label, self.score_threshold)


@dataclass
class RuleContext:
    """What a rule may read besides the text and the spans of one document."""

    settings: StageSettings
    raw: Sequence[Span] = ()
    index: Any = None
    view: Mapping[str, str] | None = None
    ordinary: frozenset[str] = frozenset()
    decisions: list[Decision] | None = None

    def note(self, rule: str, action: str, span: Span, reason: str) -> None:
        """Record a decision when an explanation was asked for (a no-op otherwise)."""
        if self.decisions is not None:
            self.decisions.append(Decision(rule, action, span.start, span.end, span.label, reason))


class Rule:
    """Base of the span rules: a name, a version, a stage, and one verb.

    Attributes:
        name: the registry name (``"context-free"``).
        version: changes when the rule's behaviour does.
        stage: one of :data:`STAGES`.
        summary: one line saying what the rule does (explanations quote it).
    """

    name: ClassVar[str] = "rule"
    version: ClassVar[str] = "1"
    stage: ClassVar[str] = "selection"
    summary: ClassVar[str] = ""

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:  # pragma: no cover
        """The spans this rule keeps of ``spans`` (found in ``text``)."""
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """Name and version (what a configuration records)."""
        return {"name": self.name, "version": self.version}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, version={self.version!r})"


class _PartedRule(Rule):
    """A rule made of named parts (:attr:`parts`), each of which can be switched off.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    parts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, off: Iterable[str] = ()) -> None:
        self.off = frozenset(off)

    def get_config(self) -> dict[str, Any]:
        """Name, version and the parts switched off, if any."""
        cfg = super().get_config()
        if self.off:
            cfg["off"] = sorted(self.off)
        return cfg


class RulePipeline:
    """An ordered list of rules, run stage by stage."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self._stages = {stage: [r for r in self.rules if r.stage == stage] for stage in STAGES}

    def run(self, stage: str, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        """``spans`` after every rule of ``stage``, in order."""
        for rule in self._stages[stage]:
            out = rule.apply(text, spans, context)
            if context.decisions is not None:
                _record(rule, spans, out, context)
            spans = out
        return spans

    def names(self) -> list[str]:
        return [r.name for r in self.rules]

    def get_config(self) -> list[dict[str, Any]]:
        return [r.get_config() for r in self.rules]


def _record(rule: Rule, before: Sequence[Span], after: Sequence[Span], context: RuleContext) -> None:
    """Note each span ``rule`` dropped, added or changed (a changed span keeps its start or end)."""
    gone = Counter(before) - Counter(after)
    new = Counter(after) - Counter(before)
    own = {(d.action, d.start, d.end, d.label) for d in context.decisions or () if d.rule == rule.name}
    for s in gone.elements():
        twin = next((n for n in new if n.start == s.start or n.end == s.end), None)
        if twin is None and ("dropped", s.start, s.end, s.label) not in own:  # the rule's own reason stands
            context.note(rule.name, "dropped", s, rule.summary)
    for s in new.elements():
        action = "changed" if any(g.start == s.start or g.end == s.end for g in gone) else "added"
        context.note(rule.name, action, s, rule.summary)
