"""Why the text stage replaced or kept each span of one text: :meth:`Sanitizer.explain`.

    >>> from private_vectors.text import Sanitizer
    >>> why = Sanitizer("PII").explain("She met Okafor at the station.")    # doctest: +SKIP
    >>> for line in why.lines(): print(line)                               # doctest: +SKIP
    presidio detected PERSON 8:14 'Okafor' (score 0.85)
    context-free kept PERSON 8:14 'Okafor' (personal context: a singular personal pronoun)
    presidio replaced PERSON 8:14 'Okafor' (policy redact)

An explanation is built by running the text stage once more on the text with a decision list in
the rules' context (:class:`~.rules.RuleContext`): every span a rule dropped, added or changed,
every span a rule kept on purpose, what the recognizers found and what is finally replaced. The
stage remembers nothing of it (the keyed index is not written), and the explanation holds the
raw text: it lives in memory only. It is never logged, has no raw text in its ``repr``, and
refuses to be pickled or copied into a store.

Offsets are in the text as given; those of the ``detection``-stage rules (``name-shape``,
``person-title``) are in the text the recognizers read (normalised, per chunk: the same offsets
for a text without characters that normalisation maps away, shorter than the chunk size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidTypeError
from .job_steps import freeze_job, job_facts
from .operators import Keep
from .rules import Decision, RuleContext, escape
from .scores import SCORES
from .spans import Span
from .traits import ON_ERROR_SPAN

__all__ = ["Explanation", "explain"]


@dataclass(frozen=True)
class Explanation:
    """The decisions about one text (see the module docstring).

    Attributes:
        text: the text explained (raw: keep the explanation in memory only).
        replaced: the spans the text stage replaces in it.
        decisions: in order: ``detected`` (by a recognizer), then each rule's ``dropped``,
            ``added``, ``changed`` or ``kept``, then ``replaced``.
    """

    text: str = field(repr=False)
    replaced: tuple[Span, ...]
    decisions: tuple[Decision, ...]

    def __repr__(self) -> str:
        return (f"Explanation(<{len(self.replaced)} spans replaced, {len(self.decisions)} decisions; "
                "the text is withheld from repr>)")

    def __reduce__(self) -> Any:
        raise TypeError("an Explanation holds raw text and is kept in memory only; it cannot be pickled or stored")

    def why(self, value: str) -> list[Decision]:
        """The decisions about the spans overlapping any occurrence of ``value`` in the text."""
        where = [(i, i + len(value)) for i in _occurrences(self.text, value)]
        return [d for d in self.decisions if any(d.start < b and a < d.end for a, b in where)]

    def lines(self) -> list[str]:
        """One readable line per decision, quoting the span (raw text: show it, never log it)."""
        return [f"{d.rule} {d.action} {d.label} {d.start}:{d.end} {self.text[d.start:d.end]!r} ({d.reason})"
                for d in self.decisions]


def _occurrences(text: str, value: str) -> list[int]:
    out, i = [], text.find(value) if value else -1
    while i >= 0:
        out.append(i)
        i = text.find(value, i + 1)
    return out


def explain(san: Any, text: str) -> Explanation:
    """The :class:`Explanation` of ``text`` under the Sanitizer ``san`` (as :meth:`~.Sanitizer.document_spans`
    treats a batch of this one text, with the entities the keyed index already holds)."""
    if not isinstance(text, str):
        raise InvalidTypeError("text", "a str", text)
    san.index.load_pending()
    item = escape(text)
    decisions: list[Decision] = []
    found = san.detection.run([item], RuleContext(san._settings, index=san.index, view=san.index.view(),
                                                  decisions=decisions), san.index.ordinary)
    if found is None:  # on_error="redact_all"
        whole = (Span(0, len(item), "REDACTED", SCORES.certain, ON_ERROR_SPAN),) if item else ()
        return Explanation(text, whole, tuple(Decision(ON_ERROR_SPAN, "replaced", 0, len(item), "REDACTED",
                                                       "a recognizer failed: on_error='redact_all'") for _ in whole))
    spans = found[0]
    decisions += [Decision(s.detector, "detected", s.start, s.end, s.label, f"score {s.score:.2f}") for s in spans]
    job = freeze_job(job_facts(san, [item], [spans]))  # the text as a job of its own
    view, lower = san.index.view(job.entries), san.index.job_words(job)
    extra = san.index.spans(item, view, any_case=False, ordinary=lower)
    final = san._select(item, spans, extra, view, lower, decisions)
    replaced = tuple(s for s in final if not isinstance(san._operator(s.label), Keep))
    decisions += [Decision(s.detector, "replaced", s.start, s.end, s.label,
                           f"policy {san.options.operators.get(s.label, san.options.policy)}") for s in replaced]
    return Explanation(text, replaced, tuple(dict.fromkeys(decisions)))  # two recognizers' twin spans: one line
