r"""The registry of recognizers and span rules, by name.

The text stage records the names (and versions) of the recognizers and rules it ran; a stored
configuration is rebuilt from those names. Built-in recognizer kinds (:data:`~.recognizers.BUILTIN_KINDS`)
and rules (:data:`~.rules.BUILTIN_RULES`) are always known; a user's own recognizer is added
by name, once per process, before a store that names it is opened:

    >>> from presidio_analyzer import Pattern, PatternRecognizer
    >>> from private_vectors.text import Sanitizer, registry
    >>> ids = PatternRecognizer(supported_entity="EMPLOYEE_ID", name="employee-ids",
    ...                         patterns=[Pattern("employee id", r"\bEMP-\d{6}\b", 0.9)])
    >>> registry.add_recognizer(ids, replace=True)
    'employee-ids'
    >>> Sanitizer("PII", recognizers=["employee-ids"]).apply(["Badge EMP-204981 was revoked."])  # doctest: +SKIP
    ['Badge <EMPLOYEE_ID> was revoked.']

A configuration records a registered recognizer by name and version only
(:mod:`.recognizers.user`); one naming a recognizer that is not registered in the reopening
process is refused, naming it. As in presidio's ``RecognizerRegistry``, a recognizer is added as
an object (:meth:`Registry.add_recognizer`: one of the text stage's, or a presidio
``EntityRecognizer`` as it is), removed by name, or loaded from presidio's YAML format
(:meth:`Registry.add_recognizers_from_yaml`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigMismatchError, Described, InvalidParameterError, InvalidTypeError
from .recognizers import BUILTIN_KINDS, builtin_kind
from .recognizers.user import (
    REGISTERED,
    as_registered,
    is_presidio_recognizer,
    presidio_yaml_recognizers,
)
from .rules import BUILTIN_RULES, Rule
from .spans import Detector
from .traits import declare, forget

__all__ = ["REGISTERED", "Registry", "add_recognizer", "add_recognizers_from_yaml", "add_rule", "get_recognizer",
           "recognizer_from_config", "recognizers", "remove_recognizer", "remove_rule", "rule_class", "rules"]


class Registry:
    """Recognizers and rules by name (one per process: :data:`DEFAULT`)."""

    def __init__(self) -> None:
        self._recognizers: dict[str, Detector] = {}
        self._rules: dict[str, type[Rule]] = dict(BUILTIN_RULES)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Registry(recognizers={sorted(self._recognizers)}, rules={len(self._rules)})"

    # -- recognizers ---------------------------------------------------------------------
    def add_recognizer(self, recognizer: Any, *, name: str | None = None, replace: bool = False) -> str:
        """Register ``recognizer`` (an object with ``spans(texts)``, ``name`` and ``get_config()``,
        or a presidio ``EntityRecognizer``) under ``name`` (default: its own). Returns the name.
        A built-in kind's name, or a name already taken (unless ``replace``), is refused. The
        rules weigh its spans by the ``traits`` it declares (:mod:`.traits`; none: a guess)."""
        if not (isinstance(recognizer, Detector) or is_presidio_recognizer(recognizer)):
            raise InvalidTypeError("recognizer", "a recognizer (spans(texts), name, get_config()) or a presidio "
                                   "EntityRecognizer", recognizer)
        key = name if name is not None else getattr(recognizer, "name", None)
        if not isinstance(key, str) or not key.strip():
            raise InvalidParameterError("name", "a non-empty recognizer name", key)
        if key in BUILTIN_KINDS:
            raise InvalidParameterError("name", f"a name that is no built-in recognizer ({sorted(BUILTIN_KINDS)})", key)
        with self._lock:
            held = self._recognizers.get(key)
            if held is not None and not replace and _unwrapped(held) is not recognizer:
                raise InvalidParameterError("name", "a name not registered yet (or replace=True)", key)
            declare(key, recognizer)
            self._recognizers[key] = as_registered(recognizer, key)
        return key

    def add_recognizers_from_yaml(self, path: Any, *, replace: bool = False) -> list[str]:
        """Register every English recognizer of a presidio YAML recognizer file, each under its
        ``name`` (presidio's own loader reads the file). Returns the names."""
        return [self.add_recognizer(r.recognizer, replace=replace) for r in presidio_yaml_recognizers(path)]

    def remove_recognizer(self, name: str) -> None:
        """Forget a registered recognizer (a store naming it then refuses to open)."""
        with self._lock:
            forget(name)
            if self._recognizers.pop(name, None) is None:
                raise InvalidParameterError("name", f"a registered recognizer ({sorted(self._recognizers)})", name)

    def get_recognizer(self, name: str) -> Detector:
        """The registered recognizer ``name``.

        Raises:
            ConfigMismatchError: naming it, when it is not registered in this process.
        """
        with self._lock:
            found = self._recognizers.get(name)
        if found is None:
            raise ConfigMismatchError(
                f"the text stage names recognizer {name!r}, which is not registered in this process; register it "
                "(private_vectors.text.registry.add_recognizer(...)) before opening the store")
        return found

    def recognizers(self) -> list[str]:
        """The registered recognizers' names (built-in kinds aside)."""
        with self._lock:
            return sorted(self._recognizers)

    def recognizer_from_config(self, config: Mapping[str, Any]) -> Detector:
        """A recognizer rebuilt from its config: a built-in kind from its options, a registered one by name."""
        kind = config.get("type") if isinstance(config, Mapping) else None
        if kind == REGISTERED:
            return self.get_recognizer(str(config.get("name")))
        cls = builtin_kind(str(kind))
        if cls is None:
            raise InvalidParameterError("config['detectors']", f"recognizer configs of a type in "
                                        f"{sorted(BUILTIN_KINDS)} or {REGISTERED!r} (a registered name)", kind)
        return cls.from_config(config)

    # -- rules ---------------------------------------------------------------------------
    def add_rule(self, rule: type[Rule], *, replace: bool = False) -> str:
        """Register a rule class (a :class:`~private_vectors.text.rules.Rule` subclass) by its name."""
        if not (isinstance(rule, type) and issubclass(rule, Rule)) or not rule.name or rule.name == Rule.name:
            raise InvalidTypeError("rule", "a Rule subclass with its own name", rule)
        with self._lock:
            if rule.name in self._rules and not replace and self._rules[rule.name] is not rule:
                raise InvalidParameterError("rule", "a rule name not registered yet (or replace=True)",
                                            Described(repr(rule.name)))
            self._rules[rule.name] = rule
        return rule.name

    def remove_rule(self, name: str) -> None:
        """Forget a user's rule (built-in rules stay registered; leave them out of a ruleset instead)."""
        with self._lock:
            if name in BUILTIN_RULES or self._rules.pop(name, None) is None:
                raise InvalidParameterError("name", "a rule a user registered", name)

    def rule_class(self, name: str) -> type[Rule]:
        """The rule registered as ``name``.

        Raises:
            ConfigMismatchError: naming it, when it is not registered in this process.
        """
        with self._lock:
            found = self._rules.get(name)
        if found is None:
            raise ConfigMismatchError(f"the text stage names rule {name!r}, which is not registered in this process; "
                                      "register it (private_vectors.text.registry.add_rule(...)) first")
        return found

    def rules(self) -> list[str]:
        """The registered rules' names."""
        with self._lock:
            return sorted(self._rules)


def _unwrapped(held: Any) -> Any:
    inner = getattr(held, "inner", None)
    return getattr(inner, "recognizer", inner)


DEFAULT = Registry()
"""The process's registry (what stored configurations are rebuilt from)."""

add_recognizer = DEFAULT.add_recognizer
add_recognizers_from_yaml = DEFAULT.add_recognizers_from_yaml
remove_recognizer = DEFAULT.remove_recognizer
get_recognizer = DEFAULT.get_recognizer
recognizers = DEFAULT.recognizers
recognizer_from_config = DEFAULT.recognizer_from_config
add_rule = DEFAULT.add_rule
remove_rule = DEFAULT.remove_rule
rule_class = DEFAULT.rule_class
rules = DEFAULT.rules
