"""LangChain's standard test suites (langchain-tests) on PrivateEmbedding and the drop-in Chroma.

The async tests of the suites are bare ``async def``: pyproject.toml sets pytest-asyncio's
``asyncio_mode = "auto"``. No test here skips or xfails on its own account.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

pytest.importorskip("langchain_tests")
pytest.importorskip("langchain_chroma")

import chromadb
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import (
    EmbeddingsIntegrationTests,
    VectorStoreIntegrationTests,
)
from langchain_tests.unit_tests import EmbeddingsUnitTests

from private_vectors import PrivateEmbedding
from private_vectors.embedding import KEY_ENV
from private_vectors.langchain import Chroma


class _PrivateEmbeddingParams:
    """What both embedding suites construct: PrivateEmbedding on the fake encoder at ε = 10."""

    @property
    def embeddings_class(self) -> type[PrivateEmbedding]:
        return PrivateEmbedding

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"model": "fake", "eps": 10}


class TestPrivateEmbeddingUnit(_PrivateEmbeddingParams, EmbeddingsUnitTests):
    @property
    def init_from_env_params(self) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        # the secret for keyed noise comes from the environment; only its source is visible
        return {KEY_ENV: "standard-suite-key"}, {"model": "fake"}, {"key_source": "env"}


class TestPrivateEmbeddingIntegration(_PrivateEmbeddingParams, EmbeddingsIntegrationTests):
    """The integration suite on the same construction."""


class TestDropInChromaWithStandardEmbeddings(VectorStoreIntegrationTests):
    """The drop-in store's plumbing with the suite's own deterministic embeddings.

    The suite checks that ``page_content`` comes back, so the store keeps it
    (``store_raw_text=True``); the default, text-free store is tested in test_langchain_dropin.py.
    """

    @pytest.fixture
    def vectorstore(self) -> Generator[VectorStore, None, None]:  # type: ignore[override]
        client = chromadb.EphemeralClient()
        store = Chroma(client=client, collection_name="standard", embedding_function=self.get_embeddings(),
                       store_raw_text=True)
        try:
            yield store
        finally:
            store.delete_collection()


class TestDropInChromaWithPrivateEmbedding(VectorStoreIntegrationTests):
    """The same suite through a PrivateEmbedding (no noise, so the suite's exact answers hold):
    config recorded, collection in the function's space."""

    @pytest.fixture
    def vectorstore(self) -> Generator[VectorStore, None, None]:  # type: ignore[override]
        client = chromadb.EphemeralClient()
        pe = PrivateEmbedding(model="fake", mechanism="none")
        store = Chroma(client=client, collection_name="standard-private", embedding_function=pe,
                       store_raw_text=True)
        assert store._collection.configuration_json["embedding_function"]["name"] == "private_vectors"
        try:
            yield store
        finally:
            store.delete_collection()
