"""The runtime guard: a text stage protects nothing when the store keeps the raw text.

A :class:`~private_vectors.PrivateEmbedding` with a text stage sanitizes what it *embeds*; a
store that was handed the raw documents (``collection.add(documents=...)`` in Chroma,
``langchain_chroma.Chroma.add_texts``, ``langchain_community`` FAISS) still writes them to
disk next to the protected vectors. The library cannot stop those stores from keeping what
they were given, so it says so: the first time such a function embeds documents for a store
(Chroma, LangChain or LlamaIndex code on the call stack, :func:`store_on_stack`) outside the
library's own store paths it emits one :class:`~private_vectors.errors.PrivacyWarning` per
instance naming the protected call. Embedding documents directly (``embed_documents``, a cache
that keeps no text) involves no store and does not warn.

The library's own paths (``private_vectors.chroma.add_documents``, the drop-in stores, the
LlamaIndex components, ``PrivateFaissIndex``) sanitize the text themselves and run inside
:func:`protected_path`, so they never warn. To silence the warning deliberately (you store the
raw text on purpose, or the store keeps no text), use the standard filter::

    import warnings
    from private_vectors.errors import PrivacyWarning
    warnings.filterwarnings("ignore", category=PrivacyWarning, message="the store keeps the raw text")
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

__all__ = ["RAW_TEXT_MESSAGE", "on_protected_path", "protected_path", "store_on_stack"]

T = TypeVar("T")

STORE_PACKAGES = ("chromadb", "langchain", "llama_index")
"""Packages whose code, up the call stack, means a store will keep what is embedded: ``chromadb``,
``llama_index`` and every ``langchain*`` distribution (``langchain_chroma``, ``langchain_community``…)."""
_NOT_STORES = (".embeddings", ".callbacks", ".tracers", "instrumentation")
"""Their parts that keep no text (embedding wrappers such as LangChain's ``CacheBackedEmbeddings``
and LlamaIndex's ``BaseEmbedding``, callbacks, tracing): a frame of theirs is looked through."""
_STACK_DEPTH = 64

_PROTECTED: contextvars.ContextVar[bool] = contextvars.ContextVar("private_vectors_protected_path", default=False)
# A ContextVar because the function cannot tell a protected adapter's store calling it from a plain
# store that keeps the raw text, except by the context of the call (per thread and per task):
# tests/test_process_state.py::test_the_protected_path_keeps_an_adapter_silent_where_its_store_embeds.

RAW_TEXT_MESSAGE = (
    "the store keeps the raw text: this PrivateEmbedding sanitizes what it embeds, but a store that was given "
    "the raw documents (Chroma's collection.add(documents=...), langchain_chroma.Chroma, langchain_community "
    "FAISS) writes them to disk beside the vectors. Use the protected call for your store instead: "
    "private_vectors.chroma.add_documents(collection, ...) for native Chroma, private_vectors.langchain.Chroma "
    "or private_vectors.langchain.FAISS for LangChain, private_vectors.llamaindex.SanitizeNodes for LlamaIndex, "
    "PrivateFaissIndex for FAISS."
)


@contextmanager
def holding(var: contextvars.ContextVar[T], value: T) -> Iterator[None]:
    """``var`` set to ``value`` while the block runs, reset after it (an exception too): the one
    way the package scopes a ContextVar of the state table to a call."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


@contextmanager
def protected_path() -> Iterator[None]:
    """Mark the calls made inside as the library's own store path (no raw-text warning)."""
    with holding(_PROTECTED, True):
        yield


def on_protected_path() -> bool:
    """Whether the current call runs inside :func:`protected_path`."""
    return _PROTECTED.get()


def store_on_stack(frame: FrameType | None = None) -> bool:
    """Whether a store's code is among the callers of ``frame`` (default: the caller's): a frame
    of Chroma, LangChain or LlamaIndex (:data:`STORE_PACKAGES`) other than their embedding
    wrappers. An embedding function cannot see which store calls it otherwise; the nearest
    :data:`_STACK_DEPTH` frames are read (an async caller's awaiting frames included)."""
    frame = sys._getframe(1) if frame is None else frame
    for _ in range(_STACK_DEPTH):
        if frame is None:
            return False
        name = str(frame.f_globals.get("__name__", ""))
        top = name.partition(".")[0]
        if (top in STORE_PACKAGES or top.startswith("langchain")) and not any(p in name for p in _NOT_STORES):
            return True
        frame = frame.f_back
    return False
