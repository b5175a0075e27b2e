"""The text stage's default scores and thresholds, in one table (:data:`SCORES`).

A recognizer's score says how sure a span is; the stage keeps a span whose score reaches its
threshold, and some rules read a score as a cue (a place after "moved here from" is scored
``place_cue``, and the ``context-free`` rule always keeps a span scored that high). Each value is
written here once: a recognizer's ``__init__`` default and its ``from_config`` default for an
older configuration both read it, and so do the rules that depend on it (as presidio's
``Pattern(name, regex, score)`` holds a pattern's score beside its name). A stored text stage
records the scores it ran with, so changing a default here changes new stages only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import InvalidParameterError

__all__ = ["MODEL_THRESHOLDS", "PATTERN_SCORES", "SCORES", "Scores", "score_param"]


@dataclass(frozen=True)
class Scores:
    """The default scores and thresholds of the text stage.

    Attributes:
        threshold: the stage's ``score_threshold``: a span scored lower is ignored.
        place: a city or country of the place list (``PlaceDetector(score=)``).
        street: a street name, above the name recognizer's full-name score (``street_score``).
        place_cue: a place after a place cue ("moved here from", ``cue_score``); the
            ``context-free`` rule always keeps a span scored at least this (a cue's boost).
        name: a known first name alone (``NameDetector(score=)``).
        full_name: a full name, above presidio's 0.85 (``full_name_score``).
        firm: a firm name made of surnames (``FirmDetector(score=)``).
        concept_pattern: a span of a user concept's pattern (``PatternDetector(score=)``).
        tagger: the learned tagger's default ``threshold`` (a span's mean tag probability); a
            place it scores lower is one it is unsure of (rule ``context-free``).
        strong: a span scored at least this is evidence enough for the keyed entity index.
        age_after_name: an age after a name (rule ``name-age``), at least ``place_cue``.
        certain: a span that is certain: a listed token, a keyed index match, a text redacted whole.
        light: :class:`~private_vectors.text.light.LightDetector`'s default ``min_score``.
    """

    threshold: float = 0.35
    place: float = 0.55
    street: float = 0.9
    place_cue: float = 0.88
    name: float = 0.6
    full_name: float = 0.86
    firm: float = 0.9
    concept_pattern: float = 0.9
    tagger: float = 0.5
    strong: float = 0.9
    age_after_name: float = 0.9
    certain: float = 1.0
    light: float = 0.5


SCORES = Scores()
"""The table the stage reads (frozen: a different default is a different release)."""


def score_param(name: str, value: Any) -> float:
    """A score or threshold given as ``name``: a number in [0, 1] (clear error naming it otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidParameterError(name, "a number in [0, 1]", value)
    return float(value)


MODEL_THRESHOLDS: Mapping[str, float] = MappingProxyType({"LOCATION": 0.4, "PERSON": 0.4})
"""The learned tagger's thresholds for ``detector="model"`` where they differ from its default
(``tagger``, the mean tag probability of a span): a place or a name needs 0.4. A place the tagger is
less sure of is still mostly a place in a short post; in a text of 100 words or more about no one such a
place is dropped again (rule ``context-free``, part ``unsure-places``). Chosen on the Broad
Twitter Corpus dev split and WNUT-17 train: rows in ``benchmarks/text_rules.py``. A name from 0.4:
a lower-case full name the tagger is less sure of ("tesfaye wardak" at 0.43) on the evasion
generator's probes, no cost on the tuning parts: rows in ``benchmarks/text_rules.py``."""

PATTERN_SCORES: Mapping[str, Mapping[str, float]] = MappingProxyType({k: MappingProxyType(v) for k, v in {
    "regex": {"email": 1.0, "iban": 1.0, "card": 0.95, "ip": 0.9, "ssn": 0.85, "date": 0.7, "url": 0.6,
              "phone": 0.65, "short_phone": 0.55, "name_cue": 0.75, "street": 0.8, "street_eu": 0.6,
              "military": 0.9, "num_street": 0.6, "po_box": 0.8, "type_first": 0.7, "compound_street": 0.75,
              "lower_street": 0.75, "venue": 0.6, "corner": 0.7, "on_street": 0.7},
    "identifiers": {"institution": 0.8, "reference": 0.8, "slash_code": 0.8, "initialled": 0.85, "handle": 0.8,
                    "id_number": 0.85, "occupation": 0.8, "date_of_birth": 0.9, "age": 0.8, "postcode": 0.7,
                    "initials": 0.85, "date": 0.75, "money": 0.9},
    "wordlist": {"full_name": 0.85, "initial": 0.75, "name": 0.6, "place": 0.7, "place_at_start": 0.6},
    "concept": {"entity": 0.85, "quantity": 0.8, "medical_pattern": 0.8},
}.items()})
"""The score of each pattern of the built-in recognizers, by recognizer and pattern name (as presidio's
``Pattern(name, regex, score)``): ``regex`` (:mod:`~.recognizers.regex`, whose street scores
:mod:`~.light` reads too), ``identifiers`` (:mod:`~.recognizers.identifiers`), ``wordlist``
(:func:`~.wordlist.name_spans`; a full name is a run starting with a first name or ending with
a last name, ``initial`` a run with a middle initial, ``name`` a listed name away from a sentence
start) and ``concept`` (a spaCy entity of :class:`~.recognizers.concept.NerDetector`, a quantity of
:class:`~.recognizers.concept.QuantityDetector`, the diagnosis pattern of concept ``medical``).
1.0 is a checksum or a shape nothing else has (an e-mail, a valid IBAN). A pattern's score is no
option: a different score is a recognizer's new version."""
