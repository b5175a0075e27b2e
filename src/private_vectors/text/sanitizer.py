"""The Sanitizer: detect concept spans, then redact them, replace them with keyed surrogates, or keep them.

    >>> from private_vectors import Sanitizer
    >>> s = Sanitizer("PII", policy="surrogate", key="a long secret")   # doctest: +SKIP
    >>> s.apply(["Amelia Okafor flew to Lagos."])                        # doctest: +SKIP
    ['Saanvi Brandt flew to Aalborg.']
    >>> s.apply_queries(["what did amelia okafor order?"])               # doctest: +SKIP
    ['what did saanvi brandt order?']

It composes the text stage's parts: recognizers (:mod:`.recognizers`) run by
:class:`~.detection.Detection`, span rules (:mod:`.rules`), the keyed entity index
(:mod:`.entity_index`: an entity found once is found again in other documents and in queries,
which are truecased first), operators (:mod:`.operators`), key checks (:mod:`.keycheck`) and the
configuration (:mod:`.stage_config`, hiding what a user asked to hide: :mod:`.config_secrets`).
``get_state()`` / ``load_state()`` move the keyed index to and from a store.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..keys import SecretKey
from .config_secrets import SECRET_FIELDS, ConfigSecrets
from .detection import (
    DEFAULT_TIMEOUT,
    DETECT_GROUP,
    ON_ERROR,
    Detection,
    DetectionError,
    detection_progress,
)
from .entity_index import EntityIndex
from .explain import Explanation, explain
from .job_steps import apply_job, escaped, freeze_job, job_facts, job_spans
from .keycheck import SANITIZER_SALT, StageKeys, stage_key
from .operators import Operator
from .precedence import merge_document_spans
from .replacement import Replacement, operator_for, replace_spans
from .rules import Decision, RuleContext
from .rules.base import learned_detector
from .scores import SCORES
from .spans import Detector, Span
from .stage_config import (
    SANITIZER_VERSION,
    build_rules,
    choose_concept,
    default_detector,
    from_config,
    get_config,
    hide_config,
    model_recognizer,
)
from .stage_options import resolve_stage_options
from .surrogates import SurrogateGenerator, load_pool
from .traits import ON_ERROR_SPAN, reading
from .transform import DocumentTransformer
from .wordlist import truecase

__all__ = ["DEFAULT_TIMEOUT", "DETECT_GROUP", "ON_ERROR", "SANITIZER_SALT", "SANITIZER_VERSION", "SECRET_FIELDS",
           "DetectionError", "Sanitizer", "detection_progress"]

REDACTED_TEXT = "<REDACTED>"


class Sanitizer(DocumentTransformer):
    """Detect concept spans and replace them: the text stage of the pipeline.

    Args:
        concept: a built-in concept name (``"PII"``, ``"PHI"``, ``"quasi"``, ``"person"``, ...), a
            list of them, a :class:`~private_vectors.text.TextConcept`, or a ``concepts.Concept``
            made with ``from_tokens`` / ``from_spacy``.
        policy: ``"redact"`` (typed placeholders), ``"surrogate"`` (keyed fake values; needs
            ``key``) or ``"keep"`` (detect only).
        key: secret for surrogates and the keyed index (str or bytes). Never stored or shown.
        detectors: recognizers to use instead of the concept's (cheap ones first). The rules weigh
            the spans of one that is no built-in recognizer by the ``traits`` it declares
            (:mod:`.traits`; kept in ``traits``, by span name), registered or not.
        entities: labels to act on (default: every label the recognizers report).
        score_threshold: spans scored below this are ignored; ``thresholds`` sets it per label.
        allow_list: strings never replaced (exact span text, case-insensitive), e.g. the company's name.
        operators: per-label policy overrides, e.g. ``{"LOCATION": "keep"}``.
        on_error: ``"raise"``, ``"fallback"`` or ``"redact_all"`` (see :mod:`.detection`).
        timeout: seconds one recognizer may take for one group of texts (None: no limit).
        chunk_size: documents longer than this are detected in overlapping chunks (offsets kept).
        rules_off: rules of the ruleset to leave out (``"context-free"``), or parts of one
            (``"context-free.ages"``); see :mod:`.rules`.
        thresholds: per-label score thresholds, e.g. ``{"LOCATION": 0.6}``.
        recognizers: names of registered recognizers to run besides the concept's (:mod:`.registry`).
        detector: ``"model"`` (the concept's recognizers plus the learned, case-blind tagger for
            its names, places, organisations and dates; see :mod:`.recognizers.tagger`) or
            ``"rules"`` (the recognizers alone: cheaper, but blind to a name in lower case).
            Default None: ``"model"`` for a concept with names or places, else ``"rules"``.
        device: where the tagger runs (``"cpu"``, ``"cuda"``); not recorded.
    """

    def __init__(self, concept: str | Any = "PII", *, policy: str = "redact", key: str | bytes | SecretKey | None = None,
                 detectors: Sequence[Detector] | None = None, entities: Sequence[str] | None = None,
                 score_threshold: float = SCORES.threshold, allow_list: Sequence[str] | None = None,
                 operators: Mapping[str, str] | None = None, on_error: str = "raise",
                 timeout: float | None = DEFAULT_TIMEOUT, chunk_size: int = 10_000,
                 rules_off: Sequence[str] | None = None, thresholds: Mapping[str, float] | None = None,
                 recognizers: Sequence[str] | None = None, detector: str | None = None, device: str = "cpu") -> None:
        try:  # first, so that no later error leaves the raw key in this frame's locals
            self._key = stage_key(key)
        finally:
            del key
        self.options = resolve_stage_options(
            policy=policy, operators=operators, entities=entities, score_threshold=score_threshold,
            thresholds=thresholds, allow_list=allow_list, on_error=on_error, timeout=timeout, chunk_size=chunk_size,
            rules_off=rules_off, keyed=self._key is not None, detector=detector, device=device)
        choice = choose_concept(concept, detectors, recognizers)
        with reading(choice.traits):
            own_tagger = any(learned_detector(d.name) for d in choice.recognizers)
        if self.options.detector is None:
            self.options = replace(self.options, detector=default_detector(choice.name, detectors, own_tagger))
        self.concept_name, self._concept, self._concept_cfg = choice.name, choice.label, choice.recorded
        self.detectors: list[Detector] = choice.recognizers
        shipped_tagger = self.options.detector == "model" and detectors is None
        if shipped_tagger:
            self.detectors.append(model_recognizer(choice.name, self.options.device))
        self.fallback, self._user_detectors, self.traits = choice.fallback, choice.user_recognizers, choice.traits
        self.rules = build_rules(self.options.rules)
        self.detection = Detection(self.detectors, self.rules, on_error=self.options.on_error, traits=self.traits,
                                   timeout=self.options.timeout, chunk_size=self.options.chunk_size)
        self.keys = StageKeys(self._key)
        self.index = EntityIndex(self.keys.index_key, header=self.keys.state_fields, check=self.keys.state_matches)
        self._secrets = ConfigSecrets(self.keys.config_key if self._key is not None else None)
        self.pool = load_pool()
        self._surrogates = SurrogateGenerator(self._key, self.pool) if self._key is not None else None
        self._settings = replace(self.options.settings(), tagger=own_tagger or shipped_tagger,
                                 reported=frozenset(x for d in self.detectors for x in getattr(d, "labels", ())))
        self.version = SANITIZER_VERSION
        self.upgraded_from: Any = None
        self.version_changes: tuple[str, ...] = ()  # recorded versions that differ (stage_config.version_changes)
        if self.fallback:
            warnings.warn("presidio-analyzer/spaCy not installed: the Sanitizer uses the weaker word-list "
                          "detector for names and places (recorded in get_config()['fallback'])", stacklevel=2)

    def __repr__(self) -> str:
        if not hasattr(self, "detectors"):  # a half-built object (a traceback with locals shows it)
            return "Sanitizer(<not constructed>)"
        return (f"Sanitizer(concept={self._concept!r}, policy={self.policy!r}, keyed={self._key is not None}, "
                f"detectors={[d.name for d in self.detectors]})")

    policy = property(lambda self: self.options.policy)
    operators = property(lambda self: dict(self.options.operators))
    entities = property(lambda self: self.options.entities)
    score_threshold = property(lambda self: self.options.score_threshold)
    allow_list = property(lambda self: self.options.allow_list)
    on_error = property(lambda self: self.options.on_error)
    timeout = property(lambda self: self.options.timeout)
    chunk_size = property(lambda self: self.options.chunk_size)
    faults = property(lambda self: self.detection.faults, doc="Recognizer faults handled by ``on_error``.")
    keyed = property(lambda self: self._key is not None, doc="Whether this Sanitizer has a key.")

    # -- detection and selection -----------------------------------------------------------
    def _context(self, view: Mapping[str, str] | None = None, lower: frozenset[str] = frozenset(),
                 raw: Sequence[Span] = (), decisions: list[Decision] | None = None) -> RuleContext:
        return RuleContext(self._settings, raw=raw, index=self.index, view=self.index.view() if view is None else view,
                           ordinary=lower, decisions=decisions)

    def _detect(self, texts: list[str]) -> list[list[Span]] | None:
        return self.detection.run(texts, self._context(), self.index.ordinary)

    def _select(self, text: str, spans: list[Span], extra: Sequence[Span] = (), view: Mapping[str, str] | None = None,
                lower: frozenset[str] = frozenset(), decisions: list[Decision] | None = None) -> list[Span]:
        """The spans one text replaces: selection rules, then overlapping spans merge, then merged rules."""
        context = self._context(view, lower, spans, decisions)
        with reading(self.traits):
            kept = self.rules.run("selection", text, list(spans), context)
            return self.rules.run("merged", text, merge_document_spans(kept, extra), context)

    def _prepared(self, texts: Sequence[str], queries: bool = False) -> tuple[list[str], list[list[Span]] | None]:
        self.index.load_pending()
        items = escaped(texts)
        with self.index.remembering():
            return items, self._detect([truecase(t, self.index.ordinary) for t in items] if queries else items)

    @staticmethod
    def _redacted_spans(texts: list[str]) -> list[list[Span]]:
        return [[Span(0, len(t), "REDACTED", SCORES.certain, ON_ERROR_SPAN)] if t else [] for t in texts]

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The detected spans of each text on its own (merged, thresholded, allow list applied);
        :meth:`document_spans` adds the keyed second pass :meth:`apply` runs over a batch."""
        items, found = self._prepared(texts)
        if found is None:
            return self._redacted_spans(items)
        return [self._select(t, s) for t, s in zip(items, found, strict=True)]

    def query_spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans that :meth:`apply_queries` would replace (truecased detection + keyed index)."""
        items, found = self._prepared(texts, queries=True)
        if found is None:
            return self._redacted_spans(items)
        with self.index.remembering():
            return [self._select(t, s, self.index.spans(t)) for t, s in zip(items, found, strict=True)]

    def document_spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans :meth:`apply` would replace in this batch: detected spans plus, by the keyed
        index, every other occurrence of an entity detected in the batch or ingested before.
        Unlike :meth:`apply`, remembers nothing."""
        items, found = self._prepared(texts)
        if found is None:
            return self._redacted_spans(items)
        return job_spans(self, items, found, freeze_job(job_facts(self, items, found)))

    def explain(self, text: str) -> Explanation:
        """Why each span of ``text`` is replaced or kept: the recognizer that found it and each rule
        that dropped, changed or kept it (:mod:`.explain`). Holds raw text: memory only, never logged."""
        return explain(self, text)

    # -- replacement -------------------------------------------------------------------------
    def _operator(self, label: str) -> Operator:
        return operator_for(label, self.options.policy, self.options.operators, self._surrogates)

    def _applied(self, texts: Sequence[str]) -> tuple[list[str], list[list[Replacement]]]:
        items, found = self._prepared(texts)
        if found is None:
            redacted = [REDACTED_TEXT if t else t for t in items]
            return redacted, [[(0, len(t), "REDACTED", o)] if o != t else [] for t, o in zip(items, redacted, strict=True)]
        job = freeze_job(job_facts(self, items, found))  # one call is one job: the two steps
        outs, logs, remembered = apply_job(self, items, found, job)
        self.index.commit_job(job, remembered)
        return outs, logs

    def apply(self, texts: Sequence[str]) -> list[str]:
        """Sanitized documents (each detected span replaced per its label's policy; see
        :meth:`document_spans`). The entities replaced are remembered in the keyed index."""
        return self._applied(texts)[0]

    def apply_recorded(self, texts: Sequence[str]) -> tuple[list[str], list[list[tuple[int, int, str, str]]]]:
        """:meth:`apply`, plus each text's replacements ``(start, end, label, written)`` (offsets
        in the input text): what the encrypted restore data of :mod:`private_vectors.restore` holds."""
        return self._applied(texts)

    def apply_queries(self, texts: Sequence[str]) -> list[str]:
        """Sanitized queries: detection on truecased text plus the keyed index of ingested entities."""
        items, found = self._prepared(texts, queries=True)
        if found is None:
            return [REDACTED_TEXT if t else t for t in items]
        with self.index.remembering():
            return [replace_spans(t, self._select(t, spans, self.index.spans(t)), self._operator)[0]
                    for t, spans in zip(items, found, strict=True)]

    # -- the keyed index (see EntityIndex) ---------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """The keyed query index as JSON-safe data: HMACs and labels, never names."""
        return self.index.get_state()

    @property
    def secret(self) -> SecretKey | None:
        """The key, as a :class:`~private_vectors.keys.SecretKey` that never shows its value (the
        key holder's restore records are sealed under it), or None."""
        return self._key

    def get_state_header(self) -> dict[str, Any]:
        """:meth:`get_state` without its entries (what a store records once, next to them)."""
        return self.index.header()

    def check_state(self, state: Mapping[str, Any]) -> None:
        """Refuse a saved index header (:meth:`get_state` without entries) made under another key."""
        self.index.check_state(state)

    def load_state(self, state: Mapping[str, Any]) -> Sanitizer:
        """Add a saved query index (from :meth:`get_state`); refuses one made under another key."""
        self.index.load_state(state)
        return self

    def defer_state(self, loader: Any) -> None:
        """Load a stored index lazily: ``loader()`` is called (once) before the next detection."""
        self.index.defer(loader)

    def take_changes(self) -> dict[str, str | None]:
        """The index entries added or changed (HMAC -> label) and removed (HMAC -> None) since the
        last call: what a store must write after a batch."""
        return self.index.take_changes()

    # -- config ------------------------------------------------------------------------------
    def secret_fields(self, obj: Any) -> Any:
        """``obj`` (a config fragment) with its token lists, patterns and allow lists replaced by
        keyed HMACs (with a key) or a ``{"withheld": true}`` marker (without one)."""
        return self._secrets.hide(obj)

    def hide_config(self, config: Any) -> Any:
        """A stored sanitizer config with its secret lists hidden as :meth:`get_config` hides them,
        so the two compare (see :func:`~.stage_config.hide_config`; an older store's version is
        recorded as ``upgraded_from``)."""
        return hide_config(self, config)

    def get_config(self) -> dict[str, Any]:
        """JSON-safe description: policy, keyed flag, recognizers and rules with their versions, pool.
        No key material; token lists, patterns and the allow list only as keyed HMACs (or withheld)."""
        return get_config(self)

    @classmethod
    def from_config(cls, config: dict[str, Any], *, key: str | bytes | None = None,
                    detectors: Sequence[Detector] | None = None, device: str = "cpu") -> Sanitizer:
        """Rebuild from :meth:`get_config`; refuses a different pool, a key that does not match, a
        recognizer or rule not registered in this process, or a newer version. A config whose
        token lists, patterns or allow list are stored as HMACs cannot rebuild them: pass
        ``detectors=`` (and build the Sanitizer with the same allow list), or reopen the store with
        the same PrivateEmbedding. A config without ``detector`` (written with the recognizers
        alone) opens as ``detector="rules"``; ``device``: where a recorded tagger runs."""
        try:  # first, so that no later error leaves the raw key in this frame's locals
            secret = stage_key(key)
        finally:
            del key
        return from_config(cls, config, secret, detectors, device)

    def check_config_key(self, config: Mapping[str, Any], where: str) -> None:
        """Refuse a keyed sanitizer config whose key check value is missing or belongs to another
        key; adopt its salt (a store keeps the check value it was written with)."""
        self.keys.check_config(config, where)
