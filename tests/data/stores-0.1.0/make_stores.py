"""Write the version 0.1.0 fixture stores in this folder (run once, with private_vectors 0.1.0).

These stores are the upgrade fixtures: ``tests/test_store_compat.py`` copies each one to a
temporary folder, reopens it with the current API and checks that it answers the recorded
query with the recorded ids. They must therefore stay what 0.1.0 wrote: do **not** regenerate
them with a later version (that would test nothing). The script is kept to show exactly how
they were made::

    PYTHONPATH=src python tests/data/stores-0.1.0/make_stores.py

Four stores, ten short generated documents each, the packaged default encoder, eps 10:

* ``chroma-redact``: a native Chroma persistent folder written with
  ``integrations.chroma.add_documents`` (``concept="PII"``: redact, no key).
* ``chroma-surrogate-keyed``: the same with a keyed surrogate text stage and keyed noise
  (``sanitize="surrogate"``, key :data:`KEY`, a test constant).
* ``langchain``: the LangChain drop-in ``private_vectors.langchain.chroma_store``.
* ``faiss``: a saved :class:`~private_vectors.integrations.faiss.PrivateFaissIndex`.

``expected.json`` records, per store, its query and the top-3 ids it returned when written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KEY = "fixture-key-0123456789abcdef"
"""The test key of the keyed store (a fixture constant, not a secret)."""
COLLECTION = "notes"

DOCUMENTS = [
    "Maria Lopez flew to Madrid on Monday for the sales meeting.",
    "John Smith called about his overdue invoice from March.",
    "The quarterly revenue rose by four percent in Europe.",
    "Dr. Anna Weber prescribed antibiotics for the chest infection.",
    "Please email Peter Novak at peter.novak@example.com about the contract.",
    "Snow closed the mountain trail near Innsbruck all week.",
    "Lisa Chen moved to 42 Harbour Street, Boston last spring.",
    "The new espresso machine in the kitchen is broken again.",
    "Tom Becker's flight to Tokyo was delayed by the typhoon.",
    "Our support team answers tickets within two business days.",
]
IDS = [f"doc-{i:02d}" for i in range(len(DOCUMENTS))]
QUERIES = {
    "chroma-redact": "flight to Spain for a sales meeting",
    "chroma-surrogate-keyed": "doctor prescribed medicine for an infection",
    "langchain": "weather closed a hiking path in the Alps",
    "faiss": "unpaid bill phone call",
}


def _embedding(**kwargs: Any) -> Any:
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(concept="PII", eps=10, **kwargs)


def _top3_chroma(collection: Any, query: str) -> list[str]:
    return list(collection.query(query_texts=[query], n_results=3)["ids"][0])


def make_chroma(name: str, **kwargs: Any) -> list[str]:
    """A native Chroma persistent folder written with ``add_documents``; returns the top-3 ids."""
    import chromadb

    from private_vectors.integrations.chroma import add_documents

    client = chromadb.PersistentClient(path=str(HERE / name))
    ef = _embedding(**kwargs)
    col = client.create_collection(COLLECTION, embedding_function=ef)
    add_documents(col, ids=IDS, documents=DOCUMENTS)
    return _top3_chroma(col, QUERIES[name])


def make_langchain() -> list[str]:
    """A LangChain drop-in store; returns the top-3 ids."""
    from private_vectors.langchain import chroma_store

    store = chroma_store(_embedding(), collection_name=COLLECTION, persist_directory=str(HERE / "langchain"))
    store.add_texts(DOCUMENTS, ids=IDS)
    return [d.id for d in store.similarity_search(QUERIES["langchain"], k=3)]


def make_faiss() -> list[str]:
    """A saved PrivateFaissIndex (ids are the insertion positions); returns the top-3 ids."""
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex(_embedding())
    index.add_texts(DOCUMENTS)
    index.save(HERE / "faiss")
    return [IDS[i] for i, _, _ in index.search_texts(QUERIES["faiss"], k=3)]


def main() -> None:
    """(Re)write every store and ``expected.json``."""
    import private_vectors

    for name in QUERIES:
        shutil.rmtree(HERE / name, ignore_errors=True)
    top3 = {
        "chroma-redact": make_chroma("chroma-redact"),
        "chroma-surrogate-keyed": make_chroma("chroma-surrogate-keyed", sanitize="surrogate", key=KEY),
        "langchain": make_langchain(),
        "faiss": make_faiss(),
    }
    expected = {
        "library_version": private_vectors.__version__,
        "collection": COLLECTION,
        "ids": IDS,
        "stores": {name: {"query": QUERIES[name], "top3": top3[name]} for name in QUERIES},
    }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


if __name__ == "__main__":
    main()
