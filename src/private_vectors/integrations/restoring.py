"""Restore steps for LangChain and LlamaIndex pipelines (the key holder's side of the store).

* :func:`restore_step`: a LangChain ``Runnable`` (``retriever | restore_step(embedding)``) that
  turns retrieved Documents into restored copies;
* :class:`RestoreTransformer`: the same as a LangChain ``BaseDocumentTransformer`` (for a
  ``DocumentCompressorPipeline`` or any code that takes document transformers);
* :class:`RestorePostprocessor`: a LlamaIndex node postprocessor;
* :func:`answer_step`: a LangChain ``Runnable`` mapping ``{"answer": str, "context": [Document]}``
  to the answer with the originals put back (:meth:`~private_vectors.restore.Restorer.restore_answer`).

Where the step sits decides who sees the real values. Placed between the retriever and the
model, the model receives the originals. To keep them from the model, give it the stored
(surrogate) context and restore its answer and the documents you show afterwards, as
``integrations/langchain_restore_rag.py`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidParameterError
from ..restore import Restorer, restorer_for

__all__ = ["RestorePostprocessor", "RestoreTransformer", "answer_step", "restore_step"]  # noqa: F822 (lazy)


def _check_missing(missing: str) -> str:
    if missing not in ("raise", "keep"):
        raise InvalidParameterError("missing", "'raise' or 'keep'", missing)
    return missing


def restore_step(embedding: Any = None, *, restorer: Restorer | None = None, missing: str = "raise") -> Any:
    """A LangChain ``Runnable``: retrieved Documents -> restored copies (record dropped).

    Args:
        embedding: the keyed PrivateEmbedding of the store (or pass ``restorer``).
        restorer: a :class:`~private_vectors.restore.Restorer`.
        missing: a Document without a restore record: ``"raise"`` or ``"keep"``.
    """
    from langchain_core.runnables import RunnableLambda

    r, miss = restorer_for(embedding, restorer), _check_missing(missing)
    return RunnableLambda(lambda docs: r.restore_documents(docs, missing=miss), name="restore_documents")


def answer_step(embedding: Any = None, *, restorer: Restorer | None = None, answer_key: str = "answer",
                context_key: str = "context") -> Any:
    """A LangChain ``Runnable``: ``{answer_key: str, context_key: [Document]}`` -> the restored answer (str)."""
    from langchain_core.runnables import RunnableLambda

    r = restorer_for(embedding, restorer)
    return RunnableLambda(lambda x: r.restore_answer(x[answer_key], x[context_key]), name="restore_answer")


try:  # optional: LangChain
    from langchain_core.documents import BaseDocumentTransformer as _Transformer
except ImportError:  # pragma: no cover
    _Transformer = object  # type: ignore[assignment,misc]


class RestoreTransformer(_Transformer):  # type: ignore[misc,valid-type]
    """LangChain document transformer that restores documents for the key holder.

    Args:
        embedding: the keyed PrivateEmbedding of the store (or pass ``restorer``).
        restorer: a :class:`~private_vectors.restore.Restorer`.
        missing: a Document without a restore record: ``"raise"`` or ``"keep"``.
    """

    def __init__(self, embedding: Any = None, *, restorer: Restorer | None = None, missing: str = "raise") -> None:
        self._restorer = restorer_for(embedding, restorer)
        self.missing = _check_missing(missing)

    def __repr__(self) -> str:
        return f"RestoreTransformer(missing={self.missing!r})"

    def transform_documents(self, documents: Sequence[Any], **kwargs: Any) -> list[Any]:
        """Restored copies of ``documents`` (see :meth:`Restorer.restore_documents`)."""
        return self._restorer.restore_documents(documents, missing=self.missing)

    async def atransform_documents(self, documents: Sequence[Any], **kwargs: Any) -> list[Any]:
        """Async variant (runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.transform_documents, documents)


def _postprocessor_class() -> Any:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from pydantic import PrivateAttr

    class RestorePostprocessor(BaseNodePostprocessor):
        """LlamaIndex node postprocessor that restores retrieved nodes for the key holder.

        In a query engine it runs before synthesis, so the model then reads the originals;
        to keep them from the model restore ``response.source_nodes`` and the answer afterwards.
        """

        missing: str = "raise"
        _restorer: Any = PrivateAttr()

        def __init__(self, embedding: Any = None, *, restorer: Restorer | None = None, missing: str = "raise",
                     **kwargs: Any) -> None:
            super().__init__(missing=_check_missing(missing), **kwargs)
            self._restorer = restorer_for(embedding, restorer)

        @classmethod
        def class_name(cls) -> str:
            return "PrivateVectorsRestorePostprocessor"

        def _postprocess_nodes(self, nodes: list[Any], query_bundle: Any = None) -> list[Any]:
            return self._restorer.restore_documents(nodes, missing=self.missing)

    return RestorePostprocessor


def __getattr__(name: str) -> Any:
    if name == "RestorePostprocessor":  # built on first use: llama-index is optional
        cls = _postprocessor_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
