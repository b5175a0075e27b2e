"""Replacing the selected spans of one text, and the log of what was written where."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .operators import Keep, Operator, Redact, Surrogate
from .spans import Span
from .surrogates import SurrogateGenerator

__all__ = ["Replacement", "operator_for", "replace_spans"]

Replacement = tuple[int, int, str, str]
"""One replacement: ``(start, end, label, written)``, offsets in the input text."""


def operator_for(label: str, policy: str, operators: Mapping[str, str],
                 surrogates: SurrogateGenerator | None) -> Operator:
    """The operator of ``label``: its override in ``operators``, else ``policy`` (a surrogate
    without a generator is redacted)."""
    pol = operators.get(label, policy)
    if pol == "keep":
        return Keep()
    if pol == "surrogate" and surrogates is not None:
        return Surrogate(surrogates)
    return Redact()


def replace_spans(text: str, spans: list[Span], operator: Callable[[str], Operator]) -> tuple[str, list[Replacement]]:
    """``text`` with each span replaced by its label's operator, and the log of the spans that
    changed (a kept span is not logged)."""
    out, pos, log = [], 0, []
    for s in spans:
        op = operator(s.label)
        out.append(text[pos:s.start])
        out.append(op.replace(text[s.start:s.end], s))
        pos = s.end
        if not isinstance(op, Keep):
            log.append((s.start, s.end, s.label, out[-1]))
    out.append(text[pos:])
    return "".join(out), log
