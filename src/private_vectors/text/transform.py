"""LangChain's document-transformer interface for the text stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["DocumentTransformer"]


class DocumentTransformer:
    """``transform_documents`` / ``atransform_documents`` of LangChain's ``BaseDocumentTransformer``
    for a class with ``apply(texts) -> texts``."""

    def apply(self, texts: Sequence[str]) -> list[str]:  # pragma: no cover - provided by the class
        raise NotImplementedError

    def transform_documents(self, documents: Sequence[Any], **kwargs: Any) -> list[Any]:
        """New Documents with sanitized ``page_content``. Metadata is copied unchanged (it is not
        sanitized: keep PII out of metadata)."""
        from langchain_core.documents import Document

        docs = list(documents)
        texts = self.apply([d.page_content for d in docs])
        return [Document(page_content=t, metadata=dict(d.metadata), id=getattr(d, "id", None))
                for d, t in zip(docs, texts, strict=True)]

    async def atransform_documents(self, documents: Sequence[Any], **kwargs: Any) -> list[Any]:
        """Async variant of :meth:`transform_documents` (runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.transform_documents, documents, **kwargs)
