"""Evasion probes: names written the way an attacker (or a careless writer) would, and whether
they survive the text stage.

Each category has ``--cases`` generated cases (default 150), seeded (``--seed``, default 0), so
the probe set is the same on every run and every branch:

==========================  ===========================================================================
category                    what is ingested (one batch per case) / queried
==========================  ===========================================================================
lower_case                  a normal sentence with the name in lower case (``... with amelia okafor ...``)
cross_document_case         two documents in one batch: the name capitalised in the first, lower case
                            in the second; the leak is counted in the second
cross_batch_case            the same two documents ingested in two calls (the capitalised one first):
                            what the store's index knows from an earlier ingest
url                         the name inside a URL (``linkedin.com/in/amelia-okafor``)
placeholder                 the name shaped like a placeholder (``<AMELIA_OKAFOR>``)
line_break                  a capitalised name split by a line break between its parts
full_width                  a capitalised name in full-width letters (``Ａｍｅｌｉａ``)
all_caps                    the name in capitals in a normal sentence
zero_width                  a capitalised name with zero-width characters inside each part
query_typo                  documents with the capitalised name are ingested; then a lower-case query
                            with a one-letter typo in each part; the leak is counted in the query
reopened_upper              documents ingested without a key; a new text stage restores the store's
                            persisted query-index state (none without a key) and gets a query with the
                            name in capitals
reopened_surname            as reopened_upper, the query names the (capitalised) surname alone
possessive                  a capitalised name with a possessive ending (``Amelia Okafor's car``)
possessive_surname          the surname alone with a possessive ending, opening the sentence (``Okafor's car``)
initial                     a capitalised surname after an initial (``A. Okafor``); the surname is checked
initial_joined              the initial joined to the surname without a space (``A.Okafor``)
initial_after               the surname, a comma and the initial after it (``Okafor, A.``)
hashtag                     the name written as a hashtag (``#AmeliaOkafor``); the joined form and each
                            part are checked
common_lower_case           as lower_case, with common names
common_possessive           as possessive, with common names
common_initial              as initial, with common names (and ``common_initial_joined``,
                            ``common_initial_after``, ``common_possessive_surname`` as theirs)
common_hashtag              as hashtag, with common names
==========================  ===========================================================================

Names: ``benchmarks/configs/evasion_names.json``, hand-written given names and surnames from many
naming traditions, none in a list the library ships (the generator drops, at run time, any entry
a shipped list has gained: see :func:`shipped_words`). Within a category every case has its own
given name and surname, so one case's name never helps another's. The ``common_`` categories take
their names from ``benchmarks/configs/common_names.json`` instead: the most frequent given names
and surnames of eighteen countries (parts of at least 3 letters), most of them in the library's
lists: what real documents hold.

A case **leaks** when any name part (case-folded, at least 3 letters) survives in the checked
text: after Unicode NFKC, with invisible format characters (zero-width, bidi, soft hyphen)
removed, case-folded, as a whole word (not next to another letter). That is what a reader, or
the encoder's tokenizer, sees.

Systems: the library's default text stage (``library``: ``PrivateEmbedding(concept="PII", eps=10)``,
whatever detector the default is, today the learned tagger, ``detector="model"``;
``sanitize_documents`` / ``sanitize_queries``; one instance per category, so the keyed index
holds only that category's names; for the reopened categories, a second instance that loads the
first one's ``query_index_state()``), the same with a key (``library-keyed``: the keyed query
index is persisted, so a reopened store restores it), the same two with the detector named
explicitly: the learned tagger (``library-model``, ``library-model-keyed``:
``Sanitizer("PII", detector="model")``; ``--tagger``: with the tagger read from another weight
folder) and the recognizers and rules without it (``library-rules``, ``library-rules-keyed``:
``Sanitizer("PII", detector="rules")``), the tagger
alone (``tagger``) and presidio's defaults (``AnalyzerEngine`` with every
recognizer on spaCy's small English model, ``AnonymizerEngine`` replacing each result with
``<ENTITY_TYPE>``), which has no memory across documents.

    .venv/bin/python benchmarks/evasion.py --data ../shared/data --out benchmarks/results/text/evasion.md
"""

