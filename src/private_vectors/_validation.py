"""Shared input checks. Each raises the package's errors with parameter, expectation and value."""

from __future__ import annotations

import math
import numbers
import unicodedata
from collections.abc import Mapping, Set
from typing import Any

import numpy as np

from .errors import Described, InvalidParameterError, InvalidTypeError

__all__ = [
    "all_finite",
    "as_float_matrix",
    "check_choice",
    "check_finite_rows",
    "check_int",
    "check_non_negative_finite",
    "check_positive_finite",
    "check_probability",
    "check_stage_output",
    "check_texts",
    "text_list",
]


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else a clear error naming ``name``."""
    if not isinstance(value, str):
        raise InvalidTypeError(name, f"one of {choices}", value)
    if value not in choices:
        raise InvalidParameterError(name, f"one of {choices}", value)
    return value


def check_positive_finite(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float after checking it is a real number > 0 (and finite unless allowed)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(name, "a real number > 0", value)
    out = float(value)
    if math.isnan(out) or out <= 0 or (math.isinf(out) and not allow_inf):
        expected = "a number > 0" + ("" if allow_inf else " and finite")
        raise InvalidParameterError(name, expected, value)
    return out


def check_non_negative_finite(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking it is a finite real number ≥ 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(name, "a finite number >= 0", value)
    out = float(value)
    if not (math.isfinite(out) and out >= 0):
        raise InvalidParameterError(name, "a finite number >= 0", value)
    return out


def check_probability(value: Any, name: str, *, open_interval: bool = True) -> float:
    """Return ``value`` as a float in (0, 1) (or [0, 1] when ``open_interval`` is False)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(name, "a real number in (0, 1)", value)
    out = float(value)
    ok = (0 < out < 1) if open_interval else (0 <= out <= 1)
    if not ok or math.isnan(out):
        raise InvalidParameterError(name, "a number in (0, 1)" if open_interval else "a number in [0, 1]", value)
    return out


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int after checking its type and lower bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(name, "an integer", value)
    out = int(value)
    if minimum is not None and out < minimum:
        raise InvalidParameterError(name, f"an integer >= {minimum}", value)
    return out


def as_float_matrix(
    X: Any, name: str = "X", *, dim: int | None = None, dtype: Any = np.float64, check_finite: bool = True,
    copy: bool = True,
) -> tuple[np.ndarray, bool]:
    """Convert an (n,) or (m, n) array-like of finite reals to a float (m, n) matrix (a copy).

    Args:
        X: the array-like.
        name: the parameter named in errors.
        dim: the dimension n required, if any.
        dtype: the output's float type.
        check_finite: refuse NaN and inf (default). A caller whose output is non-finite whenever
            its input is (e.g. input plus finite noise) may check its output instead, once.
        copy: return a copy in ``dtype`` (default). False: a float32 or float64 input comes back
            as it is (a 2-D view, read-only to the caller by contract); others are converted.

    Returns:
        The matrix and whether the input was one vector (so callers can squeeze back).
    """
    if isinstance(X, (str, bytes)) or X is None:
        raise InvalidTypeError(name, "a numeric array of shape (n,) or (m, n)", X)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and other oddities
        raise InvalidTypeError(name, "a numeric array of shape (n,) or (m, n)", X) from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InvalidTypeError(name, "a numeric array of shape (n,) or (m, n)", X)
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise InvalidTypeError(name, "a real-valued array", X)
    if arr.ndim not in (1, 2) or arr.shape[-1] == 0:
        raise InvalidParameterError(name, "an array of shape (n,) or (m, n) with n >= 1", X)
    single = arr.ndim == 1
    if copy or arr.dtype not in (np.float32, np.float64):
        mat = np.array(arr, dtype=dtype, ndmin=2, copy=True)
    else:
        mat = arr.reshape(1, -1) if single else arr
    if dim is not None and mat.shape[1] != dim:
        raise InvalidParameterError(name, f"vectors of dimension {dim}", X, note=f"got dimension {mat.shape[1]}")
    if check_finite:
        check_finite_rows(mat, name, X)
    return mat, single


