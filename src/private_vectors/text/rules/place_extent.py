"""A place span takes the rest of the place's name: a capitalised place type after it, a state code after its city."""

from __future__ import annotations

import re

from ..spans import Span
from ..vocabulary import place_codes
from .base import RuleContext, _PartedRule

__all__ = ["PlaceExtent"]

_TYPES = (r"Building|Center|Centre|Stadium|Arena|Hall|Park|College|University|Campus|Lounge|Hotel|Inn|Cafe|Café|Bar"
          r"|Pub|Gallery|Museum|Mall|Airport|Station|Club|Mountain|Lake|River|Bridge|Square|Market|Church|Cathedral"
          r"|Temple|Mosque|Hospital|Library|Theatre|Theater|Beach|Island|Valley|Tower|Castle|Palace|Gardens|Zoo")
# part ``institutions``: schools, embassies and clinics named after their place ("Harrison High School")
_INSTITUTIONS = r"High School|Schools|School|Academy|Embassy|Clinic"


def _type_res(types: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    return (re.compile(rf"[ \t]+(?:{types}|{types.upper()})\b"), re.compile(rf"\b(?:{types}|{types.upper()})[ \t]+$"))


_TYPE_AFTER, _TYPE_BEFORE = _type_res(_TYPES)
_WIDER_AFTER, _WIDER_BEFORE = _type_res(f"{_INSTITUTIONS}|{_TYPES}")
_CODE_AFTER = re.compile(r"[ \t]*,[ \t]*([A-Z]{2})\b(?![.'’]?\w)")


class PlaceExtent(_PartedRule):
    """A place span is extended over the rest of the place's name: part ``types``, a capitalised
    place type written right after or before it ("Empire State Building", "Wildcat Stadium",
    "Hotel Elegante"; in lower case, "Belgrade airport", the type word is no part of the name);
    part ``state-codes``, the code of a US state after a city and a comma ("Chicago, IL", "Mesa ,
    AZ"): a post names a venue and a town the way an address does; part ``institutions`` (version
    2), the types of a school, an embassy or a clinic too ("Harrison High School", "Ecuadorian
    Embassy"). Rows ``place-extent`` and ``place-extent.institutions`` of ``benchmarks/text_rules.py``.

    Args:
        off: parts switched off, of :attr:`parts`.
    """

    name = "place-extent"
    stage = "document"
    version = "2"
    summary = "a place span takes the rest of the place's name (its type word, its state code)"
    parts = ("types", "state-codes", "institutions")

    def apply(self, text: str, spans: list[Span], context: RuleContext) -> list[Span]:
        types, codes = "types" not in self.off, "state-codes" not in self.off
        wide = types and "institutions" not in self.off
        return [_extended(text, s, types, codes, wide) if s.label == "LOCATION" else s for s in spans]


def _extended(text: str, s: Span, types: bool, codes: bool, wide: bool = False) -> Span:
    start, end = s.start, s.end
    if types:
        after = (_WIDER_AFTER if wide else _TYPE_AFTER).match(text, end)
        before = (_WIDER_BEFORE if wide else _TYPE_BEFORE).search(text, max(0, start - 12), start)
        end = after.end() if after else end
        start = before.start() if before else start
    if codes:
        code = _CODE_AFTER.match(text, end)
        if code and code.group(1) in place_codes():
            end = code.end()
    return s if (start, end) == (s.start, s.end) else Span(start, end, s.label, s.score, s.detector)