from __future__ import annotations

import argparse
import json
import random
import re
import secrets
import sys
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NAMES_FILE = ROOT / "benchmarks" / "configs" / "evasion_names.json"
COMMON_FILE = ROOT / "benchmarks" / "configs" / "common_names.json"
FRESH_FILE = ROOT / "benchmarks" / "configs" / "evasion_fresh.json"
SHIPPED_DATA = ROOT / "src" / "private_vectors" / "data"

DOCUMENT_CATEGORIES = ("lower_case", "cross_document_case", "cross_batch_case", "url", "placeholder",
                       "line_break", "full_width", "all_caps", "zero_width")
QUERY_CATEGORIES = ("query_typo", "reopened_upper", "reopened_surname")
FORM_CATEGORIES = ("possessive", "possessive_surname", "initial", "initial_joined", "initial_after", "hashtag")
COMMON_CATEGORIES = ("common_lower_case", "common_possessive", "common_possessive_surname", "common_initial",
                     "common_initial_joined", "common_initial_after", "common_hashtag")
CATEGORIES = DOCUMENT_CATEGORIES + QUERY_CATEGORIES + FORM_CATEGORIES + COMMON_CATEGORIES

SENTENCES = (
    "I spoke with {name} about the delayed shipment yesterday.",
    "The report was written by {name} and reviewed by two colleagues.",
    "Please forward the signed invoice to {name} before Friday.",
    "{name} has been volunteering at the public library every weekend.",
    "According to {name}, the meeting was moved to the afternoon.",
    "The landlord sent {name} a second reminder about the broken heating.",
    "Our new project lead, {name}, starts on the first of the month.",
    "The nurse asked {name} to come back for another blood test.",
    "After the interview, {name} was offered the position in accounting.",
    "The complaint filed by {name} is still waiting for an answer.",
    "We received a short note from {name} thanking the whole team.",
    "The tenants elected {name} as their representative this year.",
)
URLS = (
    "Her profile is at linkedin.com/in/{first}-{last} if you want to check.",
    "See https://www.linkedin.com/in/{first}-{last}-{n}/ for the full CV.",
    "The portfolio lives at https://github.com/{first}-{last} now.",
    "He posts updates on twitter.com/{first}_{last} most days.",
    "Send questions to the blog, https://{first}{sep}{last}.example.org/contact.",
    "Photos from the trip: instagram.com/{first}.{last}",
)
QUERIES = (
    "what did {name} say about the shipment",
    "contact details for {name}",
    "meeting notes with {name}",
    "when did {name} join the board",
    "is {name} still the tenants' representative",
    "invoice sent to {name}",
)
SURNAME_QUERIES = (
    "What did {name} say about the shipment?",
    "Contact details for {name}",
    "Meeting notes with {name}",
    "When did {name} join the board?",
    "Is {name} still the representative?",
    "Invoice sent to {name}",
)
POSSESSIVE_SENTENCES = (
    "The keys to {name} flat are with the caretaker.",
    "Nobody has replied to {name} email about the refund.",
    "We found {name} umbrella under the table after the party.",
    "The doctor reviewed {name} results on the phone.",
    "The school sent {name} report card home last week.",
    "I borrowed {name} bicycle to get to the station.",
)
POSSESSIVE_OPENING = (
    "{name} car was parked outside the school again.",
    "{name} email about the refund arrived this morning.",
    "{name} application was approved by the committee.",
    "{name} flat is on the second floor.",
    "{name} lawyer asked for more time.",
    "{name} results came back from the lab.",
)
HASHTAG_SENTENCES = (
    "Happy birthday to the best neighbour ever {tag}",
    "So proud of this team today {tag} #teamwork",
    "{tag} wins the regional chess final again",
    "Thoughts with the family this week {tag}",
    "Cannot wait for the concert on Saturday {tag} #live",
    "Retweet if you support {tag} for council",
)


