"""The runtime guard: a text stage protects nothing when the store keeps the raw text.

A :class:`~private_vectors.PrivateEmbedding` with a text stage sanitizes what it *embeds*; a
store that was handed the raw documents (``collection.add(documents=...)`` in Chroma,
``langchain_chroma.Chroma.add_texts``, ``langchain_community`` FAISS) still writes them to
disk next to the protected vectors. The library cannot stop those stores from keeping what
they were given, so it says so: the first time such a function embeds documents outside the
library's own store paths it emits one :class:`~private_vectors.errors.PrivacyWarning` per
instance naming the protected call.

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
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RAW_TEXT_MESSAGE", "on_protected_path", "protected_path"]

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
def protected_path() -> Iterator[None]:
    """Mark the calls made inside as the library's own store path (no raw-text warning)."""
    token = _PROTECTED.set(True)
    try:
        yield
    finally:
        _PROTECTED.reset(token)


def on_protected_path() -> bool:
    """Whether the current call runs inside :func:`protected_path`."""
    return _PROTECTED.get()
