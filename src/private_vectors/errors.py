"""The package's one exception family.

Every error raised on bad input names the parameter, what was expected and
what was received, so a caller can fix the call without reading our source.
Each class also subclasses the matching builtin (``ValueError``/``TypeError``)
so generic ``except ValueError`` handlers keep working.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArtefactError",
    "ConfigMismatchError",
    "InvalidParameterError",
    "InvalidTypeError",
    "ModelNotAvailableError",
    "PrivacyWarning",
    "PrivateVectorsError",
    "SealedRecordError",
    "SealedStoreError",
    "describe_value",
]


def describe_value(value: Any, limit: int = 80) -> str:
    """A short, safe description of a received value for error messages."""
    try:
        shape = getattr(value, "shape", None)
        if shape is not None and not isinstance(value, (int, float)):
            return f"{type(value).__name__} of shape {tuple(shape)}"
        text = repr(value)
    except Exception:  # pragma: no cover - exotic objects
        text = f"<{type(value).__name__}>"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{text} ({type(value).__name__})"


class PrivateVectorsError(Exception):
    """Base class of every error this package raises on purpose."""


class _ParameterMessage:
    """Mixin building 'parameter X: expected Y, received Z' messages."""

    def __init__(self, parameter: str, expected: str, received: Any, *, note: str = "") -> None:
        self.parameter = parameter
        self.expected = expected
        self.received = received
        message = f"{parameter}: expected {expected}, received {describe_value(received)}"
        if note:
            message += f". {note}"
        super().__init__(message)  # type: ignore[call-arg]


class InvalidParameterError(_ParameterMessage, PrivateVectorsError, ValueError):
    """A parameter has the right type but a value outside its domain (ε ≤ 0, NaN, wrong shape…)."""


class InvalidTypeError(_ParameterMessage, PrivateVectorsError, TypeError):
    """A parameter has the wrong type (a string where a number was expected…)."""


class ConfigMismatchError(PrivateVectorsError, ValueError):
    """Two privacy configurations that must agree do not (reopened collection, artefact vs encoder)."""


class SealedStoreError(ConfigMismatchError):
    """A sealed store cannot be read or written as asked: no key, no keyring, another wrapper, or
    a request the store cannot answer without reading sealed values (a filter on a sealed key)."""


class SealedRecordError(PrivateVectorsError, ValueError):
    """A sealed record does not open: another key, an edited byte, another document's or another
    store's record, or a destroyed document key. Nothing of it is returned."""


class ArtefactError(PrivateVectorsError, ValueError):
    """A saved artefact (concept, CAPE/TextCrafter model, FAISS sidecar) is missing, corrupt or foreign."""


class ModelNotAvailableError(PrivateVectorsError, LookupError):
    """An encoder model cannot be loaded offline; the message says what to install."""


class PrivacyWarning(UserWarning):
    """A call is valid but weaker than it looks (a defaulted ε, a text re-embedded without a key)."""