@dataclass(frozen=True)
class Templates:
    """The sentences a generator writes names into (one set per probe set)."""

    sentences: tuple[str, ...]
    urls: tuple[str, ...]
    queries: tuple[str, ...]
    surname_queries: tuple[str, ...]
    possessive: tuple[str, ...]
    possessive_opening: tuple[str, ...]
    hashtags: tuple[str, ...]


TUNING = Templates(SENTENCES, URLS, QUERIES, SURNAME_QUERIES, POSSESSIVE_SENTENCES, POSSESSIVE_OPENING,
                   HASHTAG_SENTENCES)
"""The tuning generator's templates (span rules may be chosen on its probes)."""
ASCII_ONLY = ("url", "full_width")  # URLs and full-width forms exist for ASCII letters only
LOWER_CASE = ("lower_case", "cross_document_case", "cross_batch_case", "common_lower_case")  # the lower-case name never opens the sentence
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")


@dataclass(frozen=True)
class Probe:
    """One generated case.

    Attributes:
        category: one of :data:`CATEGORIES`.
        case: the case number within its category.
        batches: the documents to ingest, batch by batch (one call each, in order).
        queries: queries sanitized after ingest (empty for document probes).
        check: ``("document", i)`` (the i-th document over all batches) or ``("query", i)``.
        parts: the name parts whose survival in the checked text is a leak.
        reopen: the queries go to a new text stage that only has the persisted index state.
    """

    category: str
    case: int
    batches: tuple[tuple[str, ...], ...]
    queries: tuple[str, ...]
    check: tuple[str, int]
    parts: tuple[str, ...]
    reopen: bool = False

    def checked(self, documents: Sequence[str], queries: Sequence[str]) -> str:
        """The text this probe's leak is counted in."""
        kind, i = self.check
        return documents[i] if kind == "document" else queries[i]


# -- the name source ----------------------------------------------------------------------
def _words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[^\W\d_]+", text)}


def _json_strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_strings(v)


@lru_cache(maxsize=1)
def shipped_words(root: Path = SHIPPED_DATA) -> frozenset[str]:
    """Every case-folded word in a word list the library ships: the ``.txt`` files and the
    string values of the ``.json`` files under ``src/private_vectors/data/`` (the surrogate
    pool's first names, last names and cities among them), plus the name and place
    vocabularies the installed text stage builds at run time (from Faker's locales) when it
    exposes them."""
    words: set[str] = set()
    for path in sorted(root.rglob("*")):
        if path.suffix == ".txt":
            words |= _words(path.read_text("utf-8"))
        elif path.suffix == ".json":
            for s in _json_strings(json.loads(path.read_text("utf-8"))):
                if len(s) < 60:  # list entries, not descriptions
                    words |= _words(s)
    return frozenset(words | _runtime_vocabulary())


def _runtime_vocabulary() -> set[str]:
    """The text stage's own name/place vocabularies, when the installed code has them."""
    import importlib

    out: set[str] = set()
    for module, fn in (("vocabulary", "first_names"), ("vocabulary", "places"), ("wordlist", "name_words"),
                       ("wordlist", "word_lists")):
        try:  # an older or newer layout lacks some: the data files still count
            got = getattr(importlib.import_module(f"private_vectors.text.{module}"), fn)()
        except Exception:
            continue
        groups = got if isinstance(got, tuple) else (got,)
        out |= {w.casefold() for g in groups for w in g if isinstance(w, str)}
    return out


def _load_names(path: Path = NAMES_FILE) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))


def name_source(path: Path = NAMES_FILE, shipped: frozenset[str] | None = None) -> tuple[list[str], list[str]]:
    """(given names, surnames) of the probe source, minus any entry whose case-folded word is in a
    shipped list (``shipped`` defaults to :func:`shipped_words`)."""
    data = _load_names(path)
    shipped = shipped_words() if shipped is None else shipped
    lists = []
    for key in ("first", "last"):
        entries = [w for origin in sorted(data[key]) for w in data[key][origin]]
        lists.append([w for w in entries if not (_words(w) & shipped)])
    return lists[0], lists[1]


