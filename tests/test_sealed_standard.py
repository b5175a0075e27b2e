"""LangChain's standard vector-store suite (langchain-tests) on a sealed FAISS drop-in.

A keyed PrivateEmbedding without noise (``mechanism="none"``, so the suite's exact answers
hold) and ``store_raw_text=True`` (the suite checks that ``page_content`` comes back): every
document is kept only inside its sealed record, and each read of the suite opens the records
and re-ranks by the exact vectors.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator

import pytest

pytest.importorskip("langchain_tests")
pytest.importorskip("langchain_community")
pytest.importorskip("faiss")

from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from private_vectors import PrivateEmbedding
from private_vectors.langchain import FAISS


class TestSealedFaissDropIn(VectorStoreIntegrationTests):
    """The suite through a sealed store (markers and records in the docstore)."""

    @property
    def has_async(self) -> bool:
        return True

    @pytest.fixture
    def vectorstore(self) -> Generator[VectorStore, None, None]:  # type: ignore[override]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pe = PrivateEmbedding(model="fake", mechanism="none", key="standard-sealed-suite-key", sanitize=None)
        store = FAISS.empty(pe, store_raw_text=True)
        assert store.sealed
        yield store

    # langchain_community's FAISS refuses an id it holds on add and an id it lacks on delete (so
    # do the unsealed drop-in and the plain store): the suite's upsert and missing-delete tests
    # fail on that, strictly; the tests after them check the refusals and the delete-then-add form.
    _UPSTREAM = "langchain_community's FAISS refuses a held id on add and a missing id on delete"

    @pytest.mark.xfail(reason=_UPSTREAM, strict=True)
    def test_delete_missing_content(self, vectorstore: VectorStore) -> None:  # type: ignore[override]
        super().test_delete_missing_content(vectorstore)

    @pytest.mark.xfail(reason=_UPSTREAM, strict=True)
    async def test_delete_missing_content_async(self, vectorstore: VectorStore) -> None:  # type: ignore[override]
        await super().test_delete_missing_content_async(vectorstore)

    @pytest.mark.xfail(reason=_UPSTREAM, strict=True)
    def test_add_documents_with_ids_is_idempotent(self, vectorstore: VectorStore) -> None:  # type: ignore[override]
        super().test_add_documents_with_ids_is_idempotent(vectorstore)

    @pytest.mark.xfail(reason=_UPSTREAM, strict=True)
    async def test_add_documents_with_ids_is_idempotent_async(self, vectorstore: VectorStore) -> None:  # type: ignore[override]
        await super().test_add_documents_with_ids_is_idempotent_async(vectorstore)

    @pytest.mark.xfail(reason=_UPSTREAM, strict=True)
    def test_add_documents_by_id_with_mutation(self, vectorstore: VectorStore) -> None:  # type: ignore[override]
        super().test_add_documents_by_id_with_mutation(vectorstore)

    @pytest.mark.xfail(reason=_UPSTREAM, strict=True)
    async def test_add_documents_by_id_with_mutation_async(self, vectorstore: VectorStore) -> None:  # type: ignore[override]
        await super().test_add_documents_by_id_with_mutation_async(vectorstore)

    def test_sealed_delete_of_a_missing_id_is_refused(self, vectorstore: VectorStore) -> None:
        with pytest.raises(ValueError, match="do not exist"):
            vectorstore.delete(["1"])

    async def test_sealed_delete_of_a_missing_id_is_refused_async(self, vectorstore: VectorStore) -> None:
        with pytest.raises(ValueError, match="do not exist"):
            await vectorstore.adelete(["1"])

    def test_sealed_add_of_a_held_id_is_refused(self, vectorstore: VectorStore) -> None:
        from langchain_core.documents import Document

        from private_vectors.errors import InvalidParameterError

        docs = [Document(page_content="foo", metadata={"id": 1}), Document(page_content="bar", metadata={"id": 2})]
        vectorstore.add_documents(docs, ids=["1", "2"])
        with pytest.raises(InvalidParameterError, match="ids"):
            vectorstore.add_documents(docs, ids=["1", "2"])
        assert [d.page_content for d in vectorstore.get_by_ids(["1", "2"])] == ["foo", "bar"]

    async def test_sealed_add_of_a_held_id_is_refused_async(self, vectorstore: VectorStore) -> None:
        from langchain_core.documents import Document

        from private_vectors.errors import InvalidParameterError

        docs = [Document(page_content="foo", metadata={"id": 1})]
        await vectorstore.aadd_documents(docs, ids=["1"])
        with pytest.raises(InvalidParameterError, match="ids"):
            await vectorstore.aadd_documents(docs, ids=["1"])

    def test_sealed_delete_then_add_replaces(self, vectorstore: VectorStore) -> None:
        from langchain_core.documents import Document

        vectorstore.add_documents([Document(page_content="foo", metadata={"id": 1})], ids=["1"])
        vectorstore.delete(["1"])  # FAISS: a changed document is deleted and added again
        vectorstore.add_documents([Document(page_content="new foo", metadata={"id": 1, "some_other_field": "foo"})],
                                  ids=["1"])
        got = vectorstore.get_by_ids(["1"])
        assert [d.page_content for d in got] == ["new foo"] and got[0].metadata["some_other_field"] == "foo"

    async def test_sealed_delete_then_add_replaces_async(self, vectorstore: VectorStore) -> None:
        from langchain_core.documents import Document

        await vectorstore.aadd_documents([Document(page_content="foo", metadata={"id": 1})], ids=["1"])
        await vectorstore.adelete(["1"])
        await vectorstore.aadd_documents([Document(page_content="new foo", metadata={"id": 1})], ids=["1"])
        assert [d.page_content for d in await vectorstore.aget_by_ids(["1"])] == ["new foo"]
