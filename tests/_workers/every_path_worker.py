"""Subprocess of tests/test_every_path.py: reopen a protected store in a new process and query it.

Usage::

    python every_path_worker.py PATH_KIND FOLDER param|env QUERY...

The key comes either as a parameter (read from ``PV_TEST_KEY``, passed as ``key=``; the
environment has no ``PRIVATE_VECTORS_KEY``) or from ``PRIVATE_VECTORS_KEY`` (no parameter).
Prints one JSON line: ``{"results": [[text, ...] per query]}``, plus, for the toolchain paths,
what re-running the write in this process did (``PV_TEST_INPUTS``: the documents, as JSON).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any

warnings.simplefilter("ignore")


def _key(source: str) -> Any:
    return os.environ["PV_TEST_KEY"] if source == "param" else None


def chroma_native(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    import chromadb

    from private_vectors.chroma import open_collection, query

    col = open_collection(chromadb.PersistentClient(path=folder), "native", key=_key(source))
    out = query(col, queries, n_results=3)  # the key holder's read (a sealed collection's documents are markers)
    return [list(docs) for docs in out["documents"]]


def chroma_dropin(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    from private_vectors.langchain import Chroma

    store = Chroma(collection_name="dropin", persist_directory=folder, key=_key(source))
    return [[d.page_content for d in store.similarity_search(q, k=3)] for q in queries]


def faiss_dropin(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    from private_vectors.langchain import FAISS

    store = FAISS.load_local(folder, key=_key(source))
    return [[d.page_content for d in store.similarity_search(q, k=3)] for q in queries]


def llamaindex_chroma(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    import chromadb

    from private_vectors.chroma import open_collection
    from private_vectors.llamaindex import index_from_collection

    col = open_collection(chromadb.PersistentClient(path=folder), "llama", key=_key(source))
    retriever = index_from_collection(col).as_retriever(similarity_top_k=3)
    return [[n.get_content() for n in retriever.retrieve(q)] for q in queries]


def llamaindex_default(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    from private_vectors.llamaindex import load_index

    retriever = load_index(folder, key=_key(source)).as_retriever(similarity_top_k=3)
    return [[n.get_content() for n in retriever.retrieve(q)] for q in queries]


def _inputs() -> dict[str, Any]:
    with open(os.environ["PV_TEST_INPUTS"], encoding="utf-8") as f:
        return json.load(f)


def llamaindex_pipeline(folder: str, source: str, queries: list[str]) -> dict[str, Any]:
    """Query the collection, then run the persisted pipeline again over the same documents:
    the keyed document hashes match, so nothing is re-ingested."""
    import chromadb
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore

    from private_vectors.chroma import open_collection
    from private_vectors.llamaindex import (
        PrivateIngestionPipeline,
        PrivateLlamaEmbedding,
        chroma_vector_store,
        index_from_collection,
    )

    col = open_collection(chromadb.PersistentClient(path=os.path.join(folder, "chroma")), "pipeline",
                          key=_key(source))
    retriever = index_from_collection(col).as_retriever(similarity_top_k=3)
    results = [[n.get_content() for n in retriever.retrieve(q)] for q in queries]
    ef = col._embedding_function
    pipeline = PrivateIngestionPipeline(transformations=[SentenceSplitter(), PrivateLlamaEmbedding(embedding=ef)],
                                        docstore=SimpleDocumentStore(), vector_store=chroma_vector_store(col))
    pipeline.load(os.path.join(folder, "pipeline"))
    data = _inputs()
    docs = [Document(text=t, metadata=m, id_=i) for i, t, m in zip(data["ids"], data["texts"], data["metadatas"], strict=True)]
    return {"results": results, "rerun_nodes": len(pipeline.run(documents=docs))}


def llamaindex_from_documents(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    return llamaindex_default(folder, source, queries)


def langchain_cache(folder: str, source: str, queries: list[str]) -> dict[str, Any]:
    """Query the store, then read the cache through a new CacheBackedEmbeddings: every text hits."""
    from langchain_classic.storage import LocalFileStore

    from private_vectors.langchain import CacheBackedEmbeddings, Chroma

    store = Chroma(collection_name="cached", persist_directory=os.path.join(folder, "chroma"), key=_key(source))
    results = [[d.page_content for d in store.similarity_search(q, k=3)] for q in queries]
    cached = CacheBackedEmbeddings.from_bytes_store(store.embeddings, LocalFileStore(os.path.join(folder, "cache")))
    hits = cached.document_embedding_store.mget(_inputs()["texts"])
    return {"results": results, "cache_hits": sum(v is not None for v in hits)}


def langchain_index(folder: str, source: str, queries: list[str]) -> dict[str, Any]:
    """Query the store, then index the same documents again: the keyed record keys match, so every
    document is skipped."""
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.documents import Document

    from private_vectors.langchain import Chroma, index

    store = Chroma(collection_name="indexed", persist_directory=os.path.join(folder, "chroma"), key=_key(source))
    results = [[d.page_content for d in store.similarity_search(q, k=3)] for q in queries]
    records = SQLRecordManager("chroma/indexed", db_url=f"sqlite:///{os.path.join(folder, 'records.sqlite')}")
    data = _inputs()
    docs = [Document(page_content=t, metadata=m) for t, m in zip(data["texts"], data["metadatas"], strict=True)]
    done = index(docs, records, store, cleanup="incremental", source_id_key="file_path")
    return {"results": results, "rerun_skipped": done["num_skipped"]}


def langchain_parent(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    from langchain_classic.storage import LocalFileStore, create_kv_docstore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from private_vectors.langchain import Chroma, ParentDocumentRetriever

    store = Chroma(collection_name="children", persist_directory=os.path.join(folder, "chroma"), key=_key(source))
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=create_kv_docstore(
        LocalFileStore(os.path.join(folder, "parents"))), child_splitter=RecursiveCharacterTextSplitter())
    return [[d.page_content for d in retriever.invoke(q)] for q in queries]


def faiss_index(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex.load(folder, key=_key(source))
    return [[d.text for d in index.search_documents(q, k=3)] for q in queries]


PATHS = {f.__name__: f for f in (chroma_native, chroma_dropin, faiss_dropin, llamaindex_chroma, llamaindex_default,
                                 faiss_index, llamaindex_pipeline, llamaindex_from_documents, langchain_cache,
                                 langchain_index, langchain_parent)}

if __name__ == "__main__":
    kind, folder, source, *qs = sys.argv[1:]
    answer = PATHS[kind](folder, source, qs)
    print(json.dumps(answer if isinstance(answer, dict) else {"results": answer}))