def common_source(path: Path = COMMON_FILE) -> tuple[list[str], list[str]]:
    """(given names, surnames) of the common-name probes: single words of at least 3 letters (a
    shorter part could never count as a leak)."""
    data = _load_names(path)
    return tuple(  # type: ignore[return-value]
        [w for origin in sorted(data[key]) for w in data[key][origin] if " " not in w and len(w) >= 3]
        for key in ("first", "last"))


def fresh(path: Path = FRESH_FILE) -> tuple[Templates, tuple[list[str], list[str]], tuple[list[str], list[str]]]:
    """The held-out probe set (``benchmarks/configs/evasion_fresh.json``): its templates, its rare
    names (minus any word a shipped list or the tuning names hold) and its common names (minus
    the tuning common names), so that no name of the tuning generator reaches it; every name part
    has three letters or more (a shorter part could never count as a leak)."""
    data = _load_names(path)
    t = data["templates"]
    templates = Templates(*(tuple(t[k]) for k in ("sentences", "urls", "queries", "surname_queries", "possessive",
                                                  "possessive_opening", "hashtags")))
    tuning_words = {w for names in (*name_source(shipped=frozenset()), *common_source()) for n in names
                    for w in _words(n)}
    rare = tuple([w for origin in sorted(data[key]) for w in data[key][origin]
                  if all(len(p) >= 3 for p in _words(w)) and not (_words(w) & (shipped_words() | tuning_words))]
                 for key in ("first", "last"))
    common = tuple([w for origin in sorted(data[key]) for w in data[key][origin]
                    if " " not in w and len(w) >= 3 and not (_words(w) & tuning_words)]
                   for key in ("common_first", "common_last"))
    return templates, rare, common  # type: ignore[return-value]


def name_origins(path: Path = NAMES_FILE) -> list[str]:
    """The naming traditions the source covers."""
    data = _load_names(path)
    return sorted(set(data["first"]) | set(data["last"]))


