"""Native Chroma, protected: ``from private_vectors.chroma import add_documents``.

Re-exports the user-facing calls of :mod:`private_vectors.integrations.chroma`::

    import chromadb
    from private_vectors import PrivateEmbedding
    from private_vectors.chroma import add_documents, create_collection, open_collection

    client = chromadb.PersistentClient(path="db")
    col = create_collection(client, "notes", PrivateEmbedding(concept="PII", eps=10, key=my_key))
    add_documents(col, ids=["n1"], documents=["Maria Lopez flew to Madrid."])
    # stores "<PERSON> flew to <LOCATION>." next to its perturbed vector

    col = open_collection(client, "notes", key=my_key)   # a new process: key= or PRIVATE_VECTORS_KEY
"""

from __future__ import annotations

from .integrations.chroma import (
    add_documents,
    check_collection,
    create_collection,
    load_query_index,
    open_collection,
    query_index_collection_name,
    save_query_index,
    scrub_index_files,
)
from .integrations.chroma_keyholder import delete, get, query

__all__ = ["add_documents", "check_collection", "create_collection", "delete", "get", "load_query_index",
           "open_collection", "query", "query_index_collection_name", "save_query_index", "scrub_index_files"]
