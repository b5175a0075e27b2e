"""The Sanitizer: detect concept spans, then redact them, replace them with keyed surrogates, or keep them.

    >>> from private_vectors import Sanitizer
    >>> s = Sanitizer("PII", policy="surrogate", key="a long secret")   # doctest: +SKIP
    >>> s.apply(["Amelia Okafor flew to Lagos."])                        # doctest: +SKIP
    ['Saanvi Brandt flew to Aalborg.']
    >>> s.apply_queries(["what did amelia okafor order?"])               # doctest: +SKIP
    ['what did saanvi brandt order?']

Queries are short and often lower-case, where spaCy's small model finds nothing. ``apply_queries``
therefore (1) truecases known name/place words before detection and (2) matches query words
case-insensitively against a **keyed index** of the entity tokens this Sanitizer replaced at
ingest: HMACs under a subkey of the user's key, never the names. ``get_state()`` returns that
index as a JSON-safe dict and ``load_state()`` restores it, so a store can persist it next to
its config (helper for stores: save ``get_state()`` after adding documents; call
``load_state(saved)`` when reopening). Without a key the index uses a random per-instance key:
it works in memory but cannot be restored in another process.

Faults never let raw text through silently: a detector that raises or exceeds ``timeout``
raises :class:`DetectionError` unless the user chose ``on_error="fallback"`` (the regex and
word-list detectors replace the failed one for that call; recorded in ``faults`` and warned)
or ``on_error="redact_all"`` (every text of the failed call becomes ``<REDACTED>``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import hashlib
import hmac
import re
import secrets
import threading
import warnings
from collections import ChainMap, Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from .._detect_threads import call_with_timeout
from .._version import __version__
from ..errors import (
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    PrivateVectorsError,
)
from ..keys import SecretBytes, SecretKey
from .concepts import (
    NerDetector,
    PatternDetector,
    QuantityDetector,
    TextConcept,
    TokenDetector,
    concept_detectors,
)
from .identifiers import IDENTIFIER_LABELS, IdentifierDetector
from .names import (
    _PARTICLES,
    FirmDetector,
    NameDetector,
    PlaceDetector,
    _common_words,
    _countries,
    english_words,
    plain_nouns,
)
from .normalise import country_line, normalise
from .operators import POLICIES, Keep, Operator, Redact, Surrogate
from .presets import PRESETS
from .presidio import PRESIDIO_LABELS, PresidioDetector
from .regex import REGEX_LABELS, RegexDetector, in_code, phone_ok, stop_words
from .spans import LABELS, Detector, Span, chunk_text, merge_spans, validate_texts
from .surrogates import TITLES, SurrogateGenerator, _surrogate_subkey, load_pool, normalise_token
from .wordlist import COMMON_CAPITALISED, WordListDetector, name_words, truecase

__all__ = ["ON_ERROR", "DetectionError", "Sanitizer"]

ON_ERROR: tuple[str, ...] = ("raise", "fallback", "redact_all")
REDACTED_TEXT = "<REDACTED>"
_PLACEHOLDER_LIKE = re.compile(r"<([A-Z][A-Z0-9_]*)>")
_ESCAPED = re.compile(r"‹[A-Z][A-Z0-9_]*›")
_QUERY_WORD = re.compile(r"[\w@+][\w'’.@+-]*", re.UNICODE)
_INDEX_VERSION = 1
_RECORDING = threading.local()  # the Sanitizer whose apply_recorded runs in this thread, and its log
SANITIZER_VERSION = 4
"""Version of the Sanitizer's own behaviour, recorded in configs; a Sanitizer rebuilt from a
config behaves as that version did. 2: words a batch writes in lower case are ordinary words.
3: detection runs on normalised text (:mod:`.normalise`); placeholder-shaped input is detected;
the second pass propagates only entities found on strong evidence and matches a person's name
in lower case too. 4: what
identifies no one alone is kept in a document without personal context (:func:`_context_free`);
phone numbers are validated with ``phonenumbers``; name cues must be shaped like a name; spans
mixing words in capitals with other words and bare domains a letter continues are no
identifiers."""
_KNOWN_LABELS = frozenset(LABELS) | frozenset(PRESIDIO_LABELS) | frozenset(IDENTIFIER_LABELS) | frozenset(
    REGEX_LABELS) | {"REDACTED", "QUANTITY", "DEMOGRAPHIC", "ORDINARY"} | {x for p in PRESETS.values() for x in p.labels}
_WEAK = "~"  # index value prefix of an entity found on weak evidence: queries match it, documents do not
_STRONG_DETECTORS = frozenset(["regex", "identifiers"])
SANITIZER_SALT = b"private_vectors/surrogates/v2"
"""Public domain salt of the surrogate and query-index subkeys (stable for one key across
processes, so surrogates and index entries agree between a store's writers)."""
DEFAULT_TIMEOUT = 60.0
"""Seconds one detector may take for one group of :data:`DETECT_GROUP` texts before
:class:`DetectionError` (nothing of the batch is returned, so nothing of it is stored)."""
DETECT_GROUP = 64
"""Texts (chunks) one detector call sees: the timeout's unit, and the progress step."""
_PROGRESS: contextvars.ContextVar[Callable[[float], None] | None] = contextvars.ContextVar(
    "private_vectors_detection_progress", default=None)


@contextlib.contextmanager
def detection_progress(report: Callable[[float], None]) -> Iterator[None]:
    """Call ``report(fraction)`` as detection of a batch advances (a progress bar's hook)."""
    token = _PROGRESS.set(report)
    try:
        yield
    finally:
        _PROGRESS.reset(token)
SECRET_FIELDS = ("tokens", "patterns", "allow_list")
"""Config fields that list what a user asked to hide or keep: stored only as keyed HMACs."""


_MODEL_LABELS = frozenset(["PERSON", "LOCATION", "NRP", "ORGANIZATION"])
_ORDINARY = "ORDINARY"  # index label of a name-list word the documents also write in lower case


def lower_case_words(texts: Sequence[str], *, min_texts: int = 2) -> frozenset[str]:
    """Normalised words that at least ``min_texts`` of the texts write in lower case (texts
    entirely in lower case say nothing about case and are skipped): evidence that a capitalised
    occurrence is an ordinary word. Two texts, not one: a name typed once in lower case next to
    its capitalised form must not unmask it."""
    seen: Counter[str] = Counter()
    for t in texts:
        if not t.islower():
            seen.update({normalise_token(m.group(0)) for m in _QUERY_WORD.finditer(t) if m.group(0).islower()})
    return frozenset(w for w, n in seen.items() if n >= min_texts)


def _ordinary_words(text: str, span: Span, lower: frozenset[str]) -> bool:
    """A span of a model or vocabulary detector (not a regex, not the keyed index) whose every
    word other texts of the batch write in lower case: "Stem Cells" in a title over abstracts
    about stem cells is no name. Regex spans (addresses, e-mails) are never dropped."""
    if not lower or span.label not in _MODEL_LABELS or span.detector in ("regex", "keyed-index", "on_error"):
        return False
    words = [normalise_token(m.group(0)) for m in _QUERY_WORD.finditer(text, span.start, span.end)]
    words = [w for w in words if w]
    return bool(words) and all(w in lower for w in words)


def _index_first(s: Span) -> tuple[bool, bool, float, int]:
    """Merge priority: the precise regexes (a street address that spaCy calls PERSON stays
    LOCATION), then the keyed index's label (consistent with ingest), then score and length."""
    return (s.detector != "regex", s.detector != "keyed-index", -s.score, -(s.end - s.start))


class DetectionError(PrivateVectorsError, RuntimeError):
    """A detector raised or timed out; no text was returned for that call."""


def _secret(key: Any) -> SecretKey | None:
    """The key as a redacted :class:`SecretKey` (>= 16 bytes); None only when no key is given
    (unlike PrivateEmbedding, a Sanitizer does not read ``PRIVATE_VECTORS_KEY``)."""
    return None if key is None else SecretKey.resolve(key, env=None)


def _hide(obj: Any, mac: Any) -> Any:
    """``obj`` with every :data:`SECRET_FIELDS` list replaced by its keyed HMACs (``mac``) or,
    without a key (``mac`` None), by a marker: the values themselves are never stored."""
    if isinstance(obj, dict):
        return {k: _hidden(v, mac) if k in SECRET_FIELDS and isinstance(v, (list, tuple)) else _hide(v, mac)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_hide(v, mac) for v in obj]
    return obj


def _hidden(values: Sequence[str], mac: Any) -> Any:
    if not values:
        return []
    if mac is None:
        return {"withheld": True}
    return {"hmac": sorted({mac(str(v)) for v in values})}


def _listed(detector_configs: Any) -> list[Any]:
    """The token lists and patterns of detector configs (what may be the user's)."""
    if not isinstance(detector_configs, list):
        return []
    return [(d.get("type"), d.get("tokens"), d.get("patterns")) for d in detector_configs
            if isinstance(d, Mapping) and ("tokens" in d or "patterns" in d)]


def _builtin_detector_configs(concept: Any) -> list[Any]:
    """The detector configs of built-in concept ``concept`` (empty when it is none)."""
    try:
        return [d.get_config() for d in concept_detectors(concept)[1]]
    except Exception:
        return []


def _builtin_names(concept: Any) -> bool:
    """Whether ``concept`` is a built-in concept name or a list of them (their detectors are
    shipped, not a user's secret: recorded in clear and rebuilt from the names)."""
    if isinstance(concept, str):
        return True
    return isinstance(concept, (list, tuple)) and bool(concept) and all(isinstance(n, str) for n in concept)


def _is_hidden(value: Any) -> bool:
    return isinstance(value, Mapping) and ("hmac" in value or "withheld" in value)


def _has_hidden(obj: Any) -> bool:
    if isinstance(obj, Mapping):
        return any(_is_hidden(v) or _has_hidden(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_hidden(v) for v in obj)
    return False


@lru_cache(maxsize=1)
def _index_stop() -> frozenset[str]:
    stop = {w.casefold() for w in COMMON_CAPITALISED} | set(TITLES) | {"i", "i'm", "i’m", "i've", "i'd", "i'll"}
    return frozenset(stop) | stop_words()


def _strong(text: str, span: Span, raw: Sequence[Span]) -> bool:
    """Strong evidence for propagating ``span`` across the batch: a validated pattern (regex,
    cue/shape identifier), a score of at least 0.9, or two independent detectors; never an
    all-caps word of at most four letters ("RNA", "CI", "RT")."""
    if _acronym(text[span.start:span.end]):
        return False
    if span.detector in _STRONG_DETECTORS or span.score >= 0.9:
        return True
    value = text[span.start:span.end]
    words = value.split()
    if span.label == "PERSON" and len(words) >= 2 and "\n" not in value \
            and all(w[:1].isupper() and not w.isupper() for w in words) and _looks_like_a_name(value):
        return True  # a full name on one line, each part capitalised (not all caps) and name-shaped
    found_by = {s.detector for s in raw if s.start < span.end and span.start < s.end}
    return len(found_by) >= 2


def _credited(span: Span, detected: Sequence[Span]) -> Span:
    """A merged span the keyed index won, credited to a detector that also found it: only spans
    no detector found keep the detector name ``"keyed-index"`` (they came from propagation)."""
    if span.detector != "keyed-index":
        return span
    for s in detected:
        if s.start < span.end and span.start < s.end:
            return Span(span.start, span.end, span.label, span.score, s.detector)
    return span


_NAME_WORD = re.compile(r"(?:Mc|Mac|O['’]|D['’]|De|Di|Da|La|Le|Van|Von)?[^\W\d_][^\W\d_'’.-]*(?:['’.-][^\W\d_]*)*\.?",
                        re.UNICODE)


def _looks_like_a_name(value: str) -> bool:
    """Whether every word of ``value`` is shaped like a word of a name or place: letters (with
    ' - . inside), a capital only at the start of a part or after Mc/Mac ("Jean-Luc", "McDonald",
    "O'Neil"), no digit;
    "HeLa", "CsA", "FIP-2", "ApoE(-/-" and a lone all-caps word of two to four letters ("PCNA") are not."""
    words = value.split()
    if len(words) == 1 and _acronym(value) and len(value) >= 2:
        return False
    for word in words:
        if not _NAME_WORD.fullmatch(word):
            return False
        parts = re.split(r"['’-]", re.sub(r"^(?:Mc|Mac)", "", word))
        if not word.isupper() and any(c.isupper() for part in parts for c in part[1:]):
            return False
    return True


def _mixed_caps(value: str) -> bool:
    """Words in capitals beside words that are not ("CONCLUSION Lobular", "Type III IFN", "Pol
    IV"): a section heading or an acronym next to a word, not a name; a name is written either
    way throughout ("Amelia Okafor", "AMELIA OKAFOR")."""
    words = [w for w in value.split() if any(c.isalpha() for c in w)]
    caps = [w.isupper() and sum(c.isalpha() for c in w) >= 2 for w in words]
    return any(caps) and not all(caps)


def _alone(span: Span, spans: Sequence[Span], agreeing: frozenset[str] = frozenset()) -> bool:
    """Whether no other detector reported a span overlapping ``span`` (detectors in ``agreeing``
    aside)."""
    return not any(o is not span and o.detector != span.detector and o.detector not in agreeing
                   and o.start < span.end and span.start < o.end for o in spans)


def _name_shaped(text: str, spans: list[Span], shaped: Callable[[str], bool] = _looks_like_a_name) -> list[Span]:
    """Drop a model span (a name, place, group or organisation from one model or vocabulary
    detector alone) that is not ``shaped`` like a name: gene and protein symbols, cell lines and
    abbreviations are what a small NER model mistakes for names in scientific text. Version 4
    also runs it on the original text (detection title-cases words in capitals) with
    ``shaped`` = not :func:`_mixed_caps`."""
    return [s for s in spans if s.label not in _MODEL_LABELS or s.detector in _STRONG_DETECTORS
            or not _alone(s, spans) or shaped(text[s.start:s.end])]


def _not_mixed_caps(value: str) -> bool:
    return not _mixed_caps(value)


_PRONOUN = re.compile(r"\bI['’](?:m|ve|d|ll)\b|\b(?:[Mm]e|[Mm]y|[Mm]ine|[Yy]ou|[Yy]our|[Yy]ours|[Hh]e|[Hh]im|[Hh]is"
                      r"|[Ss]he|[Hh]er|[Hh]ers)\b")
_CUED = 0.88
_DECIMAL = re.compile(r"(?<![\d.])\d\.\d+(?![\d.])")  # "0.89": an odds ratio or a score, not a phone
_ONE_WORD_DETECTORS = frozenset(["presidio", "ner", "places"])
_PERSONAL = frozenset(["PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "HANDLE", "ID_NUMBER", "US_SSN", "CREDIT_CARD",
                       "IBAN_CODE", "DATE_OF_BIRTH", "MEDICAL_LICENSE", "UK_NHS"])


def _valid_phones(text: str, spans: list[Span]) -> list[Span]:
    """Drop a phone number a model found that :func:`~private_vectors.text.regex.phone_ok` rejects
    or that has fewer than seven digits ("1683", "0.89-1.26"; the regexes validate their own)."""
    def ok(s: Span) -> bool:
        value = text[s.start:s.end]
        return sum(c.isdigit() for c in value) >= 7 and not _DECIMAL.search(value) and phone_ok(value) \
            and not in_code(text, s.start, s.end)

    return [s for s in spans if s.label != "PHONE_NUMBER" or s.detector == "regex" or ok(s)]


def _whole_domains(text: str, spans: list[Span]) -> list[Span]:
    """Drop a bare domain a model found (no scheme, no "www.", no path) that a letter or digit
    continues: "IL28B.rs12979860" is a gene variant, not the domain "IL28B.rs"."""
    def cut(s: Span) -> bool:
        value = text[s.start:s.end]
        bare = "://" not in value and not value.casefold().startswith("www.") and "/" not in value
        return bare and s.end < len(text) and text[s.end].isalnum()

    return [s for s in spans if s.label != "URL" or s.detector == "regex" or not cut(s)]


_BEFORE_WORD = re.compile(r"([^\W\d_][\w'’-]*)[ \t]$")
_AFTER_WORD = re.compile(r"[ \t]([^\W\d_][\w'’-]*)")


def _in_capitalised_run(text: str, span: Span) -> bool:
    """Whether a capitalised word that is no common English word stands right before or after
    ``span`` on its line: the model often takes a surname and leaves the given name ("Dzhamalay
    [Batukayev]"); such a span is part of a name, not a lone word."""
    common = _common_words()
    before = _BEFORE_WORD.search(text, max(0, span.start - 40), span.start)
    after = _AFTER_WORD.match(text, span.end)
    return any(m is not None and m.group(1)[0].isupper() and not m.group(1).isupper()
               and m.group(1).casefold() not in common for m in (before, after))


def _context_free(text: str, spans: list[Span]) -> list[Span]:
    """Without personal context, drop what identifies no one alone: a one-word name or place that
    one model or vocabulary detector found (no title before it, no second detector on it, score
    below 0.88), a country and an age (in a document about no one, "aged 20-60" is a group's);
    in a text of 100 words or more (:func:`_long_text`) also a one-word name that several model
    and vocabulary detectors agree on and a name-list phrase ending in a plain noun. Personal
    context, anywhere in the document, is a singular personal pronoun ("I'm", "my", "you",
    "she", "his"; not the authors' "we", nor a bare "I", also a numeral: "type I diabetes"), a
    full name (two or more words, not all capitals, found by a name list, a cue or two
    detectors: the model alone calls title words "Insulin Resistance" a person) or contact or
    identity data, or the town line of an address block (:func:`_town_line`). A place after a
    place cue, a street and a model's boosted call (score at least 0.88) are always kept. In
    scientific abstracts the one-word spans are gene, drug and species names ("Kras",
    "Concerta", "Xenopus"), eponyms ("Cohen's kappa") and the countries are study sites. A
    surname alone is still replaced where the keyed index knows it from a full name (index spans
    are not filtered here)."""
    countries = _countries()

    if _PRONOUN.search(text) or any(s.label == "LOCATION" and _town_line(text, s) for s in spans):
        return spans

    long_text = _long_text(text)
    # in a long text, spans of these detectors agreeing on a word leave it a lone word
    detectors, agreeing = (_LONG_TEXT_DETECTORS, _LONG_TEXT_DETECTORS) if long_text else (_ONE_WORD_DETECTORS, frozenset())

    def lone(s: Span) -> bool:
        value = text[s.start:s.end]
        if s.score >= _CUED:  # a street, a place after a cue ("moved here from"), a model's strong call
            return False
        if s.label in ("LOCATION", "PERSON") and s.detector != "regex" and " ".join(value.casefold().split()) in countries:
            return True
        if _group_age(s):
            return True
        if long_text and s.label == "PERSON" and s.detector in _LONG_TEXT_DETECTORS and _term_shaped(value):
            return True
        # "AMELIA_OKAFOR" (a placeholder-shaped name, read with spaces by detection) is two words
        return (s.label in ("PERSON", "LOCATION") and s.detector in detectors
                and len(value.replace("_", " ").split()) == 1 and _alone(s, spans, agreeing)
                and not _TITLE_BEFORE.search(text, max(0, s.start - 8), s.start)
                and not _in_capitalised_run(text, s))

    def personal(s: Span) -> bool:
        value = text[s.start:s.end]
        if s.label != "PERSON":
            return s.label in _PERSONAL
        found_by = {o.detector for o in spans if o.label == "PERSON" and o.start < s.end and s.start < o.end}
        return len(value.split()) >= 2 and not value.isupper() and (len(found_by) >= 2 or s.detector != "presidio")

    candidates = [s for s in spans if lone(s)]
    if not candidates or any(personal(s) for s in spans if s not in candidates):
        return spans
    return [s for s in spans if s not in candidates]


_LONG_TEXT = 100
_LONG_TEXT_DETECTORS = frozenset([*_ONE_WORD_DETECTORS, "names"])


def _long_text(text: str) -> bool:
    """A text of at least 100 words. Without personal context such a text is about no one (a
    text about a person names them in full, or says "he", "her", "my" within a hundred words), so
    there a one-word name that the model and a name list agree on ("Cohen's kappa", "Werner
    syndrome", "Borg scale") and a name-list phrase ending in a plain noun ("Berg Balance Scale",
    "Mayo Clinic") are terms. A short message ("Scott is a very sympathetic person") keeps them."""
    return len(_WORD.findall(text)) >= _LONG_TEXT


def _term_shaped(value: str) -> bool:
    """Two or more words, the last a plain noun (:func:`~private_vectors.text.names.plain_nouns`):
    "Hamilton Depression Rating Scale", "NHGRI GWAS Catalog"."""
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+", value)]
    return len(value.split()) >= 2 and bool(words) and words[-1] in plain_nouns()


def _town_line(text: str, s: Span) -> bool:
    """The town line of a postal address, which is contact data: a place alone on its line
    right above a country's line ("ALFRICK\nUnited Kingdom", "Chiclana de la Frontera\nSpain";
    :func:`~private_vectors.text.normalise.country_line`)."""
    line_start = text.rfind("\n", 0, s.start) + 1
    line_end = text.find("\n", s.end)
    if line_end < 0 or text[line_start:s.start].strip(" \t>|*•") or text[s.end:line_end].strip():
        return False
    return country_line(text, line_end + 1)


def _group_age(s: Span) -> bool:
    """An age, in a document about no one: "men and women aged 20-60", "10-year-old children"."""
    return s.label == "AGE"


_WORD = re.compile(r"\w+")
_TITLE_BEFORE = re.compile(r"\b(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof|Mme|Mlle|Herr|Frau|Sr|Sra)\.?[ \t]+$")


def _with_title(text: str, spans: list[Span]) -> list[Span]:
    """PERSON spans extended over a title right before them ("Mr Karl Strobel"): the title is part
    of the mention and tells the person's gender."""
    out = []
    for s in spans:
        m = _TITLE_BEFORE.search(text, max(0, s.start - 8), s.start) if s.label == "PERSON" else None
        out.append(Span(m.start(), s.end, s.label, s.score, s.detector) if m else s)
    return out


def _plain_word(token: str) -> bool:
    """An English word that is no known name ("phone", "producer", "corporation"): a word of a
    person span that is not propagated alone (the whole span still is). Version 4."""
    return token in english_words() and token not in name_words()[0]


def _acronym(value: str) -> bool:
    """An all-caps word of at most four letters ("RNA", "CI", "RT"): never propagated."""
    value = value.strip()
    return value.isupper() and len(value) <= 4 and value.isalpha()


def _label(value: str) -> str:
    """The label of a keyed-index value (weak entries carry a prefix)."""
    return value[len(_WEAK):] if value.startswith(_WEAK) else value


def _add_entries(index: dict[str, str], entries: Mapping[str, str]) -> None:
    """Add keyed-index entries; a weak entry never replaces a strong one for the same key."""
    for k, v in entries.items():
        if v.startswith(_WEAK) and k in index and not index[k].startswith(_WEAK):
            continue
        index[k] = v


def _detector_from_config(cfg: Mapping[str, Any]) -> Detector:
    kind = cfg.get("type")
    if kind == "regex":
        return RegexDetector(entities=cfg["entities"], strict=cfg.get("strict", False))
    if kind == "identifiers":
        return IdentifierDetector(entities=cfg["entities"], version=str(cfg.get("version", "1")))
    if kind == "presidio":
        return PresidioDetector(entities=cfg["entities"], model=cfg.get("model"), batch_size=cfg.get("batch_size", 32),
                                tidy_version=cfg.get("tidy_version", 1))
    if kind == "quantity":
        return QuantityDetector(model=cfg.get("model"))
    if kind == "wordlist":
        return WordListDetector()
    if kind == "names":
        return NameDetector(score=cfg.get("score", 0.6), full_name_score=cfg.get("full_name_score", 0.86),
                            lone_first_names=cfg.get("lone_first_names", True),
                            unknown_names=cfg.get("unknown_names", False))  # absent: written before the rule
    if kind == "places":
        return PlaceDetector(score=cfg.get("score", 0.55), street_score=cfg.get("street_score", 0.9),
                             cue_score=cfg.get("cue_score", cfg.get("score", 0.55)),  # before 0.88: cue = score
                             caps_score=cfg.get("caps_score", cfg.get("cue_score", cfg.get("score", 0.55))))
    if kind == "firms":
        return FirmDetector(score=cfg.get("score", 0.9))
    if kind == "tokens":
        return TokenDetector(cfg["tokens"], label=cfg["label"], case_sensitive=cfg.get("case_sensitive", False),
                             name=cfg.get("name", "tokens"))
    if kind == "pattern":
        return PatternDetector(cfg["patterns"], label=cfg["label"], ignore_case=cfg.get("ignore_case", True),
                               score=cfg.get("score", 0.9), name=cfg.get("name", "pattern"))
    if kind == "ner":
        return NerDetector(cfg["labels"], model=cfg.get("model"))
    raise InvalidParameterError("config['detectors']", "detector configs of type regex, presidio, wordlist, tokens, "
                                "pattern or ner (pass detectors= to from_config for custom ones)", kind)


class Sanitizer:
    """Detect concept spans and replace them: the text stage of the pipeline.

    Args:
        concept: a built-in concept name (``"PII"``, ``"person"``, ``"location"``, ``"datetime"``,
            ``"demographic"``, ``"medical"``), a :class:`~private_vectors.text.TextConcept`, or a
            ``concepts.Concept`` made with ``from_tokens`` / ``from_spacy``.
        policy: ``"redact"`` (typed placeholders), ``"surrogate"`` (keyed fake values; needs
            ``key``) or ``"keep"`` (detect only).
        key: secret for surrogates and the query index (str or bytes). Never stored or shown.
        detectors: detectors to use instead of the concept's (cheap ones first).
        entities: labels to act on (default: every label the detectors report).
        score_threshold: spans scored below this are ignored.
        allow_list: strings never replaced (exact span text, case-insensitive), e.g. the company's name.
        operators: per-label policy overrides, e.g. ``{"LOCATION": "keep"}``.
        on_error: ``"raise"``, ``"fallback"`` or ``"redact_all"`` (see the module docstring).
        timeout: seconds one detector may take for one call (None: no limit).
        chunk_size: documents longer than this are detected in overlapping chunks (offsets kept).
    """

    def __init__(self, concept: str | Any = "PII", *, policy: str = "redact", key: str | bytes | SecretKey | None = None,
                 detectors: Sequence[Detector] | None = None, entities: Sequence[str] | None = None,
                 score_threshold: float = 0.35, allow_list: Sequence[str] | None = None,
                 operators: Mapping[str, str] | None = None, on_error: str = "raise",
                 timeout: float | None = DEFAULT_TIMEOUT, chunk_size: int = 10_000) -> None:
        try:  # first, so that no later error leaves the raw key in this frame's locals
            self._key = _secret(key)
        finally:
            del key
        if policy not in POLICIES:
            raise InvalidParameterError("policy", f"one of {list(POLICIES)}", policy)
        overrides = dict(operators or {})
        for label, pol in overrides.items():
            if pol not in POLICIES:
                raise InvalidParameterError(f"operators[{label!r}]", f"one of {list(POLICIES)}", pol)
        if self._key is None and "surrogate" in (policy, *overrides.values()):
            raise InvalidParameterError("key", "a secret (str or bytes) for policy 'surrogate': a key-less "
                                        "surrogate is a public substitution anyone can invert", None)
        if on_error not in ON_ERROR:
            raise InvalidParameterError("on_error", f"one of {list(ON_ERROR)}", on_error)
        if isinstance(score_threshold, bool) or not isinstance(score_threshold, (int, float)) \
                or not 0 <= score_threshold <= 1:
            raise InvalidParameterError("score_threshold", "a number in [0, 1]", score_threshold)
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout > 0):
            raise InvalidParameterError("timeout", "None or a number of seconds > 0", timeout)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 500:
            raise InvalidParameterError("chunk_size", "an int >= 500", chunk_size)
        if isinstance(allow_list, str):
            raise InvalidTypeError("allow_list", "a list of strings", allow_list)
        if detectors is None:
            self.concept_name, built, self.fallback = concept_detectors(concept)
        else:  # the user's detectors replace the concept's (the concept is only recorded)
            self.concept_name, built, self.fallback = str(getattr(concept, "name", concept) or "custom"), [], False
        self._concept = concept if isinstance(concept, str) else getattr(concept, "name", "custom")
        if isinstance(concept, (list, tuple)):
            self._concept = self.concept_name = "+".join(str(getattr(c, "name", c)) for c in concept)
        if isinstance(concept, TextConcept):
            self._concept_cfg: Any = concept.get_config()
        elif isinstance(concept, (list, tuple)) and all(isinstance(c, str) for c in concept):
            self._concept_cfg = list(concept)
        else:
            self._concept_cfg = self.concept_name
        # the detectors of a built-in concept name list nothing of the user's; any other's do
        self._user_detectors = detectors is not None or not _builtin_names(concept)
        if detectors is not None:
            if isinstance(detectors, (str, bytes)) or not all(hasattr(d, "spans") for d in detectors):
                raise InvalidTypeError("detectors", "a list of detectors (objects with .spans(texts))", detectors)
            built = list(detectors)
            self.fallback = False
        if not built:
            raise InvalidParameterError("concept", "a concept with at least one detector", concept)
        self.detectors: list[Detector] = built
        self.entities = None if entities is None else tuple(validate_texts(entities, "entities"))
        self.policy = policy
        self.score_threshold = float(score_threshold)
        self.allow_list = tuple(validate_texts(allow_list or [], "allow_list"))
        self._allow = {" ".join(a.casefold().split()) for a in self.allow_list}
        self.operators = overrides
        self.on_error = on_error
        self.timeout = None if timeout is None else float(timeout)
        self.chunk_size = chunk_size
        self.pool = load_pool()
        self._surrogates = SurrogateGenerator(self._key, self.pool) if self._key is not None else None
        self._set_subkeys()
        self._index: dict[str, str] = {}
        self._changes: dict[str, str | None] = {}  # index entries added (label) or removed (None) since taken
        self._pending: Any = None  # a loader of a stored index, run on first use (lazy reopen)
        self._lock = threading.Lock()
        self.faults: list[dict[str, Any]] = []
        self.version = SANITIZER_VERSION
        if self.fallback:
            warnings.warn("presidio-analyzer/spaCy not installed: the Sanitizer uses the weaker word-list "
                          "detector for names and places (recorded in get_config()['fallback'])", stacklevel=2)

    def _set_subkeys(self) -> None:
        """The query-index and config-HMAC subkeys (redacted bytes) and the key check salt.

        With a key: HMAC subkeys of the surrogate subkey (stable for the key), and a random
        salt for the key check value, so two stores under one key record unrelated check
        values. Without a key: a random per-instance index key (nothing to restore)."""
        root = _surrogate_subkey(self._key) if self._key is not None else SecretBytes(secrets.token_bytes(32))
        self._index_key = SecretBytes(hmac.digest(root, b"private_vectors/text/query-index/v1", "sha256"))
        self._config_key = SecretBytes(hmac.digest(root, b"private_vectors/text/config-secrets/v1", "sha256"))
        self._check_salt = secrets.token_bytes(16)
        self._check: str | None = None if self._key is not None else \
            hmac.digest(root, b"key-id", "sha256").hex()[:16]
        del root

    def __repr__(self) -> str:
        if not hasattr(self, "detectors"):  # a half-built object (a traceback with locals shows it)
            return "Sanitizer(<not constructed>)"
        return (f"Sanitizer(concept={self._concept!r}, policy={self.policy!r}, keyed={self._key is not None}, "
                f"detectors={[d.name for d in self.detectors]})")

    # -- detection ----------------------------------------------------------------------
    def _run(self, detector: Detector, texts: list[str]) -> list[list[Span]]:
        if self.timeout is None:
            return detector.spans(texts)
        return call_with_timeout(detector.spans, texts, timeout=self.timeout)  # on a thread that stays alive

    def _detect(self, texts: list[str]) -> list[list[Span]] | None:
        """Raw spans per text (chunked, offsets preserved); None when redact_all applies."""
        pieces: list[tuple[int, int, str]] = []  # (text index, offset, chunk)
        forms = [normalise(t, version=self.version) for t in texts] if self.version >= 3 else []
        for i, t in enumerate(texts):
            if t.strip():
                pieces.extend((i, off, c) for off, c in chunk_text(forms[i].text if forms else t, self.chunk_size, 200))
        found: list[list[Span]] = [[] for _ in texts]
        if not pieces:
            return found
        # an all-lower-case text (a query, a chat message): known name/place words are capitalised
        # for the NER model; same length, so offsets hold
        chunks = [truecase(c, self._ordinary) if c.islower() else c for _, _, c in pieces]
        groups = range(0, len(chunks), DETECT_GROUP)
        report = _PROGRESS.get()
        per_piece: list[list[Span]] = [[] for _ in pieces]
        for d, det in enumerate(self.detectors):
            try:
                result = []
                for start in groups:  # the timeout holds per group, so a long batch is no fault
                    result.extend(self._run(det, chunks[start:start + DETECT_GROUP]))
                    if report is not None:
                        report((d + min(start + DETECT_GROUP, len(chunks)) / len(chunks)) / len(self.detectors))
                if len(result) != len(chunks):
                    raise DetectionError(f"detector {det.name!r} returned {len(result)} results for "
                                         f"{len(chunks)} texts")
            except Exception as exc:
                kind = "timed out" if isinstance(exc, concurrent.futures.TimeoutError) else \
                    f"raised {type(exc).__name__}"
                self.faults.append({"detector": det.name, "error": kind, "texts": len(texts),
                                    "action": self.on_error})
                if self.on_error == "raise":
                    raise DetectionError(f"detector {det.name!r} {kind}; no text was sanitized or returned "
                                         "(choose on_error='fallback' or 'redact_all' to continue)") from exc
                warnings.warn(f"Sanitizer: detector {det.name!r} {kind}; on_error={self.on_error!r} applied",
                              stacklevel=3)
                if self.on_error == "redact_all":
                    return None
                result = self._fallback_spans(det, chunks)
            for acc, spans in zip(per_piece, result, strict=True):
                acc.extend(spans)
        for (i, off, _), chunk, spans in zip(pieces, chunks, per_piece, strict=True):
            if forms:
                spans = _with_title(chunk, _name_shaped(chunk, spans))
            shifted = [s.shifted(off) for s in spans]
            found[i].extend(forms[i].spans_back(shifted) if forms else shifted)
        if self.version >= 4:
            found = [_whole_domains(t, _valid_phones(t, _name_shaped(t, s, _not_mixed_caps)))
                     for t, s in zip(texts, found, strict=True)]
        return found

    @staticmethod
    def _fallback_spans(failed: Detector, chunks: list[str]) -> list[list[Span]]:
        out: list[list[Span]] = [[] for _ in chunks]
        backups: list[Detector] = [WordListDetector()]
        if not isinstance(failed, RegexDetector):
            backups.insert(0, RegexDetector())
        for b in backups:
            for acc, spans in zip(out, b.spans(chunks), strict=True):
                acc.extend(spans)
        return out

    def _select(self, text: str, spans: list[Span], extra: Sequence[Span] = (),
                index: Mapping[str, str] | None = None, lower: frozenset[str] | None = None) -> list[Span]:
        guarded = [(m.start(), m.end()) for m in _ESCAPED.finditer(text)
                   if self.version < 3 or m.group(0)[1:-1] in _KNOWN_LABELS or m.group(0)[1:-1] in (self.entities or ())]
        index = self._index if index is None else index
        lower = frozenset() if lower is None else lower  # one text alone is no evidence
        kept = [self._relabel(text, s, index) for s in spans if s.score >= self.score_threshold and s.end > s.start
                and (self.entities is None or s.label in self.entities)
                and not any(s.start < b and a < s.end for a, b in guarded)
                and not _ordinary_words(text, s, lower)]
        if self.version >= 4:
            kept = _context_free(text, kept)
        merged = merge_spans(kept + list(extra), priority=_index_first)
        if extra and self.version >= 3:  # "keyed-index" names a span only the second pass found
            merged = [_credited(s, kept) for s in merged]
        if self._allow:
            merged = [s for s in merged if " ".join(text[s.start:s.end].casefold().split()) not in self._allow]
        return merged

    @staticmethod
    def _escape(text: str) -> str:
        """Input that already looks like a placeholder (``<PERSON>``) becomes ``‹PERSON›`` (same length),
        so a ``<LABEL>`` in the output always marks a replacement and is never re-detected."""
        return _PLACEHOLDER_LIKE.sub(lambda m: f"‹{m.group(1)}›", text)

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The detected spans of each text on its own (merged, thresholded, allow list applied);
        :meth:`document_spans` adds the keyed second pass :meth:`apply` runs over a batch."""
        self._load_pending()
        texts = [self._escape(t) for t in validate_texts(texts)]
        found = self._detect(texts)
        if found is None:
            return [[Span(0, len(t), "REDACTED", 1.0, "on_error")] if t else [] for t in texts]
        return [self._select(t, s) for t, s in zip(texts, found, strict=True)]

    def query_spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans that :meth:`apply_queries` would replace (truecased detection + keyed index)."""
        self._load_pending()
        texts = [self._escape(t) for t in validate_texts(texts)]
        found = self._detect([truecase(t, self._ordinary) for t in texts])
        if found is None:
            return [[Span(0, len(t), "REDACTED", 1.0, "on_error")] if t else [] for t in texts]
        return [self._select(t, s, self._index_spans(t, self._index)) for t, s in zip(texts, found, strict=True)]

    # -- replacement --------------------------------------------------------------------
    def _operator(self, label: str) -> Operator:
        pol = self.operators.get(label, self.policy)
        if pol == "keep":
            return Keep()
        if pol == "surrogate" and self._surrogates is not None:
            return Surrogate(self._surrogates)
        return Redact()

    def _replace(self, text: str, spans: list[Span], *, remember: bool, ordinary: frozenset[str] = frozenset()) -> str:
        out, pos, done = [], 0, []
        for s in spans:
            original = text[s.start:s.end]
            op = self._operator(s.label)
            out.append(text[pos:s.start])
            out.append(op.replace(original, s))
            pos = s.end
            if remember and not isinstance(op, Keep):
                self._remember(s.label, original, ordinary)
                done.append((s.start, s.end, s.label, out[-1]))
        out.append(text[pos:])
        if remember and getattr(_RECORDING, "owner", None) is self:  # apply_recorded
            _RECORDING.log.append(done)
        return "".join(out)

    def apply_recorded(self, texts: Sequence[str]) -> tuple[list[str], list[list[tuple[int, int, str, str]]]]:
        """:meth:`apply`, plus each text's replacements ``(start, end, label, written)`` (offsets
        in the input text): what the encrypted restore data of :mod:`private_vectors.restore` holds."""
        items = validate_texts(texts)
        _RECORDING.owner, _RECORDING.log = self, []
        try:
            out = self.apply(items)
            log = _RECORDING.log
        finally:
            _RECORDING.owner = _RECORDING.log = None
        if len(log) != len(out):  # on_error="redact_all": each non-empty text became one placeholder
            log = [[(0, len(t), "REDACTED", o)] if o != t else [] for t, o in zip(items, out, strict=True)]
        return out, log

    def _two_passes(self, texts: list[str], found: list[list[Span]]
                    ) -> tuple[list[list[Span]], dict[str, str], frozenset[str]]:
        """The spans :meth:`apply` replaces, the index entries of the batch and the batch's
        ordinary words. First pass: the detected entities of every document of the batch;
        second pass: an entity detected in one document (of this batch or an earlier one) is
        replaced wherever it appears, also where the detectors missed it. A word the batch also
        writes in lower case ("Cells" in a title, "cells" in the abstracts) is an ordinary word:
        a model span made only of such words is dropped, and such a word is never indexed."""
        lower = lower_case_words(texts)
        batch: dict[str, str] = {}
        for t, s in zip(texts, found, strict=True):
            for span in self._select(t, s, lower=lower):
                if not isinstance(self._operator(span.label), Keep):
                    weak = self.version >= 3 and not _strong(t, span, s)
                    _add_entries(batch, self._entries(span.label, t[span.start:span.end], lower, weak=weak))
        index = ChainMap(batch, self._index)  # a view: the whole index is not copied per batch
        return [self._select(t, s, self._index_spans(t, index, any_case=False, ordinary=lower), index, lower)
                for t, s in zip(texts, found, strict=True)], batch, lower

    def document_spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans :meth:`apply` would replace in this batch: detected spans plus, by the keyed
        index, every other occurrence of an entity detected in the batch or ingested before.
        Unlike :meth:`apply`, remembers nothing."""
        self._load_pending()
        texts = [self._escape(t) for t in validate_texts(texts)]
        found = self._detect(texts)
        if found is None:
            return [[Span(0, len(t), "REDACTED", 1.0, "on_error")] if t else [] for t in texts]
        return self._two_passes(texts, found)[0]

    def apply(self, texts: Sequence[str]) -> list[str]:
        """Sanitized documents (each detected span replaced per its label's policy; see
        :meth:`document_spans`). The entities replaced are remembered in the keyed index."""
        self._load_pending()
        texts = [self._escape(t) for t in validate_texts(texts)]
        found = self._detect(texts)
        if found is None:
            return [REDACTED_TEXT if t else t for t in texts]
        selected, batch, lower = self._two_passes(texts, found)
        names, places = name_words()
        with self._lock:
            self._update_index(batch)
            for w in lower:  # an entry learned earlier for a word this batch shows as ordinary
                for kind in ("tok", "ent"):
                    mac = self._mac(kind, w)
                    if self._index.pop(mac, None) is not None:
                        self._changes[mac] = None
                if w in names or w in places:  # queries will not truecase it ("gene", "will")
                    self._update_index({self._mac("low", w): _ORDINARY})
        return [self._replace(t, spans, remember=True, ordinary=lower) for t, spans in zip(texts, selected, strict=True)]

    def apply_queries(self, texts: Sequence[str]) -> list[str]:
        """Sanitized queries: detection on truecased text plus the keyed index of ingested entities."""
        self._load_pending()
        texts = [self._escape(t) for t in validate_texts(texts)]
        found = self._detect([truecase(t, self._ordinary) for t in texts])
        if found is None:
            return [REDACTED_TEXT if t else t for t in texts]
        return [self._replace(t, self._select(t, spans, self._index_spans(t, self._index)), remember=False)
                for t, spans in zip(texts, found, strict=True)]

    # -- the keyed query index ----------------------------------------------------------
    def _mac(self, kind: str, value: str) -> str:
        return hmac.new(self._index_key, kind.encode() + b"\x00" + value.encode("utf-8"),
                        hashlib.sha256).hexdigest()[:32]

    def _ordinary(self, word: str) -> bool:
        """Whether ingested documents wrote ``word`` in lower case (a keyed entry, never the word)."""
        return bool(self._index) and self._mac("low", normalise_token(word)) in self._index

    def _remember(self, label: str, original: str, ordinary: frozenset[str] = frozenset()) -> None:
        entries = self._entries(label, original, ordinary)
        with self._lock:
            self._update_index(entries)

    def _update_index(self, entries: Mapping[str, str]) -> None:
        """Add ``entries`` and note the new or changed ones (the caller holds the lock); a weak
        entry never replaces a strong one for the same key."""
        for mac, label in entries.items():
            held = self._index.get(mac)
            if label.startswith(_WEAK) and held is not None and not held.startswith(_WEAK):
                continue
            if held != label:
                self._index[mac] = label
                self._changes[mac] = label

    def _entries(self, label: str, original: str, ordinary: frozenset[str] = frozenset(), *,
                 weak: bool = False) -> dict[str, str]:
        """Keyed index entries of one replaced entity (its whole text, and a person's name words);
        none for a word in ``ordinary`` (written in lower case elsewhere in the batch) and, from
        version 4, none for an English word that is no known name (:func:`_plain_word`). ``weak``
        entries (found on weak evidence) serve queries only, not the second pass in documents."""
        entries = {}
        value = _WEAK + label if weak else label
        if label == "PERSON":
            stop = _index_stop()
            lower = original.islower()
            for m in _QUERY_WORD.finditer(original):
                tok = normalise_token(m.group(0))
                # a name's words are capitalised: "add" of a span "add Esa Uppa" is not one
                if len(tok) >= 2 and tok not in stop and tok not in ordinary and (lower or m.group(0)[0].isupper()) \
                        and not (self.version >= 4 and _plain_word(tok)):
                    entries[self._mac("tok", tok)] = value
        norm = normalise_token(original)
        if norm and norm not in _index_stop() and not all(w in ordinary for w in norm.split()):
            entries[self._mac("ent", norm)] = value
        return entries

    def _relabel(self, text: str, span: Span, index: Mapping[str, str]) -> Span:
        """Use the label an entity had at ingest (keyed index) so its surrogate stays the same kind."""
        if not index or span.detector == "regex":
            return span
        original = text[span.start:span.end]
        found = index.get(self._mac("ent", normalise_token(original)))
        label = None if found is None else _label(found)
        if label is None and span.label != "PERSON":
            toks = [normalise_token(m.group(0)) for m in _QUERY_WORD.finditer(original)]
            toks = [t for t in toks if len(t) >= 2 and t not in _index_stop()]
            if toks and all(_label(index.get(self._mac("tok", t)) or "") == "PERSON" for t in toks):
                label = "PERSON"
        if label is None or label == span.label:
            return span
        return Span(span.start, span.end, label, span.score, span.detector)

    def _index_spans(self, text: str, index: Mapping[str, str], *, any_case: bool = True,
                     ordinary: frozenset[str] = frozenset()) -> list[Span]:
        """Spans of ingested entities found again in ``text``. Queries match in any case; in a
        document (``any_case=False``) a single word matches only where it is capitalised (unless
        the whole document is lower case), so an indexed name that is also a word ("Will",
        "Rose") is not replaced in running text. Word runs made only of ``ordinary`` words (the
        batch writes them in lower case) are no entity and are not looked up, nor, in a document,
        word runs that start in lower case (but for a particle: "van der Berg"): the keyed lookups
        of a SciFact abstract fall from about a thousand to about 150."""
        if not index:
            return []
        strict = not any_case and not text.islower()
        words = list(_QUERY_WORD.finditer(text))
        keys = [normalise_token(w.group(0)) for w in words]
        busy: list[tuple[int, int]] = []
        out: list[Span] = []
        for n in (4, 3, 2, 1):
            for i in range(len(words) - n + 1):
                if ordinary and all(k in ordinary for k in keys[i:i + n]):
                    continue
                a, b = words[i].start(), words[i + n - 1].end()
                lowered = strict and not (text[a].isupper() or (n > 1 and (text[a].isdigit() or keys[i] in _PARTICLES)))
                if lowered and (self.version < 3 or any(k in _common_words() for k in keys[i:i + n])):
                    continue  # in a document an entity starts with a capital ("Okafor"), a number or "van"
                if text[a:b].endswith(("'s", "’s")):  # "Okafor's": the possessive is not the name's
                    b -= 2
                while b > a and text[b - 1] in ".'’-":  # a sentence's full stop is not the entity's
                    b -= 1
                if any(a < e and s < b for s, e in busy):
                    continue
                norm = normalise_token(text[a:b])
                label = index.get(self._mac("ent", norm))
                if (label is None or label.startswith(_WEAK)) and n == 1:
                    label = index.get(self._mac("tok", norm)) or label
                # in a document only strong entries propagate; in lower case, only a person's full name
                # (two words or more) none of whose words is a common English word ("amelia okafor")
                if label is not None and not any_case and self.version >= 3 and (
                        label.startswith(_WEAK) or (lowered and (label != "PERSON" or n < 2)) or _acronym(text[a:b])):
                    label = None
                if label is not None:
                    out.append(Span(a, b, _label(label), 1.0, "keyed-index"))
                    busy.append((a, b))
        return out

    def _key_id(self) -> str:
        """Check value of the key under this Sanitizer's own random salt (128 bits from the key
        stretched with scrypt under that salt; never the key). Computed once, on first need."""
        if self._check is None:
            assert self._key is not None
            self._check = self._key.schedule("v2", self._check_salt).check
        return self._check

    def _legacy_key_id(self) -> str | None:
        """The check value written before each store had its own salt (fixed public salt)."""
        return None if self._key is None else self._key.schedule("v2", SANITIZER_SALT).check

    def _matches(self, salt_hex: Any, check: Any) -> bool:
        """Whether this Sanitizer's key gives ``check`` under ``salt_hex`` (None: the legacy salt)."""
        if self._key is None or not isinstance(check, str) or not check:
            return False
        if salt_hex is None:
            return hmac.compare_digest(check, self._legacy_key_id() or "")
        try:
            salt = bytes.fromhex(str(salt_hex))
        except ValueError:
            return False
        if salt == self._check_salt:
            return hmac.compare_digest(check, self._key_id())
        return hmac.compare_digest(check, self._key.schedule("v2", salt).check)

    def _adopt_salt(self, salt_hex: str) -> None:
        """Record the check value under a stored salt (a reopened store keeps its salt)."""
        self._check_salt = bytes.fromhex(salt_hex)
        self._check = None

    def _mac_secret(self, value: str) -> str:
        return hmac.digest(self._config_key, value.encode("utf-8"), "sha256").hex()[:32]

    def secret_fields(self, obj: Any) -> Any:
        """``obj`` (a config fragment) with its token lists, patterns and allow lists replaced by
        keyed HMACs (with a key) or a ``{"withheld": true}`` marker (without one)."""
        return _hide(obj, self._mac_secret if self._key is not None else None)

    @property
    def keyed(self) -> bool:
        """Whether this Sanitizer has a key (surrogates and a restorable query index)."""
        return self._key is not None

    def get_state_header(self) -> dict[str, Any]:
        """:meth:`get_state` without its entries (what a store records once, next to them)."""
        return self._state_header()

    def hide_config(self, config: Any) -> Any:
        """A stored sanitizer config (possibly written before token lists were hidden) with its
        token lists, patterns and allow list hidden as :meth:`get_config` hides them, so the two
        compare; values already hidden are left as they are."""
        if not isinstance(config, Mapping):
            return config
        out = dict(config)
        out["concept"] = self.secret_fields(out.get("concept"))
        out["allow_list"] = self.secret_fields({"allow_list": out.get("allow_list") or []})["allow_list"]
        if self._user_detectors:
            out["detectors"] = self.secret_fields(out.get("detectors"))
        return out

    def _state_header(self) -> dict[str, Any]:
        head: dict[str, Any] = {"type": "sanitizer-query-index", "version": _INDEX_VERSION,
                                "keyed": self._key is not None, "key_id": self._key_id()}
        if self._key is not None:
            head["key_salt"] = self._check_salt.hex()
        return head

    def get_state(self) -> dict[str, Any]:
        """The keyed query index as JSON-safe data: HMACs and labels, never names."""
        self._load_pending()
        with self._lock:
            entries = dict(self._index)
        return {**self._state_header(), "entries": entries}

    def check_state(self, state: Mapping[str, Any]) -> None:
        """Refuse a saved index header (:meth:`get_state` without entries) made under another key."""
        if not isinstance(state, Mapping) or state.get("type") != "sanitizer-query-index":
            raise InvalidParameterError("state", "a dict from Sanitizer.get_state()", "<not a query index>")
        if self._key is not None:
            ok = self._matches(state.get("key_salt"), state.get("key_id"))
        else:  # an unkeyed index lives under a random per-instance key
            ok = state.get("key_id") == self._key_id()
        if not ok:
            raise ConfigMismatchError("load_state: the query index was made under a different key (or without "
                                      "a key, whose random per-instance key cannot be restored)")

    def load_state(self, state: Mapping[str, Any]) -> Sanitizer:
        """Add a saved query index (from :meth:`get_state`); refuses one made under another key."""
        self.check_state(state)
        entries = state.get("entries") or {}
        if not isinstance(entries, Mapping):
            raise InvalidParameterError("state['entries']", "a mapping HMAC -> label", "<not a mapping>")
        with self._lock:
            self._index.update({str(k): str(v) for k, v in entries.items()})
        return self

    def defer_state(self, loader: Any) -> None:
        """Load a stored index lazily: ``loader()`` returns a :meth:`get_state`-like dict and is
        called (once) before this Sanitizer next detects anything."""
        with self._lock:
            self._pending = loader

    def _load_pending(self) -> None:
        if self._pending is None:
            return
        with self._lock:
            loader, self._pending = self._pending, None
        if loader is not None:
            state = loader()
            if state is not None:
                self.load_state(state)

    def take_changes(self) -> dict[str, str | None]:
        """The index entries added or changed (HMAC -> label) and removed (HMAC -> None) since
        the last call: what a store must write after a batch (its cost is the batch's, not the index's)."""
        with self._lock:
            out, self._changes = self._changes, {}
        return out

    # -- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """JSON-safe description: policy, keyed flag, detectors and versions, pool. No key
        material; token lists, patterns and the allow list only as keyed HMACs (or withheld)."""
        detectors = [d.get_config() for d in self.detectors]
        cfg: dict[str, Any] = {
            "type": "sanitizer", "version": self.version, "library": __version__,
            "concept": self.secret_fields(self._concept_cfg),
            "policy": self.policy, "keyed": self._key is not None,
            "operators": dict(self.operators), "entities": None if self.entities is None else list(self.entities),
            "score_threshold": self.score_threshold, "allow_list": self.secret_fields({"allow_list": list(
                self.allow_list)})["allow_list"],
            "on_error": self.on_error, "timeout": self.timeout, "chunk_size": self.chunk_size,
            "detectors": self.secret_fields(detectors) if self._user_detectors else detectors,
            "fallback": self.fallback,
            "pool": {"version": self.pool.version, "sha256": self.pool.sha256}, "language": "en",
        }
        if self._key is not None:
            cfg["key_salt"] = self._check_salt.hex()
            cfg["key_check"] = self._key_id()
        return cfg

    @classmethod
    def from_config(cls, config: dict[str, Any], *, key: str | bytes | None = None,
                    detectors: Sequence[Detector] | None = None) -> Sanitizer:
        """Rebuild from :meth:`get_config`; refuses a different pool or a key that does not match.

        A config whose token lists, patterns or allow list are stored as HMACs cannot rebuild
        them: pass ``detectors=`` (and build the Sanitizer with the same allow list), or reopen the
        store with the same PrivateEmbedding.
        """
        try:  # first, so that no later error leaves the raw key in this frame's locals
            secret = _secret(key)
        finally:
            del key
        if not isinstance(config, Mapping) or config.get("type") != "sanitizer":
            raise InvalidParameterError("config", "a dict from Sanitizer.get_config()", "<not a sanitizer config>")
        if config.get("keyed") and secret is None:
            raise InvalidParameterError("key", "the secret this keyed sanitizer was made with", None)
        pool = config.get("pool") or {}
        current = load_pool(str(pool.get("version", "1")))
        if pool.get("sha256") and pool["sha256"] != current.sha256:
            raise ConfigMismatchError(f"surrogate pool v{pool.get('version')}: recorded sha256 differs from the "
                                      "installed pool; surrogates would not match")
        hidden = [f for f in ("concept", "allow_list") if _is_hidden(config.get(f)) or _has_hidden(config.get(f))]
        if detectors is None and _has_hidden(config.get("detectors")):
            hidden.append("detectors")
        if hidden:
            raise InvalidParameterError(
                "config", "a text stage whose token lists, patterns and allow list can be rebuilt",
                f"<{', '.join(hidden)} stored only as keyed HMACs>",
                note="reopen the store with the same PrivateEmbedding (or Sanitizer) instead of rebuilding it")
        dets = list(detectors) if detectors is not None else [_detector_from_config(d) for d in config["detectors"]]
        concept = config.get("concept")
        if isinstance(concept, Mapping):
            concept = TextConcept(concept["name"], tuple(concept.get("tokens", ())), tuple(concept.get("patterns", ())),
                                  tuple(concept.get("ner_labels", ())), concept.get("label"))
        out = cls(concept, policy=config["policy"], key=secret if config.get("keyed") else None, detectors=dets,
                  entities=config.get("entities"), score_threshold=config["score_threshold"],
                  allow_list=config.get("allow_list"), operators=config.get("operators"),
                  on_error=config.get("on_error", "raise"), timeout=config.get("timeout"),
                  chunk_size=config.get("chunk_size", 10_000))
        out._user_detectors = detectors is not None or not _builtin_names(concept) \
            or _listed(config["detectors"]) != _listed(_builtin_detector_configs(concept))
        if config.get("keyed"):
            out.check_config_key(config, "Sanitizer.from_config")
        out.fallback = bool(config.get("fallback", False))
        version = config.get("version", 1)
        if not isinstance(version, int) or version > SANITIZER_VERSION:
            raise ConfigMismatchError(f"Sanitizer.from_config: behaviour version {version!r} is newer than this "
                                      f"library's ({SANITIZER_VERSION}); upgrade private-vectors to read this store")
        out.version = version
        return out

    def check_config_key(self, config: Mapping[str, Any], where: str) -> None:
        """Refuse a keyed sanitizer config whose key check value is missing or belongs to
        another key; adopt its salt (a store keeps the check value it was written with).

        Raises:
            ConfigMismatchError: naming ``where``, never the key.
        """
        if not config.get("keyed"):
            return
        salt, check = config.get("key_salt"), config.get("key_check")
        if salt is None and check is None:  # written before each store had its own salt
            check = config.get("key_id")
        if not isinstance(check, str) or not check:
            raise ConfigMismatchError(f"{where}: the text stage's key check value is missing; the config was edited "
                                      "or truncated (a keyed text stage always records one)")
        if not self._matches(salt, check):
            raise ConfigMismatchError(f"{where}: the key does not match the key the text stage was written with")
        if salt is not None:
            self._adopt_salt(str(salt))

    # -- LangChain ----------------------------------------------------------------------
    def transform_documents(self, documents: Sequence[Any], **kwargs: Any) -> list[Any]:
        """LangChain ``BaseDocumentTransformer`` style: new Documents with sanitized ``page_content``.

        Metadata is copied unchanged (it is not sanitized: keep PII out of metadata).
        """
        from langchain_core.documents import Document

        docs = list(documents)
        texts = self.apply([d.page_content for d in docs])
        return [Document(page_content=t, metadata=dict(d.metadata), id=getattr(d, "id", None))
                for d, t in zip(docs, texts, strict=True)]

    async def atransform_documents(self, documents: Sequence[Any], **kwargs: Any) -> list[Any]:
        """Async variant of :meth:`transform_documents` (runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.transform_documents, documents, **kwargs)