# -- transformations ----------------------------------------------------------------------
def full_width(text: str) -> str:
    """ASCII letters and digits as their full-width forms (U+FF01..U+FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and c.isalnum() else c for c in text)


def insert_zero_width(word: str, rng: random.Random) -> str:
    """``word`` with one zero-width character at a random inner position."""
    i = rng.randrange(1, len(word))
    return word[:i] + rng.choice(ZERO_WIDTH) + word[i:]


def typo(word: str, rng: random.Random) -> str:
    """One keyboard-style error inside ``word`` (swap, drop, double or change a letter), never the
    first letter and never the word itself."""
    for _ in range(20):
        i = rng.randrange(1, len(word) - 1)
        kind = rng.choice(("swap", "drop", "double", "change"))
        if kind == "swap":
            out = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        elif kind == "drop":
            out = word[:i] + word[i + 1:]
        elif kind == "double":
            out = word[:i] + word[i] + word[i:]
        else:
            vowels = "aeiou" if word[i].lower() in "aeiou" else "bdgklmnprst"
            out = word[:i] + rng.choice([v for v in vowels if v != word[i].lower()]) + word[i + 1:]
        if out.casefold() != word.casefold() and len(out) >= 3:
            return out
    raise ValueError(f"no typo for {word!r}")


# -- the generator ------------------------------------------------------------------------
def _url_name(first: str, last: str, rng: random.Random, t: Templates = TUNING) -> str:
    return rng.choice(t.urls).format(first=first.lower(), last=last.lower(), n=rng.randrange(10, 99),
                                   sep=rng.choice("-_."))


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def _probe(category: str, case: int, first: str, last: str, rng: random.Random, t: Templates = TUNING) -> Probe:
    kind = category.removeprefix("common_")
    name = f"{first} {last}"
    s1, s2 = rng.sample(t.sentences, 2)
    if category in LOWER_CASE:  # the lower-case name goes in a sentence it does not open
        s1 = rng.choice([s for s in t.sentences if not s.startswith("{name}")])
        s2 = rng.choice([s for s in t.sentences if not s.startswith("{name}") and s != s1])
    doc = lambda n, s=s1: s.format(name=n)  # noqa: E731
    parts = (first, last)
    one = lambda text: Probe(category, case, ((text,),), (), ("document", 0), parts)  # noqa: E731
    if kind == "lower_case":
        return one(doc(name.lower()))
    if kind == "cross_document_case":
        return Probe(category, case, ((doc(name, s2), doc(name.lower())),), (), ("document", 1), parts)
    if kind == "cross_batch_case":
        return Probe(category, case, ((doc(name, s2),), (doc(name.lower()),)), (), ("document", 1), parts)
    if kind == "url":
        return one(_url_name(first, last, rng, t))
    if kind == "placeholder":
        return one(doc(f"<{first.upper()}_{last.upper()}>"))
    if kind == "line_break":
        return one(doc(f"{first}\n{last}"))
    if kind == "full_width":
        return one(doc(full_width(name)))
    if kind == "all_caps":
        return one(doc(name.upper()))
    if kind == "zero_width":
        return one(doc(f"{insert_zero_width(first, rng)} {insert_zero_width(last, rng)}"))
    if kind == "query_typo":
        wrong = (typo(first, rng), typo(last, rng))
        query = rng.choice(t.queries).format(name=" ".join(wrong).lower())
        return Probe(category, case, ((doc(name),),), (query,), ("query", 0), wrong)
    if kind == "reopened_upper":
        query = rng.choice(t.queries).format(name=name.upper())
        return Probe(category, case, ((doc(name),),), (query,), ("query", 0), parts, reopen=True)
    if kind == "reopened_surname":
        query = rng.choice(t.surname_queries).format(name=last)
        return Probe(category, case, ((doc(name),),), (query,), ("query", 0), (last,), reopen=True)
    if kind == "possessive":
        return one(rng.choice(t.possessive).format(name=_possessive(name)))
    if kind == "possessive_surname":
        return Probe(category, case, ((rng.choice(t.possessive_opening).format(name=_possessive(last)),),), (),
                     ("document", 0), (last,))
    if kind in ("initial", "initial_joined", "initial_after"):
        written = {"initial": f"{first[0]}. {last}", "initial_joined": f"{first[0]}.{last}",
                   "initial_after": f"{last}, {first[0]}."}[kind]
        return Probe(category, case, ((doc(written),),), (), ("document", 0), (last,))
    if kind == "hashtag":
        tag = "#" + re.sub(r"\W", "", first + last)
        return Probe(category, case, ((rng.choice(t.hashtags).format(tag=tag),),), (), ("document", 0),
                     (tag[1:], first, last))
    raise ValueError(f"unknown category {category!r}")


def generate(cases: int = 150, seed: int = 0, categories: Sequence[str] = CATEGORIES,
             names: tuple[list[str], list[str]] | None = None, templates: Templates = TUNING,
             common: tuple[list[str], list[str]] | None = None) -> dict[str, list[Probe]]:
    """``cases`` probes per category, deterministic for a given seed, name source and templates
    (:data:`TUNING` by default; :func:`fresh` gives the held-out set). Within a category each
    case has its own given name and surname."""
    firsts, lasts = name_source() if names is None else names
    if cases > min(len(firsts), len(lasts)):
        raise ValueError(f"{cases} cases need as many distinct names; the source has "
                         f"{len(firsts)} given names and {len(lasts)} surnames")
    common = common_source() if common is None else common
    out = {}
    for category in categories:
        if category not in CATEGORIES:
            raise ValueError(f"unknown category {category!r}; choose from {CATEGORIES}")
        rng = random.Random(f"{seed}/{category}")
        source = common if category in COMMON_CATEGORIES else (firsts, lasts)
        pools = [[w for w in ws if w.isascii()] if category in ASCII_ONLY else ws for ws in source]
        if cases > min(len(pools[0]), len(pools[1])):
            raise ValueError(f"{cases} cases of {category} need as many distinct names; the source has "
                             f"{len(pools[0])} given names and {len(pools[1])} surnames for it")
        picked = zip(rng.sample(pools[0], cases), rng.sample(pools[1], cases), strict=True)
        out[category] = [_probe(category, i, given, family, rng, templates) for i, (given, family) in enumerate(picked)]
    return out


# -- scoring ------------------------------------------------------------------------------
def normalise(text: str) -> str:
    """What a reader sees: NFKC, invisible format characters (Unicode category Cf: zero-width,
    bidi controls, soft hyphen) removed, case-folded."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if unicodedata.category(c) != "Cf").casefold()


