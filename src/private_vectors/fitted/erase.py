"""What ``PrivateEmbedding(erase=...)`` accepts: checked once at the edge (:func:`check_erase`)
and resolved once (:func:`resolve_erase`), so the erasure stage receives a resolved value.

``erase=`` takes

* a built-in attribute name (``"sex"``, ``"age_band"``): the built-in fitted with the default
  method, :data:`~private_vectors.fitted.erase.DEFAULT_METHOD` (chosen from the measured
  table by :func:`~private_vectors.fitted.measured.choose_method`);
* ``{"attribute": "sex", "method": "leace"}`` or ``ErasureSpec("sex", method="leace")``: a
  built-in with a method of its choice (:data:`~private_vectors.fitted.erase.BUILTIN_METHODS`
  ship), or a fitted folder whose method must be the one named;
* a folder saved by :meth:`~private_vectors.fitted.AttributeConcept.save`, an
  :class:`~private_vectors.fitted.AttributeConcept`, or the reference a stored configuration
  records (its method and content hash are checked when it is loaded).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import Described, InvalidParameterError, InvalidTypeError

__all__ = ["ErasureSpec", "check_erase", "resolve_erase"]

BUILTIN_ATTRIBUTES = ("sex", "age_band")
BUILTIN_METHODS = ("leace", "cluster-leace")
"""Methods shipped for each built-in attribute (``"leace"``: the folder itself; others: a subfolder)."""
DEFAULT_METHOD = "cluster-leace"
"""The method named by :func:`~private_vectors.fitted.measured.choose_method` (its default
parameters, ``n_clusters=16, n_iter=2``, are the measured ones)."""

_EXPECTED = ("a built-in attribute name ('sex', 'age_band'), {'attribute': ..., 'method': ...}, an ErasureSpec, "
             "a folder saved by AttributeConcept.save or an AttributeConcept")
_SPEC_KEYS = ("attribute", "method")


@dataclass(frozen=True)
class ErasureSpec:
    """An attribute to erase and, optionally, the erasure method.

    Args:
        attribute: a built-in attribute name (:data:`~private_vectors.fitted.erase.BUILTIN_ATTRIBUTES`)
            or a folder saved by :meth:`~private_vectors.fitted.AttributeConcept.save`.
        method: one of :data:`~private_vectors.fitted.erasure.ERASURE_METHODS`; for a built-in, one
            of the methods shipped for it; None: the built-in's default method, or the folder's own.
    """

    attribute: str
    method: str | None = None

    def __post_init__(self) -> None:
        from .erasure import ERASURE_METHODS

        if isinstance(self.attribute, os.PathLike):
            object.__setattr__(self, "attribute", os.fspath(self.attribute))
        if not isinstance(self.attribute, str) or not self.attribute.strip():
            raise InvalidTypeError("erase.attribute", "a built-in attribute name or a fitted folder", self.attribute)
        if self.method is None:
            return
        if not isinstance(self.method, str) or self.method not in ERASURE_METHODS:
            raise InvalidParameterError("erase.method", f"one of {', '.join(ERASURE_METHODS)} or None", self.method)
        if self.attribute in BUILTIN_ATTRIBUTES and self.method not in BUILTIN_METHODS:
            raise InvalidParameterError(
                "erase.method", f"a method shipped for the built-in {self.attribute!r}: "
                + ", ".join(repr(m) for m in BUILTIN_METHODS), Described(repr(self.method)),
                note=f"fit another method on your own labelled texts with fit_attribute(..., method={self.method!r})")


def _is_fitted_concept(value: Any) -> bool:
    """A fitted :class:`~private_vectors.fitted.attribute.AttributeConcept` (checked by what it does,
    so this module needs nothing from the one that fits and loads them)."""
    return callable(getattr(value, "reference", None)) and callable(getattr(value, "check_encoder", None))


def _is_reference(value: dict[str, Any]) -> bool:
    """A stored configuration's reference (``AttributeConcept.reference()``)."""
    return value.get("kind") == "attribute" and "type" in value


def check_erase(value: Any) -> Any:
    """``value`` checked for ``erase=``; a ``{"attribute", "method"}`` dict becomes an :class:`ErasureSpec`.

    Reads no artefact: a folder is loaded, and its method and hash checked, when the erasure
    stage is built. A name that is neither a built-in nor an existing folder is refused here.
    """
    if value is None or isinstance(value, ErasureSpec) or _is_fitted_concept(value):
        return value
    if isinstance(value, dict):
        if _is_reference(value):
            return value
        unknown = sorted(str(k) for k in value if k not in _SPEC_KEYS)
        if unknown or "attribute" not in value:
            raise InvalidParameterError("erase", "a dict with the key 'attribute' and optionally 'method'", value,
                                        note=f"unknown keys: {unknown}" if unknown else "")
        return ErasureSpec(value["attribute"], value.get("method"))
    if isinstance(value, (str, os.PathLike)):
        name = os.fspath(value)
        if name in BUILTIN_ATTRIBUTES or os.path.isdir(name):
            return value
        raise InvalidParameterError("erase", _EXPECTED, value,
                                    note="no built-in attribute has this name and no folder is there")
    raise InvalidTypeError("erase", _EXPECTED, value)


def resolve_erase(value: Any) -> Any:
    """A built-in name, or a spec without a method, gets the default method; anything else is kept."""
    if isinstance(value, str) and value in BUILTIN_ATTRIBUTES:
        return ErasureSpec(value, DEFAULT_METHOD)
    if isinstance(value, ErasureSpec) and value.method is None and value.attribute in BUILTIN_ATTRIBUTES:
        return ErasureSpec(value.attribute, DEFAULT_METHOD)
    return value