def check_finite_rows(mat: np.ndarray, name: str, value: Any) -> None:
    """Refuse a float (m, n) matrix holding NaN or inf, naming the first bad row.

    One reduction decides the common case without a temporary the size of ``mat``: a sum is
    finite when every element is (NaN and inf propagate); a finite sum that overflowed is
    re-checked element by element, so a huge finite matrix is never refused.
    """
    if all_finite(mat):
        return
    bad_rows = np.flatnonzero(~np.isfinite(mat).all(axis=1))
    raise InvalidParameterError(name, "finite values (no NaN or inf)", value,
                                note=f"{bad_rows.size} row(s) contain NaN or inf, "
                                f"the first is row {int(bad_rows[0])}")


def all_finite(arr: np.ndarray) -> bool:
    """Whether every element of a float array is finite: one sum (NaN and inf propagate through
    it), element by element only when that sum is not finite (NaN/inf, or an overflow)."""
    with np.errstate(all="ignore"):
        if arr.size == 0 or np.isfinite(np.add.reduce(arr, axis=None)):
            return True
    return bool(np.isfinite(arr).all())


def check_texts(texts: Any, name: str = "texts", *, allow_empty_batch: bool = True) -> list[str]:
    """Check a batch of documents: a list/tuple of non-empty strings.

    Refused, naming the item: a lone str/bytes, a mapping or set (no stable order of texts),
    non-str items, blank texts (whitespace and zero-width/format characters only, e.g. U+200B)
    and texts that cannot be encoded as UTF-8 (a lone surrogate).
    """
    if isinstance(texts, (str, bytes)) or texts is None:
        raise InvalidTypeError(name, "a list of strings", texts, note="wrap a single text in a list")
    if isinstance(texts, (Mapping, Set)):
        raise InvalidTypeError(name, "a list of strings", Described(f"<{type(texts).__name__}>"),
                               note="pass list(d.values()) explicitly: a mapping or set has no batch order")
    try:
        items = list(texts)
    except TypeError as exc:
        raise InvalidTypeError(name, "a list of strings", texts) from exc
    if not items and not allow_empty_batch:
        raise InvalidParameterError(name, "at least one text", texts)
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise InvalidTypeError(f"{name}[{i}]", "a str", t)
        stripped = t.strip()
        if not stripped:
            raise InvalidParameterError(f"{name}[{i}]", "a non-empty, non-blank string", t)
        if not t.isascii():
            _check_unicode_text(t, stripped, f"{name}[{i}]")
    return items


def _check_unicode_text(text: str, stripped: str, name: str) -> None:
    if all(c.isspace() or unicodedata.category(c) == "Cf" for c in stripped):
        raise InvalidParameterError(name, "a string with visible characters",
                                    Described(f"<{len(text)} whitespace/zero-width characters>"),
                                    note="zero-width and format characters (U+200B, U+FEFF, ...) do not count")
    bad = None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.start
    if bad is not None:  # raised outside the except block: the text is not chained into the error
        raise InvalidParameterError(name, "a string that encodes as UTF-8",
                                    Described(f"<a str with a lone surrogate character at position {bad}>"),
                                    note="decode bytes with errors='replace' or remove the surrogate")


def text_list(value: Any, name: str) -> list[str]:
    """``check_texts`` for a parameter that takes a list: a lone ``str`` is refused by name."""
    if isinstance(value, str):
        raise InvalidTypeError(name, "a list of strings", value, note="wrap a single text in a list")
    return check_texts(value, name)


def check_stage_output(out: Any, items: list[str], stage: str) -> list[str]:
    """A text stage's output, refused unless it is one str per input (nothing is embedded then)."""
    if not isinstance(out, list) or len(out) != len(items) or not all(isinstance(t, str) for t in out):
        raise InvalidParameterError(stage, f"a list of {len(items)} strings", out,
                                    note="the text stage failed; nothing was embedded")
    return out