def leaked_parts(parts: Sequence[str], text: str) -> list[str]:
    """The name parts (case-folded, at least 3 letters) that occur in ``text`` as whole words
    after :func:`normalise`."""
    seen = normalise(text)
    out = []
    for part in parts:
        p = normalise(part)
        if len(p) >= 3 and re.search(rf"(?<![^\W\d_]){re.escape(p)}(?![^\W\d_])", seen):
            out.append(part)
    return out


class TextStage:
    """What a system does to documents and queries (one instance = one store's lifetime)."""

    def documents(self, texts: list[str]) -> list[str]:
        raise NotImplementedError

    def queries(self, texts: list[str]) -> list[str]:
        raise NotImplementedError

    def reopened(self) -> TextStage:
        """The text stage of the same store opened again."""
        raise NotImplementedError


class LibraryStage(TextStage):
    """The library's default text stage through :class:`~private_vectors.PrivateEmbedding`."""

    def __init__(self, make: Callable[[], Any] | None = None) -> None:
        self._make = make or _default_embedding
        self.pe = self._make()

    def documents(self, texts: list[str]) -> list[str]:
        return list(self.pe.sanitize_documents(texts))

    def queries(self, texts: list[str]) -> list[str]:
        return list(self.pe.pipeline.sanitize_queries(texts))

    def reopened(self) -> LibraryStage:
        state = self.pe.pipeline.query_index_state()
        new = LibraryStage(self._make)
        new.pe.pipeline.load_query_index_state(state)
        return new


_RULES_OFF: list[str] = []


def _default_embedding(key: bytes | None = None) -> Any:
    from private_vectors import PrivateEmbedding
    from private_vectors.text import Sanitizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if _RULES_OFF:
            return PrivateEmbedding(concept="PII", eps=10, key=key,
                                    sanitize=Sanitizer("PII", key=key, rules_off=_RULES_OFF))
        return PrivateEmbedding(concept="PII", eps=10, key=key)


_TAGGER: list[str] = []


def _model_embedding(key: bytes | None = None) -> Any:
    from _shared import model_sanitizer

    from private_vectors import PrivateEmbedding

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stage = model_sanitizer("PII", _TAGGER[0] if _TAGGER else None, key=key, rules_off=_RULES_OFF)
        return PrivateEmbedding(concept="PII", eps=10, key=key, sanitize=stage)


def _rules_embedding(key: bytes | None = None) -> Any:
    from private_vectors import PrivateEmbedding
    from private_vectors.text import Sanitizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stage = Sanitizer("PII", key=key, detector="rules", rules_off=_RULES_OFF)
        return PrivateEmbedding(concept="PII", eps=10, key=key, sanitize=stage)


def rules_library() -> LibraryStage:
    """The text stage without the learned tagger (``Sanitizer("PII", detector="rules")``), no key."""
    return LibraryStage(_rules_embedding)


def keyed_rules_library() -> LibraryStage:
    """As :func:`rules_library`, with a key (a fresh random one per store)."""
    key = secrets.token_bytes(32)
    return LibraryStage(lambda: _rules_embedding(key))


def model_library() -> LibraryStage:
    """The default text stage with the learned tagger (``Sanitizer("PII", detector="model")``), no key."""
    return LibraryStage(_model_embedding)


def keyed_model_library() -> LibraryStage:
    """As :func:`model_library`, with a key (a fresh random one per store)."""
    key = secrets.token_bytes(32)
    return LibraryStage(lambda: _model_embedding(key))


