"""What a user asks of the text stage, validated and frozen once (:func:`resolve_stage_options`).

The ``Sanitizer`` passes the resolved values down: the rules read :class:`~.rules.StageSettings`,
detection reads the time limit, chunk size and fault policy, replacement reads the policies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidParameterError, InvalidTypeError
from .detection import ON_ERROR
from .operators import POLICIES
from .presets import PRESETS
from .recognizers.identifiers import IDENTIFIER_LABELS
from .recognizers.presidio import PRESIDIO_LABELS
from .recognizers.regex import REGEX_LABELS
from .rules import RULESETS, StageSettings
from .rules.allow_list import allow_key
from .scores import SCORES, score_param
from .spans import LABELS, validate_texts

__all__ = ["DETECTORS", "KNOWN_LABELS", "StageOptions", "resolve_stage_options"]

DETECTORS: tuple[str, ...] = ("rules", "model")
"""``detector=``: ``"model"``, the concept's recognizers plus the learned, case-blind tagger
(:class:`~.recognizers.tagger.TaggerRecognizer`) for the concept's names, places, organisations
and dates (the default for a concept that has them); ``"rules"``, the recognizers alone (the
default for a concept without names and for a user's own ``detectors``)."""

KNOWN_LABELS = frozenset(LABELS) | frozenset(PRESIDIO_LABELS) | frozenset(IDENTIFIER_LABELS) | frozenset(
    REGEX_LABELS) | {"REDACTED", "QUANTITY", "DEMOGRAPHIC", "ORDINARY"} | {x for p in PRESETS.values() for x in p.labels}
"""Labels whose placeholder-shaped input (``<PERSON>``) is escaped and never replaced."""


@dataclass(frozen=True)
class StageOptions:
    """The text stage's options, validated (never the key)."""

    policy: str = "redact"
    operators: Mapping[str, str] = field(default_factory=dict)
    entities: tuple[str, ...] | None = None
    score_threshold: float = SCORES.threshold
    thresholds: Mapping[str, float] = field(default_factory=dict)
    allow_list: tuple[str, ...] = ()
    on_error: str = "raise"
    timeout: float | None = 60.0
    chunk_size: int = 10_000
    rules: tuple[str, ...] = RULESETS["0.2"]
    detector: str | None = None
    """``"rules"`` or ``"model"``; None until the Sanitizer resolves it for its concept
    (:func:`~.stage_config.default_detector`)."""
    device: str = "cpu"

    def settings(self) -> StageSettings:
        """What the span rules read."""
        return StageSettings(entities=self.entities, score_threshold=self.score_threshold,
                             thresholds=dict(self.thresholds), allow=frozenset(allow_key(a) for a in self.allow_list),
                             known_labels=KNOWN_LABELS)


def _rules(ruleset: str, rules_off: Any) -> tuple[str, ...]:
    if ruleset not in RULESETS:
        raise InvalidParameterError("ruleset", f"one of {sorted(RULESETS)}", ruleset)
    base = RULESETS[ruleset]
    if rules_off is None:
        return base
    off = validate_texts(rules_off, "rules_off")
    parts = {f"{name}.{part}" for name in base for part in _parts(name)}
    unknown = sorted(set(off) - set(base) - parts)
    if unknown:
        raise InvalidParameterError("rules_off", f"names of the ruleset's rules or their parts ({list(base)})", unknown)
    kept = []
    for name in base:
        if name in off:
            continue
        gone = sorted(p.split(".", 1)[1] for p in off if p.startswith(name + "."))
        kept.append(f"{name}[{','.join(gone)}]" if gone else name)
    return tuple(kept)


def _parts(name: str) -> tuple[str, ...]:
    from .registry import rule_class

    return tuple(getattr(rule_class(name), "parts", ()))


def resolve_stage_options(*, policy: Any = "redact", operators: Any = None, entities: Any = None,
                          score_threshold: Any = SCORES.threshold, thresholds: Any = None, allow_list: Any = None,
                          on_error: Any = "raise", timeout: Any = 60.0, chunk_size: Any = 10_000,
                          ruleset: str = "0.2", rules_off: Any = None, keyed: bool = False,
                          detector: Any = None, device: Any = "cpu") -> StageOptions:
    """Validate the text stage's arguments (clear errors naming each) and freeze them; ``keyed``
    says whether a key was given (a surrogate needs one)."""
    if policy not in POLICIES:
        raise InvalidParameterError("policy", f"one of {list(POLICIES)}", policy)
    overrides = dict(operators or {})
    for label, pol in overrides.items():
        if pol not in POLICIES:
            raise InvalidParameterError(f"operators[{label!r}]", f"one of {list(POLICIES)}", pol)
    if not keyed and "surrogate" in (policy, *overrides.values()):
        raise InvalidParameterError("key", "a secret (str or bytes) for policy 'surrogate': a key-less "
                                    "surrogate is a public substitution anyone can invert", None)
    if on_error not in ON_ERROR:
        raise InvalidParameterError("on_error", f"one of {list(ON_ERROR)}", on_error)
    threshold = score_param("score_threshold", score_threshold)
    if thresholds is not None and not isinstance(thresholds, Mapping):
        raise InvalidTypeError("thresholds", "a mapping label -> score in [0, 1]", thresholds)
    per_label = {str(k): score_param(f"thresholds[{k!r}]", v) for k, v in (thresholds or {}).items()}
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise InvalidParameterError("timeout", "None or a number of seconds > 0", timeout)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 500:
        raise InvalidParameterError("chunk_size", "an int >= 500", chunk_size)
    if isinstance(allow_list, str):
        raise InvalidTypeError("allow_list", "a list of strings", allow_list)
    if detector is not None and (not isinstance(detector, str) or detector not in DETECTORS):
        raise InvalidParameterError("detector", f"None (the concept's default) or one of {list(DETECTORS)}", detector)
    if not isinstance(device, str) or not device:
        raise InvalidTypeError("device", "a torch device name such as 'cpu' or 'cuda'", device)
    return StageOptions(
        policy=policy, operators=overrides,
        entities=None if entities is None else tuple(validate_texts(entities, "entities")),
        score_threshold=threshold, thresholds=per_label,
        allow_list=tuple(validate_texts(allow_list or [], "allow_list")), on_error=on_error,
        timeout=None if timeout is None else float(timeout), chunk_size=chunk_size,
        rules=_rules(ruleset, rules_off), detector=detector, device=device)


def parse_rule(entry: str) -> tuple[str, tuple[str, ...]]:
    """``"context-free[ages,countries]"`` -> ``("context-free", ("ages", "countries"))`` (parts off)."""
    if entry.endswith("]") and "[" in entry:
        name, parts = entry[:-1].split("[", 1)
        return name, tuple(p for p in parts.split(",") if p)
    return entry, ()
