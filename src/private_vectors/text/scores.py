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

from dataclasses import dataclass

__all__ = ["SCORES", "Scores"]


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


SCORES = Scores()
"""The table the stage reads (frozen: a different default is a different release)."""