def keyed_library() -> LibraryStage:
    """The default text stage with a key (a fresh random one per store: the results do not depend
    on its value), so the keyed query index is persisted and a reopened store restores it."""
    key = secrets.token_bytes(32)
    return LibraryStage(lambda: _default_embedding(key))


class PresidioStage(TextStage):
    """presidio's defaults: every recognizer, ``AnonymizerEngine`` replace; no memory."""

    def __init__(self) -> None:
        from _shared import presidio_defaults

        self.analyzer, self.anonymizer = presidio_defaults()

    def _one(self, text: str) -> str:
        results = self.analyzer.analyze(text=text, language="en")
        return self.anonymizer.anonymize(text=text, analyzer_results=results).text

    def documents(self, texts: list[str]) -> list[str]:
        return [self._one(t) for t in texts]

    def queries(self, texts: list[str]) -> list[str]:
        return [self._one(t) for t in texts]

    def reopened(self) -> PresidioStage:
        return self


class TaggerStage(TextStage):
    """The learned tagger alone (its recognizer, ``TaggerRecognizer``: hashtags and handles read as
    their words): every span it finds replaced by ``<LABEL>``; no memory across documents."""

    def __init__(self) -> None:
        from private_vectors.text.recognizers.tagger import TaggerRecognizer

        self.model = TaggerRecognizer()

    def _apply(self, texts: list[str]) -> list[str]:
        out = []
        for text, spans in zip(texts, self.model.spans(texts), strict=True):
            for s in sorted(spans, key=lambda s: -s.start):
                text = text[:s.start] + f"<{s.label}>" + text[s.end:]
            out.append(text)
        return out

    def documents(self, texts: list[str]) -> list[str]:
        return self._apply(texts)

    def queries(self, texts: list[str]) -> list[str]:
        return self._apply(texts)

    def reopened(self) -> TaggerStage:
        return self


def run_category(probes: Sequence[Probe], make: Callable[[], TextStage]) -> list[dict[str, Any]]:
    """Run one category's probes through one store lifetime; one row per case."""
    stage = make()
    outcomes: list[tuple[Probe, list[str]]] = []
    for p in probes:  # ingest everything first: a store collects documents before it is queried
        outcomes.append((p, [d for batch in p.batches for d in stage.documents(list(batch))]))
    if any(p.reopen for p in probes):
        stage = stage.reopened()
    rows = []
    for p, docs in outcomes:
        queries = stage.queries(list(p.queries)) if p.queries else []
        text = p.checked(docs, queries)
        rows.append({"case": p.case, "leaked": leaked_parts(p.parts, text), "stored": text})
    return rows


def evaluate(probes: dict[str, list[Probe]], systems: dict[str, Callable[[], TextStage]]
             ) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """{system: {category: rows}}."""
    return {name: {cat: run_category(ps, make) for cat, ps in probes.items()} for name, make in systems.items()}


# -- report -------------------------------------------------------------------------------
def _example(probe: Probe) -> str:
    kind, i = probe.check
    text = ([d for b in probe.batches for d in b][i] if kind == "document" else probe.queries[i])
    shown = "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in text)
    return shown.replace("\n", "\\n").replace("|", "\\|")


