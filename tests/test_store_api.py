"""The store helpers name the embedding alike (``embedding``); the old ``embedding_function=`` of
``open_collection`` and ``check_collection`` still works, with a DeprecationWarning."""

from __future__ import annotations

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError

chromadb = pytest.importorskip("chromadb")


@pytest.fixture
def written(tmp_path):
    from private_vectors.chroma import add_documents, create_collection

    ef = PrivateEmbedding(model="fake:16", concept="PII", eps=10, random_state=0)
    client = chromadb.PersistentClient(path=str(tmp_path))
    add_documents(create_collection(client, "notes", ef), ids=["a"], documents=["Maria Lopez flew to Madrid."])
    return client, ef


def test_open_and_check_collection_take_embedding(written):
    from private_vectors.chroma import check_collection, open_collection

    client, ef = written
    col = open_collection(client, "notes", embedding=ef)
    check_collection(col, embedding=ef)
    assert open_collection(client, "notes", ef).name == "notes"  # positional, as before


def test_the_old_name_warns_and_still_works(written):
    from private_vectors.chroma import check_collection, open_collection

    client, ef = written
    with pytest.warns(DeprecationWarning, match="embedding_function"):
        col = open_collection(client, "notes", embedding_function=ef)
    with pytest.warns(DeprecationWarning, match="embedding_function"):
        check_collection(col, embedding_function=ef)
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidParameterError, match="embedding_function"):
        open_collection(client, "notes", ef, embedding_function=ef)


def test_every_store_helper_names_the_embedding_alike():
    import inspect

    from private_vectors.chroma import (
        check_collection,
        create_collection,
        load_query_index,
        open_collection,
    )
    from private_vectors.integrations.faiss import PrivateFaissIndex, build_index

    for fn in (create_collection, open_collection, check_collection, load_query_index, build_index,
               PrivateFaissIndex.load):
        params = inspect.signature(fn).parameters
        assert "embedding" in params, fn.__qualname__
