"""The package's one exception family.

Every error raised on bad input names the parameter, what was expected and
what was received, so a caller can fix the call without reading our source. What was
received is described by its type, length or shape (:func:`describe_value`), never by its
content: a refused document does not reach a log through an error message.
Each class also subclasses the matching builtin (``ValueError``/``TypeError``)
so generic ``except ValueError`` handlers keep working.
"""

from __future__ import annotations

import difflib
import importlib
import numbers
import re
from collections.abc import Mapping, Set
from pathlib import PurePath
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

_SEQUENCES = (list, tuple, Set, Mapping)
_OPTION = re.compile(r"'([^'\s]{1,40})'")


class Described(str):
    """A description of a received value written by the raiser ("3 ids", "<a key>"): an error
    shows it as it is. It must carry no content of what was received (lengths, types and
    positions only); any other ``str`` given as the received value is described by its length."""


def describe_value(value: Any, limit: int = 80) -> str:
    """A description of a received value that carries none of its content.

    Numbers, booleans and None are shown (parameters such as ε, never document text); a path is
    shown (a user's file name); a ``str``, ``bytes``, container or other object is described by
    its type and length or shape only, so a document refused by a check never reaches a log
    through the error's message.
    """
    if isinstance(value, Described):
        return str(value)
    if value is None or isinstance(value, (bool, numbers.Number)):
        text = repr(value)
        return (text if len(text) <= limit else text[: limit - 3] + "...") + f" ({type(value).__name__})"
    if isinstance(value, PurePath):  # (not os.PathLike: a mock or proxy object claims that too)
        return f"the path {str(value)!r}"
    kind = type(value).__name__
    if isinstance(value, str):
        return f"a str of length {len(value)}" if value else "an empty str"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"a {kind} object of length {len(value)}"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and not isinstance(value, type):
        dtype = getattr(value, "dtype", None)
        return f"{kind} of shape {shape}" + (f" and dtype {dtype}" if dtype is not None else "")
    if isinstance(value, _SEQUENCES):
        return f"a {kind} of length {len(value)}{_item_types(value)}"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    return f"{kind} object"


def _item_types(value: Any) -> str:
    """' (items: str, int)': the types of a container's first items (values of a mapping)."""
    items = list(value.values() if isinstance(value, Mapping) else value)[:20]
    kinds = list(dict.fromkeys(type(v).__name__ for v in items))[:3]
    return f" (items: {', '.join(kinds)})" if kinds else ""


def _did_you_mean(expected: str, received: Any) -> str:
    """'did you mean 'laplace'?' when a str is close to one of the quoted options in ``expected``
    (the note names an allowed option, never what was received)."""
    if not isinstance(received, str) or isinstance(received, Described) or len(received) > 40:
        return ""
    close = difflib.get_close_matches(received, _OPTION.findall(expected), n=1, cutoff=0.75)
    return f"did you mean {close[0]!r}?" if close and close[0] != received else ""


class PrivateVectorsError(Exception):
    """Base class of every error this package raises on purpose."""


class _ParameterMessage:
    """Mixin building 'parameter X: expected Y, received Z' messages."""

    def __init__(self, parameter: str, expected: str, received: Any, *, note: str = "") -> None:
        self.parameter = parameter
        self.expected = expected
        self.received = describe_value(received)  # (the description: the error keeps no content of the value)
        message = f"{parameter}: expected {expected}, received {self.received}"
        hint = _did_you_mean(expected, received)
        for part in (hint, note):
            if part:
                message += f". {part}"
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


def require(module: str, missing: str) -> Any:
    """``module`` imported, or :class:`ModelNotAvailableError` with the message ``missing`` (what to
    install) when it cannot be: the one way the package reaches an optional dependency."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelNotAvailableError(missing) from exc


class PrivacyWarning(UserWarning):
    """A call is valid but weaker than it looks (a defaulted ε, a text re-embedded without a key)."""
