"""The text stage's configuration: what it records, and how a stored one is rebuilt.

A configuration names the concept, the policy, the recognizers (each with its kind and version),
the ruleset with its ordered rules (each with its version) and the precedence of overlapping
spans (:data:`~private_vectors.text.precedence.PRECEDENCE`); what a user asked to hide or keep is recorded only as
keyed HMACs (:mod:`.config_secrets`). A configuration written by an earlier version of the text
stage (0.1.0 wrote version 2) opens with today's ruleset and records ``upgraded_from``; one
written by a newer version is refused.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .._version import __version__
from ..errors import ConfigMismatchError, Described, InvalidParameterError, InvalidTypeError
from .concepts import TextConcept, concept_detectors
from .config_secrets import has_hidden, is_hidden, listed
from .precedence import PRECEDENCE
from .recognizers.base import Recognizer
from .registry import DEFAULT as REGISTRY
from .rules import DEFAULT_RULESET, RulePipeline
from .scores import MODEL_THRESHOLDS
from .spans import Detector, validate_texts
from .stage_options import parse_rule
from .surrogates import load_pool
from .traits import declared

__all__ = ["MODEL_THRESHOLDS", "SANITIZER_VERSION", "ConceptChoice", "build_rules", "choose_concept", "default_detector",
           "from_config", "get_config", "hide_config", "model_labels", "model_recognizer"]

SANITIZER_VERSION = 5
"""Version of the text stage's configuration and behaviour. 5: recognizers and rules by name in a
registry, the ruleset recorded; 2 (0.1.0) to 4 open as upgrades to it."""


@dataclass(frozen=True)
class ConceptChoice:
    """What a concept argument resolves to."""

    name: str
    recorded: Any
    label: str
    recognizers: list[Detector]
    fallback: bool
    user_recognizers: bool
    traits: Mapping[str, frozenset[str]]


def builtin_names(concept: Any) -> bool:
    """Whether ``concept`` is a built-in concept name or a list of them (their recognizers are
    shipped, not a user's secret: recorded in clear and rebuilt from the names)."""
    if isinstance(concept, str):
        return True
    return isinstance(concept, (list, tuple)) and bool(concept) and all(isinstance(n, str) for n in concept)


def choose_concept(concept: Any, detectors: Sequence[Detector] | None,
                   registered: Sequence[str] | None = None) -> ConceptChoice:
    """The recognizers of ``concept`` (or the user's ``detectors`` instead), then the registered
    recognizers named in ``registered``, and how the concept is recorded."""
    if detectors is None:
        name, built, fallback = concept_detectors(concept)
    else:  # the user's recognizers replace the concept's (the concept is only recorded)
        if isinstance(detectors, (str, bytes)) or not all(hasattr(d, "spans") for d in detectors):
            raise InvalidTypeError("detectors", "a list of detectors (objects with .spans(texts))", detectors)
        name, built, fallback = str(getattr(concept, "name", concept) or "custom"), list(detectors), False
    label = concept if isinstance(concept, str) else getattr(concept, "name", "custom")
    if isinstance(concept, (list, tuple)):
        label = name = "+".join(str(getattr(c, "name", c)) for c in concept)
    if isinstance(concept, TextConcept):
        recorded: Any = concept.get_config()
    elif isinstance(concept, (list, tuple)) and all(isinstance(c, str) for c in concept):
        recorded = list(concept)
    else:
        recorded = name
    extra = [REGISTRY.get_recognizer(n) for n in validate_texts(registered, "recognizers")] if registered else []
    if not built:
        raise InvalidParameterError("concept", "a concept with at least one detector", concept)
    return ConceptChoice(name, recorded, label, [*built, *extra], fallback,
                         detectors is not None or not builtin_names(concept) or bool(extra), own_traits(detectors or ()))


def own_traits(detectors: Sequence[Detector]) -> Mapping[str, frozenset[str]]:
    """The declared traits (:func:`~.traits.declared`) of a user's recognizer objects by span name:
    those with a ``traits`` attribute that are no built-in recognizer (which a stored stage
    rebuilds by name, so they are weighed by their name)."""
    return MappingProxyType({str(d.name): declared(d, f"detectors[{i}].traits") for i, d in enumerate(detectors)
                             if getattr(d, "traits", None) is not None and not isinstance(d, Recognizer)})


_CONCEPT_MODEL_LABELS = {"person": ("PERSON",), "location": ("LOCATION",), "datetime": ("DATE_TIME",)}


def model_labels(concept_name: str) -> list[str]:
    """The labels of the concept (a preset, a built-in concept or ``"A+B"``) that the learned
    tagger reports (names, places, organisations, dates); empty for a concept without them."""
    from .presets import PRESETS
    from .recognizers.tagger import MODEL_LABELS

    wanted: set[str] = set()
    for part in concept_name.split("+"):
        preset = PRESETS.get(part)
        wanted |= set(preset.labels if preset is not None else _CONCEPT_MODEL_LABELS.get(part.lower(), ()))
    return [lab for lab in MODEL_LABELS if lab in wanted]


def default_detector(concept_name: str, detectors: Sequence[Detector] | None, own_tagger: bool = False) -> str:
    """``detector=None``: ``"model"`` (the recognizers plus the learned tagger) for a built-in
    concept with names, places or organisations; ``"rules"`` for a concept without them (dates
    alone: ``"datetime"``, which may still ask for ``"model"``), for a user's own ``detectors``
    and where ``recognizers=`` names a learned tagger (``own_tagger``: it takes the shipped one's place)."""
    named = set(model_labels(concept_name)) - {"DATE_TIME"}
    return "model" if detectors is None and named and not own_tagger else "rules"


def model_recognizer(concept_name: str, device: str = "cpu") -> Detector:
    """The learned tagger for ``detector="model"``: the labels of the concept that the tagger
    reports (:func:`model_labels`), with :data:`MODEL_THRESHOLDS` for those labels."""
    from .recognizers.tagger import TaggerRecognizer

    labels = model_labels(concept_name)
    if not labels:
        raise InvalidParameterError("detector", "'rules' for a concept without names, places, organisations or "
                                    "dates (the model finds only those)", Described("model"))
    thresholds = {lab: t for lab, t in MODEL_THRESHOLDS.items() if lab in labels}
    return TaggerRecognizer(labels, device=device, thresholds=thresholds or None)


def build_rules(rules: Sequence[str]) -> RulePipeline:
    """The rule pipeline of a rule list (``"name"`` or ``"name[part,...]"`` with parts switched off)."""
    out = []
    for entry in rules:
        name, off = parse_rule(entry)
        cls = REGISTRY.rule_class(name)
        out.append(cls(off=off) if off else cls())  # type: ignore[call-arg]
    return RulePipeline(out)


def get_config(san: Any) -> dict[str, Any]:
    """JSON-safe description of a Sanitizer: no key material; token lists, patterns and the allow
    list only as keyed HMACs (or withheld)."""
    opts = san.options
    detectors = [d.get_config() for d in san.detectors]
    cfg: dict[str, Any] = {
        "type": "sanitizer", "version": SANITIZER_VERSION, "library": __version__,
        "ruleset": DEFAULT_RULESET, "rules": san.rules.get_config(), "precedence": list(PRECEDENCE),
        "concept": san.secret_fields(san._concept_cfg),
        "policy": opts.policy, "keyed": san.keyed,
        "operators": dict(opts.operators), "entities": None if opts.entities is None else list(opts.entities),
        "score_threshold": opts.score_threshold,
        "allow_list": san.secret_fields({"allow_list": list(opts.allow_list)})["allow_list"],
        "on_error": opts.on_error, "timeout": opts.timeout, "chunk_size": opts.chunk_size,
        "detectors": san.secret_fields(detectors) if san._user_detectors else detectors,
        "fallback": san.fallback,
        "pool": {"version": san.pool.version, "sha256": san.pool.sha256}, "language": "en",
    }
    if opts.thresholds:
        cfg["thresholds"] = dict(opts.thresholds)
    if opts.detector != "rules":
        cfg["detector"] = opts.detector
    if san.upgraded_from is not None:
        cfg["upgraded_from"] = san.upgraded_from
    cfg.update(san.keys.config_fields())
    return cfg


def hide_config(san: Any, config: Any) -> Any:
    """A stored sanitizer config (possibly written before token lists were hidden) with its token
    lists, patterns and allow list hidden as ``san.get_config()`` hides them, so the two compare;
    values already hidden are left as they are. Compared with a store written by an earlier
    version, ``san`` records that it upgrades it (``upgraded_from``, written with its config)."""
    if not isinstance(config, Mapping):
        return config
    version = config.get("version")
    if san.upgraded_from is None:
        if config.get("upgraded_from") is not None:
            san.upgraded_from = config["upgraded_from"]
        elif isinstance(version, int) and not isinstance(version, bool) and version < SANITIZER_VERSION:
            san.upgraded_from = version
    out = dict(config)
    if version == SANITIZER_VERSION and "precedence" not in out:
        out["precedence"] = list(PRECEDENCE)  # recorded since; this version always merged in this order
    out["concept"] = san.secret_fields(out.get("concept"))
    out["allow_list"] = san.secret_fields({"allow_list": out.get("allow_list") or []})["allow_list"]
    if san._user_detectors:
        out["detectors"] = san.secret_fields(out.get("detectors"))
    return out


def _rules_off(config: Mapping[str, Any]) -> list[str] | None:
    """The rules (and parts) a stored configuration of this version left out of its ruleset."""
    from .rules import RULESETS

    stored = config.get("rules")
    if not isinstance(stored, list):
        return None
    names = [r.get("name") for r in stored if isinstance(r, Mapping)]
    base = RULESETS[DEFAULT_RULESET]
    unknown = [n for n in names if n not in base]
    if unknown:
        raise ConfigMismatchError(f"the text stage names rule {unknown[0]!r}, which is not in ruleset "
                                  f"{DEFAULT_RULESET!r} of this library")
    off = [n for n in base if n not in names]
    off += [f"{r['name']}.{p}" for r in stored if isinstance(r, Mapping) for p in r.get("off", ())]
    return off or None


def from_config(cls: Any, config: Mapping[str, Any], secret: Any, detectors: Sequence[Detector] | None,
                device: str = "cpu") -> Any:
    """A Sanitizer rebuilt from :func:`get_config` (see the module docstring)."""
    if not isinstance(config, Mapping) or config.get("type") != "sanitizer":
        raise InvalidParameterError("config", "a dict from Sanitizer.get_config()", Described("<not a sanitizer config>"))
    if config.get("keyed") and secret is None:
        raise InvalidParameterError("key", "the secret this keyed sanitizer was made with", None)
    version = config.get("version", 1)
    if not isinstance(version, int) or version > SANITIZER_VERSION:
        raise ConfigMismatchError(f"the stored text stage: behaviour version {version!r} is newer than this "
                                  f"library's ({SANITIZER_VERSION}); upgrade private-vectors to read this store")
    pool = config.get("pool") or {}
    current = load_pool(str(pool.get("version", "1")))
    if pool.get("sha256") and pool["sha256"] != current.sha256:
        raise ConfigMismatchError(f"surrogate pool v{pool.get('version')}: recorded sha256 differs from the "
                                  "installed pool; surrogates would not match")
    hidden = [f for f in ("concept", "allow_list") if is_hidden(config.get(f)) or has_hidden(config.get(f))]
    if detectors is None and has_hidden(config.get("detectors")):
        hidden.append("detectors")
    if hidden:
        raise InvalidParameterError(
            "config", "a text stage whose token lists, patterns and allow list can be rebuilt",
            Described(f"<{', '.join(hidden)} stored only as keyed HMACs>"),
            note="reopen the store with the same PrivateEmbedding (or Sanitizer) instead of rebuilding it")
    concept = config.get("concept")
    if isinstance(concept, Mapping):
        concept = TextConcept(concept["name"], tuple(concept.get("tokens", ())), tuple(concept.get("patterns", ())),
                              tuple(concept.get("ner_labels", ())), concept.get("label"))
    stored = config.get("detectors") or []
    detector = config.get("detector", "rules")
    user = detectors is not None or not builtin_names(concept) or \
        listed(stored) != listed(_builtin_configs(concept, detector))
    upgrade = version < SANITIZER_VERSION
    if detectors is None and (user or not upgrade):  # an upgrade of a built-in concept takes today's recognizers
        detectors = [REGISTRY.recognizer_from_config(d) for d in stored]
        for rebuilt in detectors:
            if getattr(rebuilt, "kind", None) == "tagger":
                rebuilt.device = device  # type: ignore[attr-defined]  # (not recorded; read when it loads)
    out = cls(concept, policy=config["policy"], key=secret if config.get("keyed") else None, detectors=detectors,
              entities=config.get("entities"), score_threshold=config["score_threshold"],
              allow_list=config.get("allow_list"), operators=config.get("operators"),
              on_error=config.get("on_error", "raise"), timeout=config.get("timeout"),
              chunk_size=config.get("chunk_size", 10_000), thresholds=config.get("thresholds"),
              rules_off=None if upgrade else _rules_off(config), detector=detector, device=device)
    out._user_detectors = user
    if config.get("keyed"):
        out.check_config_key(config, "the stored text stage")
    out.fallback = bool(config.get("fallback", False)) if not upgrade else out.fallback
    out.upgraded_from = config.get("upgraded_from", version if upgrade else None)
    out.version_changes = version_changes(config, out, report=not upgrade)
    return out


def version_changes(config: Mapping[str, Any], san: Any, *, report: bool = True) -> tuple[str, ...]:
    """The recognizer and rule versions the stored stage ``config`` records that differ from those
    of the rebuilt ``san``; with ``report``, they are named in a warning (the store opens: a
    version changes when what a recognizer finds or a rule keeps does, and the stored entities
    stay readable). A change of meaning is refused: another precedence of overlapping spans
    (:data:`~.precedence.PRECEDENCE`) would give a merged span another label than at ingest.

    Raises:
        ConfigMismatchError: when the recorded precedence differs from this library's.
    """
    recorded = config.get("precedence")
    if recorded is not None and list(recorded) != list(PRECEDENCE):
        raise ConfigMismatchError(f"the stored text stage merges overlapping spans by {list(recorded)}, this "
                                  f"library by {list(PRECEDENCE)}; open the store with the release that wrote it")
    changes = (*_changed("recognizer", config.get("detectors"), [d.get_config() for d in san.detectors]),
               *_changed("rule", config.get("rules"), san.rules.get_config()))
    if changes and report:
        warnings.warn(f"the stored text stage was recorded with other versions ({'; '.join(changes)}): spans found "
                      "now may differ from those found at ingest", UserWarning, stacklevel=4)
    return changes


def _changed(what: str, stored: Any, now: Sequence[Mapping[str, Any]]) -> list[str]:
    """``what`` entries (recognizer or rule configs, by type and name) whose version differs."""
    def key(c: Mapping[str, Any]) -> str:
        return "/".join(str(c[k]) for k in ("type", "name") if c.get(k) is not None)

    held = {key(c): str(c["version"]) for c in now if isinstance(c, Mapping) and "version" in c}
    return [f"{what} {key(c)} {c['version']} recorded, {held[key(c)]} here" for c in stored or ()
            if isinstance(c, Mapping) and "version" in c and held.get(key(c), str(c["version"])) != str(c["version"])]


def _builtin_configs(concept: Any, detector: str = "rules") -> list[Any]:
    """The recognizer configs of built-in concept ``concept`` (empty when it is none)."""
    try:
        name, found, _ = concept_detectors(concept)
        if detector == "model":
            found = [*found, model_recognizer(name)]
        return [d.get_config() for d in found]
    except Exception:
        return []
