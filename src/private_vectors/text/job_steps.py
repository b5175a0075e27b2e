"""The two steps of a job over a :class:`~.sanitizer.Sanitizer`: keyed facts, then replacement.

A job is a set of documents protected together (one :meth:`~.sanitizer.Sanitizer.apply` call,
or a whole distributed ingest, :mod:`private_vectors.integrations.ray`). Its first step reads
each document's detected spans and emits keyed facts only (:class:`~.entity_index.JobFacts`),
which merge in any order or grouping into the frozen job index; its second step replaces spans
against that index plus the stored index of earlier jobs. :meth:`~.sanitizer.Sanitizer.apply`
runs the same two steps on one batch, so a single process and a distributed job agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .entity_index import EntityIndex, JobFacts, JobIndex, merge_values, strong_evidence
from .operators import Keep, Operator
from .overlap import OverlapIndex
from .replacement import Replacement, replace_spans
from .rules import escape
from .spans import Span, validate_texts
from .traits import reading

__all__ = ["apply_job", "detect", "escaped", "freeze_job", "job_facts", "job_spans"]


class Stage(Protocol):
    """What the two steps read of the text stage (a :class:`~.sanitizer.Sanitizer`): its
    entity index, its detection, its span selection and its operators."""

    index: EntityIndex
    traits: Mapping[str, frozenset[str]]

    def _prepared(self, texts: Sequence[str]) -> tuple[list[str], list[list[Span]] | None]: ...

    def _select(self, text: str, spans: list[Span], extra: Sequence[Span] = (),
                view: Mapping[str, str] | None = None, lower: frozenset[str] = frozenset()) -> list[Span]: ...

    def _operator(self, label: str) -> Operator: ...


def escaped(texts: Sequence[str]) -> list[str]:
    """The texts as both steps read them (validated; placeholders already in them escaped)."""
    return [escape(t) for t in validate_texts(texts)]


def detect(san: Stage, texts: Sequence[str]) -> tuple[list[str], list[list[Span]] | None]:
    """Escaped texts and their detected spans (None: a recognizer failed under
    ``on_error="redact_all"``): what both steps of a job read, detected once."""
    return san._prepared(texts)


def job_facts(san: Stage, texts: list[str], found: list[list[Span]]) -> JobFacts:
    """The first step of a job, on some of its documents (escaped texts and their detected
    spans): keyed facts only, merged over the job in any order. Each detected entity that is
    replaced gives its entries (weak unless :func:`~.entity_index.strong_evidence`); each text
    the words it writes in lower case."""
    facts = JobFacts()
    with san.index.remembering(), reading(san.traits):
        for t, s in zip(texts, found, strict=True):
            near = OverlapIndex(s)
            for span in san._select(t, s):
                if not isinstance(san._operator(span.label), Keep):
                    weak = not strong_evidence(t, span, s, near)
                    san.index.entity_facts(facts, span.label, t[span.start:span.end], weak=weak)
            san.index.text_facts(facts, t)
    return facts


def freeze_job(facts: JobFacts | Sequence[JobFacts]) -> JobIndex:
    """The frozen index of a job from the facts of all its documents."""
    return JobIndex.freeze(facts if isinstance(facts, JobFacts) else JobFacts.merged(facts))


def job_spans(san: Stage, texts: list[str], found: list[list[Span]], job: JobIndex) -> list[list[Span]]:
    """The second step's spans: detected spans plus every occurrence of an entity of the job
    index or of earlier jobs' (:meth:`~.entity_index.EntityIndex.spans`), where a word the
    *job* writes in lower case in two texts or more is an ordinary word."""
    view, lower = san.index.view(job.entries), san.index.job_words(job)
    with san.index.remembering():
        return [san._select(t, s, san.index.spans(t, view, any_case=False, ordinary=lower), view, lower)
                for t, s in zip(texts, found, strict=True)]


def apply_job(san: Stage, texts: list[str], found: list[list[Span]], job: JobIndex
              ) -> tuple[list[str], list[list[Replacement]], dict[str, str]]:
    """The second step on some of a job's documents: sanitized texts, replacement logs, and
    the index entries of every replaced span (merged over the job, then written with
    :meth:`~.entity_index.EntityIndex.commit_job`). Remembers nothing itself."""
    lower = san.index.job_words(job)
    outs, logs, remembered = [], [], {}
    with san.index.remembering():
        for t, spans in zip(texts, job_spans(san, texts, found, job), strict=True):
            out, log = replace_spans(t, spans, san._operator)
            for a, b, label, _ in log:
                merge_values(remembered, san.index.entries(label, t[a:b], lower))
            outs.append(out)
            logs.append(log)
    return outs, logs, remembered
