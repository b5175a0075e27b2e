"""Names from the shipped multilingual name pool, by vocabulary and shape, with no model.

spaCy's small English model misses most names that are not English ("Einojuhani Pyysalo",
"Wisława Szczepańska", "my kid Tadzio"; README Text stage, detection table). This recognizer
finds them by shape and vocabulary:

* a **full name**: a capitalised token that is a known first name, followed on the same line by
  up to three more capitalised tokens, single-letter initials ("Julieta S Almeida",
  "Margaret S. Stouffer") or lower-case surname particles ("Willemine ten Pas");
* a **lone first name** ("Dexter lives on ...", "said Maslin to Antonio"): a capitalised known
  first name that is neither a common English word nor the first word of a sentence followed
  by another capitalised word.
* an **unknown full name** ("Sengdao Bunnag"): two or three adjacent title-case words, none an
  English word (spaCy's lower-case vocabulary and the packaged encoder's whole words), a place, a
  first name or a word with an English derivational ending ("Dehydrogenase", "Involution");
  the same in lower case ("sengdao bunnag") when every other word of its sentence is a known
  word, at the lone-name score (weak evidence: replaced where found, never propagated);
* the first line of an address block or signature, and the subject of a verb only people do
  ("Trivo lives on ...");
* a **lone surname with a possessive opening a sentence** ("Okafor's flat is ..."), when the word
  is no English word, place or first name (the unknown-name test below): a possession opening a
  sentence is a person's, where a small model sees a capitalised word it does not know.

Hashtags and handles are read as the words they join as well (``#AdewaleCoyotl`` as "Adewale
Coyotl", :mod:`private_vectors.text.tags`), the way the learned tagger reads them: a name found
among a tag's words replaces the whole tag.

The vocabulary is the first-name list of the surrogate pool shipped with the package
(``data/text/surrogate_pool_v1.json``: Faker's Latin-script locales, ~21k names, versioned and
hash-checked by :func:`private_vectors.text.surrogates.load_pool`), minus common English words
(spaCy's stop words, Faker's en_US lorem word list, weekdays and months;
:mod:`~private_vectors.text.vocabulary`). Because the data sets this project measures on were
generated from similar public name lists, the detection benchmark reports recall on names
outside this vocabulary separately.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import InvalidParameterError
from ..scores import SCORES, score_param
from ..spans import Span, validate_texts
from ..traits import SHAPED
from ..vocabulary import (
    PARTICLES,
    common_words,
    countries,
    digest,
    english_words,
    first_names,
    known_words,
    places,
    word_key,
)
from .base import Recognizer
from .words import LINE, POSSESSIVE, TOKEN, capitalised, sentence_initial, title_case

__all__ = ["NameDetector"]

# derivational endings of English (and Latin-derived scientific) words: "Involution", "Dehydrogenase",
# "Acetylated", "Pituitary"; a word with one is no evidence of a name outside the vocabularies
_ENGLISH_SUFFIXES = ("tion", "sion", "ase", "ate", "ated", "ates", "ine", "ines", "ary", "ous", "ic", "ics", "ical",
                     "ity", "ism", "ist", "ment", "ness", "ing", "ed", "ogy", "osis", "itis", "ide", "yl", "ene",
                     "ium", "ia", "al", "ive", "ize", "ise", "ized", "ised", "less", "ful", "able", "ible", "er",
                     "ers", "ly", "cyte", "cytes", "ome", "omes", "gen", "genic")
_POSSESSIVE_WORD = re.compile(r"(?<![\w'’-])([^\W\d_][\w-]*)(?:['’]s|s['’])(?![\w'’])[ \t]*([^\W\d_]*)")
# what an eponym names ("Crohn's disease", "Cohen's kappa", "Hooke's law"), not what a person owns
_EPONYM_NOUNS = frozenset(["disease", "diseases", "syndrome", "law", "laws", "sign", "test", "lymphoma", "sarcoma",
                           "palsy", "phenomenon", "principle", "theorem", "equation", "constant", "ratio", "reflex",
                           "method", "hypothesis", "criteria", "criterion", "scale", "index", "kappa", "coefficient",
                           "rule", "model", "algorithm", "disorder", "ulcer", "tumour", "tumor", "cell", "cells",
                           "solution", "reagent", "stain", "classification", "score", "formula", "effect"])
_SUBJECT_VERB = re.compile(r"(?<![\w'’-])([^\W\d_][\w'’-]*) (?:lives|lived|spent|said|says|told|wrote|married|"
                           r"began writing|grew up|was born|is from|had given)\b")


class NameDetector(Recognizer):
    """PERSON spans from the shipped first-name vocabulary and name shape (see the module docstring).

    Args:
        score: the score of a lone first name (below presidio's 0.85, so a model span of the
            same extent wins a merge: the shipped place list lacks many real places, "Atlanta"
            and "Asia" among them, which are also somebody's first name).
        full_name_score: the score of a full name (above presidio's 0.85: "Emmie Ström" is a
            person even where spaCy calls it a place).
        lone_first_names: also report a known first name standing alone.
        unknown_names: also report full names outside every vocabulary (see the module docstring).
    """

    kind = "names"
    name = "names"
    traits = frozenset([SHAPED])
    version = "7"
    entities = ("PERSON",)

    def __init__(self, *, score: float = SCORES.name, full_name_score: float = SCORES.full_name, lone_first_names: bool = True,
                 unknown_names: bool = True) -> None:
        if not isinstance(lone_first_names, bool):
            raise InvalidParameterError("lone_first_names", "a bool", lone_first_names)
        if not isinstance(unknown_names, bool):
            raise InvalidParameterError("unknown_names", "a bool", unknown_names)
        self.unknown_names = unknown_names
        self.score = score_param("score", score)
        self.full_name_score = score_param("full_name_score", full_name_score)
        self.lone_first_names = lone_first_names

    def __repr__(self) -> str:
        return (f"NameDetector(score={self.score}, full_name_score={self.full_name_score}, "
                f"lone_first_names={self.lone_first_names}, unknown_names={self.unknown_names})")

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """PERSON spans per text."""
        firsts, common, known = first_names(), common_words(), places()
        out = []
        for text in validate_texts(texts):
            found = self._one(text, firsts, common, known)
            out.append(found + self._in_tags(text, found, firsts, common, known))
        return out

    def _in_tags(self, text: str, found: list[Span], firsts: frozenset[str], common: frozenset[str],
                 known: frozenset[str]) -> list[Span]:
        """Names among the words of a hashtag or handle (:func:`~private_vectors.text.tags.tag_view`,
        cut with the default encoder's vocabulary, as the learned tagger reads them), each widened
        to its whole tag; none that overlaps a span ``found`` in the text as written."""
        from ..tags import TAG, tag_view
        from ..vocabulary import encoder_words

        if TAG.search(text) is None:
            return []
        view = tag_view(text, encoder_words())
        out: list[Span] = []
        for s in self._one(view.text, firsts, common, known) if view.tags else []:
            a, b = view.original(s.start, s.end)
            if any(t0 < b and a < t1 for t0, t1 in view.tags) and \
                    not any(o.start < b and a < o.end for o in [*found, *out]):
                out.append(Span(a, b, s.label, s.score, self.name))
        return out

    def _one(self, text: str, firsts: frozenset[str], common: frozenset[str], known: frozenset[str]) -> list[Span]:
        words = list(TOKEN.finditer(text))
        out: list[Span] = []
        i = 0
        while i < len(words):
            w = words[i].group(0)
            if not (capitalised(w) and word_key(w) in firsts):
                i += 1
                continue
            j = self._extend(text, words, i, common)
            a, b = words[i].start(), words[j].end()
            if j == i and not self._lone_ok(text, words, i, common):
                i += 1
                continue
            possessive = POSSESSIVE.search(text[a:b])
            b -= len(possessive.group(0)) if possessive else 0
            out.append(Span(a, b, "PERSON", self.full_name_score if j > i else self.score, self.name))
            i = j + 1
        out += self._letterhead(text, common, known) + self._subjects(text, common, known)
        out += [s for s in self._unknown_names(text, words, common, known)
                if not any(o.start < s.end and s.start < o.end for o in out)]
        return out + [s for s in self._possessives(text, common, known)
                      if not any(o.start < s.end and s.start < o.end for o in out)]

    def _possessives(self, text: str, common: frozenset[str], known: frozenset[str]) -> list[Span]:
        """A lone surname with a possessive opening a sentence ("Okafor's flat is ..."): a title-case
        word that the unknown-name test takes for a name part (no English word, place or first
        name), at the lone-name score; not an eponym ("Crohn's disease", "Cohen's kappa")."""
        english, firsts = english_words(), first_names()
        out = []
        for m in _POSSESSIVE_WORD.finditer(text):
            word = m.group(1)
            k = word_key(word)
            if title_case(word) and len(k) >= 3 and sentence_initial(text, m.start()) and k.isalpha() \
                    and m.group(2).casefold() not in _EPONYM_NOUNS \
                    and not k.endswith(_ENGLISH_SUFFIXES) and k not in english and k not in common \
                    and k not in known and k not in firsts:
                out.append(Span(m.start(1), m.end(1), "PERSON", self.score, self.name))
        return out

    def _unknown_names(self, text: str, words: list[re.Match[str]], common: frozenset[str],
                       known: frozenset[str]) -> list[Span]:
        """Two or three adjacent words on one line, all title case or all lower case, none an
        English word (spaCy's lower-case vocabulary, the common words, no English derivational
        ending) or a place: a full name outside every vocabulary ("Sengdao Bunnag", "vaideki
        macapagal"). A small NER model calls such names ORG, GPE or WORK_OF_ART, or nothing. In
        title case (no known first name among them) the score is ``full_name_score``; in lower
        case it is ``score`` (weak evidence: replaced where found, never propagated), and
        the ``ordinary-words`` rule drops the span when two or more texts of the batch write all its
        words in lower case (:func:`~private_vectors.text.rules.ordinary_words.lower_case_words`:
        jargon, not a name)."""
        english, firsts = english_words(), first_names()
        if not english or not self.unknown_names:
            return []

        def shape(m: re.Match[str] | None) -> str | None:
            if m is None:
                return None
            w = m.group(0)
            k = word_key(w)
            parts = [p for p in re.split(r"['’-]", k) if p]
            if len(k) < 2 or not "".join(parts).isalpha() or k.endswith(_ENGLISH_SUFFIXES) \
                    or any(p in english or p in common or p in known for p in parts):
                return None
            if title_case(w) and not any(p in firsts for p in parts):
                return "title"
            return "lower" if w.islower() and len(k) >= 3 else None

        out: list[Span] = []
        run: list[re.Match[str]] = []
        kind = None
        for m in [*words, None]:
            got = shape(m)
            if m is not None and got is not None and got == kind and text[run[-1].end():m.start()] == " ":
                run.append(m)
                continue
            if 2 <= len(run) <= 3 and (kind == "title" or self._plain_sentence(text, run, known_words())):
                b = run[-1].end() - (len(p.group(0)) if (p := POSSESSIVE.search(run[-1].group(0))) else 0)
                score = self.full_name_score if kind == "title" else self.score
                out.append(Span(run[0].start(), b, "PERSON", score, self.name))
            run, kind = ([m], got) if m is not None and got is not None else ([], None)
        return out

    @staticmethod
    def _plain_sentence(text: str, run: list[re.Match[str]], vocabulary: frozenset[str]) -> bool:
        """Whether every other word of the sentence around ``run`` is a known word: a pair of
        unknown lower-case words in plain English is a name; in a sentence with more unknown
        words ("multiphoton microscopy of kinetochore fibres") it is jargon."""
        a = max(text.rfind(c, 0, run[0].start()) for c in ".!?\n") + 1
        ends = [i for c in ".!?\n" if (i := text.find(c, run[-1].end())) >= 0]
        b = min(ends) if ends else len(text)
        for m in TOKEN.finditer(text, a, b):
            if run[0].start() <= m.start() < run[-1].end():
                continue
            k = word_key(m.group(0))
            if not k.isalpha() or len(k) < 3:
                continue
            if k not in vocabulary and k.removesuffix("s") not in vocabulary and k.removesuffix("es") not in vocabulary:
                return False
        return True

    def _subjects(self, text: str, common: frozenset[str], known: frozenset[str]) -> list[Span]:
        """A capitalised word outside the vocabulary that is the subject of a verb only people do
        ("Trivo lives on ...", "Rintanen began writing ...", "Asya spent a year ...")."""
        out = []
        for m in _SUBJECT_VERB.finditer(text):
            word = m.group(1)
            if title_case(word) and word_key(word) not in common and word_key(word) not in known:
                out.append(Span(m.start(1), m.end(1), "PERSON", self.full_name_score, self.name))
        return out

    def _letterhead(self, text: str, common: frozenset[str], known: frozenset[str]) -> list[Span]:
        """The first line of an address block or signature ("Dreux Joly\\nPaxata\\nPSC 3294, Box 9168"):
        two to four title-case words, initials or particles, none a common word or a place, above
        short lines (≤ 60 characters; a title above an abstract is not), one of the next three
        holding a digit, an "@" or a country. Every occurrence of that name in the text is taken."""
        if text.count("\n") < 2:
            return []
        lines = [m for m in LINE.finditer(text) if m.group(1)]
        if len(lines) < 3:
            return []
        known_countries = countries()
        first = lines[0]
        tokens = first.group(1).split()
        if not 2 <= len(tokens) <= 4 or not title_case(tokens[0]) or word_key(tokens[0]) in common:
            return []
        for t in tokens:
            bare = t.rstrip(".")
            if (len(bare) == 1 and bare.isupper()) or t in PARTICLES:
                continue  # an initial, "van", "de"
            if not TOKEN.fullmatch(t) or not title_case(t) or word_key(t) in common or word_key(t) in known:
                return []
        block = lines[1:4]  # short lines below with a number, an e-mail or a country: an address, not a title
        if any(len(m.group(1)) > 60 for m in block) or not any(
                any(c.isdigit() or c == "@" for c in m.group(1)) or m.group(1).casefold() in known_countries for m in block):
            return []
        name = first.group(1)  # the same name again in the block ("Mijail C Adomo" above and below the firm)
        return [Span(m.start(), m.end(), "PERSON", self.full_name_score, self.name)
                for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text)]

    @staticmethod
    def _extend(text: str, words: list[re.Match[str]], i: int, common: frozenset[str]) -> int:
        """Index of the last token of the name starting at ``i`` (same line, ≤ 4 tokens)."""
        j = i
        while j + 1 < len(words) and j - i < 3:
            gap = text[words[j].end():words[j + 1].start()]
            nxt = words[j + 1].group(0)
            if gap not in (" ", ". ") or (gap == ". " and len(words[j].group(0)) != 1):
                break
            if POSSESSIVE.search(words[j].group(0)):
                break
            if nxt.casefold() in PARTICLES and j + 2 < len(words) and capitalised(words[j + 2].group(0)):
                j += 1
                continue
            if not capitalised(nxt) or word_key(nxt) in common:
                break
            j += 1
        return j

    def _lone_ok(self, text: str, words: list[re.Match[str]], i: int, common: frozenset[str]) -> bool:
        if not self.lone_first_names:
            return False
        word = words[i].group(0)
        if word_key(word) in common or not title_case(word):  # "IMA", "SIV": acronyms, not names
            return False
        if text[words[i].end():words[i].end() + 1] in ("-", "(") or any(c.isdigit() for c in word):
            return False  # "Cas-9", "Candida(": a gene or a species, not a person
        if sentence_initial(text, words[i].start()):
            # "Dexter lives on ...", "Alice: ...", "Matheus, Janet" yes; "Rose Garden Hotel" no
            after = text[words[i].end():words[i].end() + 1]
            return after in (",", ":") or (i + 1 < len(words) and words[i + 1].group(0)[0].islower())
        return True

    def get_config(self) -> dict[str, Any]:
        from ..surrogates import load_pool

        return {"type": self.kind, "version": self.version, "score": self.score,
                "full_name_score": self.full_name_score, "lone_first_names": self.lone_first_names,
                "unknown_names": self.unknown_names,
                "vocabulary": {"pool": load_pool().describe(), "first_names": len(first_names()),
                               "sha256": digest(first_names())}}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> NameDetector:
        return cls(score=config.get("score", SCORES.name),
                   full_name_score=config.get("full_name_score", SCORES.full_name),
                   lone_first_names=config.get("lone_first_names", True),
                   unknown_names=config.get("unknown_names", True))
