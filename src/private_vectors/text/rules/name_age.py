"""A number right after a person's name is the person's age ("Amelia Okafor, 34, lives ...")."""

from __future__ import annotations

import re

from ..overlap import OverlapIndex, TakenRanges
from ..scores import SCORES
from ..spans import Span
from .base import Rule, RuleContext

__all__ = ["AGE_AFTER_NAME_SCORE", "NameAge"]

AGE_AFTER_NAME_SCORE = SCORES.age_after_name
"""The score of an age found after a name: at least the personal-context rule's cue score (0.88),
since a name with an age is about a person."""
_AFTER = re.compile(r"[ \t]*(?:,[ \t]*(?P<a>\d{1,2})[ \t]*(?=[,;)]|\.(?!\d)|$|\n|[ \t]+(?:and|who|from|of|was|is|has|had|"
                    r"said|says|lives|lived|died)\b)|\([ \t]*(?:aged?[ \t]*)?(?P<b>\d{1,2})[ \t]*\))", re.IGNORECASE)
_OLDEST = 99  # a three-digit number after a name is a score more often than an age ("O'Gorman , 109 ,")


class NameAge(Rule):
    """An age is added right after a person's span: a number of one or two digits between commas ("Amelia Okafor, 34, lives ...", "olga lavrentyeva , 28 , on
    Thursday") or in parentheses ("Ingrid Solberg (29)"), in any letter case, the way news,
    court records and chat write a person's age. Only where the stage replaces ages (a
    recognizer of the stage reports ``AGE``: ``PII``, ``quasi``); the span carries the detector
    name ``name-age`` and is never an entity of the keyed index (a bare number identifies no one
    elsewhere). Row ``name-age`` of ``benchmarks/text_rules.py``."""

    name = "name-age"
    summary = "a number right after a person's name is the person's age"

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        if "AGE" not in context.settings.reported:
            return spans
        ages = OverlapIndex([s for s in spans if s.label == "AGE"])
        added, taken = [], TakenRanges()
        for s in spans:
            m = _AFTER.match(text, s.end) if s.label == "PERSON" else None
            group = None if m is None else ("a" if m.group("a") else "b")
            if group is None or int(m.group(group)) > _OLDEST:
                continue
            age = Span(m.start(group), m.end(group), "AGE", AGE_AFTER_NAME_SCORE, self.name)
            if not ages.positions(age.start, age.end) and not taken.overlaps(age.start, age.end):
                added.append(age)
                taken.add(age.start, age.end)
        return spans + added