def report(probes: dict[str, list[Probe]], results: dict[str, Any], command: str, seconds: float,
           source: str = "tuning") -> str:
    systems = list(results)
    if source == "fresh":
        _, (firsts, lasts), _ = fresh()
        where, origins = "benchmarks/configs/evasion_fresh.json (held out: templates and names of their own)", \
            len(set(_load_names(FRESH_FILE)["first"]) | set(_load_names(FRESH_FILE)["last"]))
    else:
        firsts, lasts = name_source()
        where, origins = "benchmarks/configs/evasion_names.json", len(name_origins())
    n = len(next(iter(probes.values())))
    lines = ["# Evasion probes: generated names written to slip past detection", "",
             f"Command: `{command}`; wall {seconds:.0f} s.", "",
             f"{n} cases per category, seed from the command; names from "
             f"`{where}` ({len(firsts)} given names, {len(lasts)} surnames, "
             f"{origins} naming traditions, none in a shipped word list). A case leaks when a name "
             "part (≥ 3 letters) survives in the checked text after NFKC, removal of invisible format "
             "characters and case folding. See the docstring of `benchmarks/evasion.py` for each category.", "",
             "| category | example (checked text) | " + " | ".join(f"{s}: leaks" for s in systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for cat, ps in probes.items():
        cells = [f"{sum(bool(r['leaked']) for r in results[s][cat])} / {len(ps)}" for s in systems]
        lines.append(f"| {cat} | `{_example(ps[0])}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def summary(results: dict[str, Any], cases_named: bool = True) -> dict[str, Any]:
    """Leak counts and (``cases_named``) the leaking case numbers per system and category (no
    stored text). The held-out probes (``--probes fresh``) get counts alone, so that which of
    their cases leak is never written down."""
    return {s: {cat: {"leaks": sum(bool(r["leaked"]) for r in rows), "cases": len(rows),
                      **({"leaking_cases": [r["case"] for r in rows if r["leaked"]]} if cases_named else {})}
                for cat, rows in per_cat.items()} for s, per_cat in results.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data", help="unused (the probes are generated); kept for a "
                   "uniform command line")
    p.add_argument("--cases", type=int, default=150)
    p.add_argument("--limit", type=int, default=None, help="quick run: this many cases per category")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--categories", default=",".join(CATEGORIES))
    p.add_argument("--probes", default="tuning", choices=("tuning", "fresh"),
                   help="tuning: the generator's own templates and names (rules may be chosen on them); fresh: "
                   "the held-out set of benchmarks/configs/evasion_fresh.json (measured only)")
    p.add_argument("--systems", default="library,library-keyed,presidio",
                   help="library (the default detector, today the tagger: no key), library-keyed (the default "
                   "with a key), library-model / library-model-keyed (detector=\"model\" named), library-rules / "
                   "library-rules-keyed (detector=\"rules\": no tagger), presidio, tagger (the learned tagger alone)")
    p.add_argument("--rules-off", default=None, help="library systems (with the tagger too): comma-separated "
                   "rules_off entries")
    p.add_argument("--tagger", default=None, help="library-model systems: the learned tagger from this weight "
                   "folder (written by scripts/train_tagger.py) instead of the shipped one")
    p.add_argument("--dump", default=None, help="write the generated probes as JSON lines here and stop")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    cases = args.limit or args.cases
    if args.probes == "fresh":
        templates, rare, common = fresh()
        probes = generate(cases, args.seed, args.categories.split(","), names=rare, templates=templates, common=common)
    else:
        probes = generate(cases, args.seed, args.categories.split(","))
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as fh:
            for ps in probes.values():
                for pr in ps:
                    fh.write(json.dumps(asdict(pr), ensure_ascii=False) + "\n")
        return 0
    if args.tagger is not None:
        _TAGGER[:] = [args.tagger]
    if args.rules_off is not None:  # the default stage with rules switched off (benchmarks/text_rules.py)
        _RULES_OFF[:] = [r for r in args.rules_off.split(",") if r]
    known: dict[str, Callable[[], TextStage]] = {"library": LibraryStage, "library-keyed": keyed_library,
                                                 "presidio": PresidioStage, "tagger": TaggerStage,
                                                 "library-model": model_library, "library-model-keyed": keyed_model_library,
                                                 "library-rules": rules_library, "library-rules-keyed": keyed_rules_library}
    systems = {s: known[s] for s in args.systems.split(",")}
    t0 = time.time()
    results = evaluate(probes, systems)
    command = ".venv/bin/python benchmarks/evasion.py " + " ".join(sys.argv[1:])
    text = report(probes, results, command, time.time() - t0, args.probes)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
        out.with_suffix(".json").write_text(json.dumps({"command": command, "seed": args.seed, "cases": cases,
                                                        "probes": args.probes,
                                                        "results": summary(results, args.probes != "fresh")})
                                   + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
