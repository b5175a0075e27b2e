"""The progress of an add: one tqdm bar counted in documents, shown when an add runs long.

Every path that adds documents (``PrivateEmbedding.embed_documents`` and the store helpers
built on it, the restore-record path of keyed stores, ``PrivateFaissIndex.add_texts``, the
LangChain vector cache) is one add, marked with :func:`counts_documents`. Its bar counts each
document once, when its vector is made; detection, which reads the whole batch before any
vector is made, shows as ``detecting N %`` beside the count. The bar appears only once the add
has run :data:`PROGRESS_DELAY` seconds (tqdm's ``delay``), so short adds print nothing, and it
is removed when the add ends. An add inside another (an adapter calling the pipeline) joins the
outer one's bar.

``PRIVATE_VECTORS_PROGRESS=0`` turns the bar off (also ``false``, ``no``, ``off``); tqdm's own
``TQDM_DISABLE=1`` does too.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["PROGRESS_DELAY", "PROGRESS_ENV", "advance", "counts_documents", "progress_enabled"]

PROGRESS_ENV = "PRIVATE_VECTORS_PROGRESS"
PROGRESS_DELAY = 3.0
"""Seconds an add runs before its bar appears."""
_OFF = ("0", "false", "no", "off")
_ACTIVE: contextvars.ContextVar[_Bar | None] = contextvars.ContextVar("private_vectors_add_progress", default=None)
# (one bar per add, per thread and task: an add inside another joins it)

F = TypeVar("F", bound=Callable[..., Any])


def progress_enabled() -> bool:
    """Whether adds show a bar: not when :data:`PROGRESS_ENV` is ``0``/``false``/``no``/``off``."""
    return os.environ.get(PROGRESS_ENV, "").strip().lower() not in _OFF


class _Bar:
    """A tqdm bar over ``total`` documents: ``advance`` counts documents whose vectors are made,
    ``detected`` shows the share of the batch read by detection."""

    def __init__(self, total: int) -> None:
        from tqdm.auto import tqdm

        self.tqdm = tqdm(total=total, desc="private_vectors", unit="doc", delay=PROGRESS_DELAY, leave=False)
        self.phase = ""

    def detected(self, fraction: float) -> None:
        self._show(f"detecting {min(max(fraction, 0.0), 1.0):.0%}")
        self.tqdm.update(0)  # (displays once the delay has passed)

    def advance(self, count: int) -> None:
        self._show("encoding")
        self.tqdm.update(min(count, self.tqdm.total - self.tqdm.n))
        if self.tqdm.n >= self.tqdm.total and self.tqdm.format_dict["elapsed"] >= self.tqdm.delay:
            self.tqdm.refresh()  # a shown bar draws its last count, even inside tqdm's mininterval

    def _show(self, phase: str) -> None:
        if phase != self.phase:
            self.phase = phase
            self.tqdm.set_postfix_str(phase, refresh=False)

    def close(self) -> None:
        self.tqdm.close()


@contextlib.contextmanager
def document_progress(total: int) -> Iterator[None]:
    """The bar of one add of ``total`` documents (nothing when one is running, when there is
    nothing to add or when the bar is switched off)."""
    if _ACTIVE.get() is not None or total <= 0 or not progress_enabled():
        yield
        return
    from .text.detection import detection_progress

    bar = _Bar(total)
    token = _ACTIVE.set(bar)
    try:
        with detection_progress(bar.detected):
            yield
    finally:
        _ACTIVE.reset(token)
        bar.close()


def advance(count: int) -> None:
    """Count ``count`` documents of the running add as done (no add running: nothing)."""
    bar = _ACTIVE.get()
    if bar is not None and count > 0:
        bar.advance(count)


def counts_documents(parameter: str) -> Callable[[F], F]:
    """Decorate a function that adds the documents of its argument ``parameter`` as one add:
    its bar counts them (:func:`document_progress`). An argument without a length (refused by
    the function's own checks) adds no bar."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _ACTIVE.get() is not None or not progress_enabled():
                return func(*args, **kwargs)
            try:
                total = len(signature.bind(*args, **kwargs).arguments[parameter])
            except (TypeError, KeyError):
                return func(*args, **kwargs)
            with document_progress(total):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
