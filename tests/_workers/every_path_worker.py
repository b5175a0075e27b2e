"""Subprocess of tests/test_every_path.py: reopen a protected store in a new process and query it.

Usage::

    python every_path_worker.py PATH_KIND FOLDER param|env QUERY...

The key comes either as a parameter (read from ``PV_TEST_KEY``, passed as ``key=``; the
environment has no ``PRIVATE_VECTORS_KEY``) or from ``PRIVATE_VECTORS_KEY`` (no parameter).
Prints one JSON line: ``{"results": [[text, ...] per query]}``.
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

    from private_vectors.chroma import open_collection

    col = open_collection(chromadb.PersistentClient(path=folder), "native", key=_key(source))
    out = col.query(query_texts=queries, n_results=3, include=["documents"])
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


def faiss_index(folder: str, source: str, queries: list[str]) -> list[list[str]]:
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex.load(folder, key=_key(source))
    return [[d.text for d in index.search_documents(q, k=3)] for q in queries]


PATHS = {f.__name__: f for f in (chroma_native, chroma_dropin, faiss_dropin, llamaindex_chroma, llamaindex_default,
                                 faiss_index)}

if __name__ == "__main__":
    kind, folder, source, *qs = sys.argv[1:]
    print(json.dumps({"results": PATHS[kind](folder, source, qs)}))
