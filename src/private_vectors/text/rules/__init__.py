"""Span rules: named, versioned objects that keep, drop, extend or relabel the spans of one document.

One concern per file; :data:`RULESETS` maps a ruleset's name to its ordered rule names (what a
configuration records), :data:`BUILTIN_RULES` a rule's name to its class. Switching a rule off
is leaving it out of the list (``Sanitizer(rules_off=["context-free"])``); a rule's ``parts``
switch off the same way (``"context-free.ages"``).

    detection   name-shape, person-title              (on the text the recognizers read)
    document    mixed-caps, lower-case-guesses, model-phones, house-numbers, place-extent
                                                  (on the original text)
    selection   escaped-placeholders, score-threshold, name-age, entities, ordinary-words,
                index-label, context-free               (then overlapping spans merge)
    merged      allow-list
"""

from __future__ import annotations

from .allow_list import AllowList
from .base import MODEL_LABELS, STAGES, Decision, Rule, RuleContext, RulePipeline, StageSettings
from .context_free import ContextFree
from .escaped import EscapedPlaceholders, escape
from .house_numbers import HouseNumbers
from .index_label import IndexLabel
from .lower_case_guesses import LowerCaseGuesses
from .model_phones import ModelPhones
from .name_age import NameAge
from .name_shape import MixedCaps, NameShape
from .ordinary_words import OrdinaryWords, lower_case_words
from .person_title import PersonTitle
from .place_extent import PlaceExtent
from .thresholds import Entities, ScoreThreshold

__all__ = ["BUILTIN_RULES", "DEFAULT_RULESET", "MODEL_LABELS", "RULESETS", "STAGES", "Decision", "Rule", "RuleContext",
           "RulePipeline", "StageSettings", "escape", "lower_case_words"]

BUILTIN_RULES: dict[str, type[Rule]] = {r.name: r for r in (
    NameShape, PersonTitle, MixedCaps, LowerCaseGuesses, ModelPhones, HouseNumbers, PlaceExtent,
    EscapedPlaceholders, ScoreThreshold, NameAge,
    Entities, OrdinaryWords, IndexLabel, ContextFree, AllowList)}
"""The built-in rules by name."""

DEFAULT_RULESET = "0.2"
RULESETS: dict[str, tuple[str, ...]] = {
    "0.2": ("name-shape", "person-title", "mixed-caps", "lower-case-guesses", "model-phones", "house-numbers",
            "place-extent", "escaped-placeholders",
            "score-threshold", "name-age", "entities", "ordinary-words", "index-label", "context-free", "allow-list"),
}
"""Ruleset name -> the ordered rule names it runs (within a stage, in this order)."""
