"""LlamaIndex: SanitizeNodes before the store, PrivateLlamaEmbedding never sanitizes twice, no raw hashes."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode

from private_vectors import PrivateEmbedding
from private_vectors.errors import ConfigMismatchError, InvalidTypeError, PrivacyWarning
from private_vectors.llamaindex import (
    MARKER,
    PrivateLlamaEmbedding,
    SanitizeNodes,
    load_index,
    persist_index,
)

KEY = "llamaindex-test-key-5Rz8Kq2w"


def _ef(**kw):
    kw.setdefault("eps", 20)
    kw.setdefault("seal", False)  # the clear path (sealed nodes: tests/test_sealed_paths.py)
    return PrivateEmbedding(concept="PII", model="fake", key=KEY, **kw)


def _docs():
    return [Document(text="Maria Lopez flew to Madrid on Monday. She met Carlos Ruiz there.",
                     metadata={"author": "Maria Lopez"}),
            Document(text="The cat sat on the mat.")]


def test_sanitize_nodes_text_metadata_and_related_hashes():
    ef = _ef()
    docs = _docs()
    raw_hashes = {d.hash for d in docs}
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(docs))
    first = nodes[0]
    assert "Maria" not in first.text and "Lopez" not in first.text
    assert first.metadata["author"] == "<PERSON>" and first.metadata[MARKER] == "sanitized"
    assert MARKER not in first.get_content(metadata_mode=MetadataMode.EMBED)
    for info in first.relationships.values():
        infos = info if isinstance(info, list) else [info]
        assert all(i.hash is None and "Maria" not in str(i.metadata) for i in infos)
    assert first.hash not in raw_hashes


def test_sanitize_nodes_never_twice():
    ef = _ef(sanitize="surrogate")
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(_docs()))
    once = [n.text for n in nodes]
    assert [n.text for n in SanitizeNodes(embedding=ef)(nodes)] == once


def test_embedding_adapter_embeds_sanitized_nodes_as_they_are(monkeypatch):
    ef = _ef()
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(_docs()))
    calls = []
    original = ef.pipeline.sanitize_documents
    monkeypatch.setattr(ef.pipeline, "sanitize_documents", lambda texts: calls.append(texts) or original(texts))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef))
    assert calls == []  # sanitized once, by SanitizeNodes


def test_unsanitized_text_is_sanitized_once_with_a_warning_where_a_store_keeps_it():
    ef = _ef()
    model = PrivateLlamaEmbedding(embedding=ef)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # a direct call: no store keeps the text
        model.get_text_embedding_batch(["Maria Lopez flew to Madrid."])
    with pytest.warns(PrivacyWarning, match="the store keeps the raw text"):
        VectorStoreIndex.from_documents(_docs(), embed_model=model)  # the index's docstore keeps the raw text
    nodes = SentenceSplitter()(_docs())
    model(nodes)  # as a transformation: the stored node is the sanitized one
    assert all("Maria" not in n.text for n in nodes) and all(n.embedding for n in nodes)


def test_persisted_index_holds_no_raw_text_or_raw_hash_and_checks_on_load(tmp_path):
    ef = _ef()
    docs = _docs()
    raw_hashes = {d.hash for d in docs} | {n.hash for n in SentenceSplitter()(_docs())}
    nodes = SanitizeNodes(embedding=ef)(SentenceSplitter()(docs))
    persist_index(VectorStoreIndex(nodes, embed_model=PrivateLlamaEmbedding(embedding=ef)), tmp_path)
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"Maria" not in blob and b"Lopez" not in blob and b"Madrid" not in blob
    assert not any(h.encode() in blob for h in raw_hashes)
    index = load_index(tmp_path, key=KEY)
    assert index.as_retriever(similarity_top_k=1).retrieve("The cat sat on the mat.")[0].text == "The cat sat on the mat."
    with pytest.raises(ConfigMismatchError):
        load_index(tmp_path, embedding=_ef(eps=10))
    with pytest.raises(ConfigMismatchError):
        load_index(tmp_path, key="another-key-entirely-42xQ")


def test_components_refuse_other_embeddings():
    with pytest.raises(InvalidTypeError):
        SanitizeNodes(embedding="not an embedding")
    with pytest.raises(InvalidTypeError):
        PrivateLlamaEmbedding(embedding=None)


# -- the toolchain: documents protected before LlamaIndex hashes, caches or stores them ------------------
def _named_docs():
    return [Document(text="Maria Lopez flew to Madrid on Monday.", id_="a",
                     metadata={"author": "Maria Lopez", "file_path": "/home/notes/maria_lopez.txt"}),
            Document(text="The cat sat on the mat.", id_="b", metadata={"file_path": "/home/notes/cat.txt"})]


def test_protect_documents_sanitizes_copies_with_keyed_hashes():
    from private_vectors.llamaindex import protect_documents

    docs = _named_docs()
    raw = [d.hash for d in docs]
    one, two = protect_documents(_ef(), docs), protect_documents(_ef(), _named_docs())
    assert docs[0].text.startswith("Maria Lopez") and docs[0].metadata["author"] == "Maria Lopez"  # untouched
    for mode in MetadataMode:  # whatever a component embeds or shows a model
        content = one[0].get_content(metadata_mode=mode)
        assert "Maria" not in content and "Lopez" not in content and "lopez" not in content, mode
    assert one[0].metadata["file_path"] == "/home/notes/<PERSON>.txt"
    assert [d.hash for d in one] == [d.hash for d in two]  # stable for the same key (de-duplication works)
    assert not {d.hash for d in one} & set(raw)
    other = protect_documents(PrivateEmbedding(concept="PII", model="fake", eps=20, key="another-key-7Yq2Lm9Xw3"),
                              _named_docs())
    assert not {d.hash for d in other} & {d.hash for d in one}
    changed = _named_docs()
    changed[1].set_content("The dog sat on the mat.")
    assert protect_documents(_ef(), changed)[1].hash != one[1].hash and type(one[0]).class_name() == "Document"


def test_protect_documents_without_a_key_uses_llamaindex_hash_of_the_sanitized_copy():
    from private_vectors.llamaindex import protect_documents

    ef = PrivateEmbedding(concept="PII", model="fake", eps=20)
    doc = protect_documents(ef, _named_docs())[0]
    assert type(doc) is Document and "Maria" not in doc.text
    assert doc.hash == Document(text=doc.text, metadata=doc.metadata, id_="a").hash


def test_private_pipeline_dedupes_by_keyed_hash_and_persists_nothing_raw(tmp_path):
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.vector_stores import SimpleVectorStore

    from private_vectors.llamaindex import PrivateIngestionPipeline

    def pipeline():
        return PrivateIngestionPipeline(transformations=[SentenceSplitter(), PrivateLlamaEmbedding(embedding=_ef())],
                                        docstore=SimpleDocumentStore(), vector_store=SimpleVectorStore())

    first = pipeline()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        assert len(first.run(documents=_named_docs())) == 2
    first.persist(str(tmp_path))
    blob = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()).lower()
    assert b"maria" not in blob and b"lopez" not in blob
    again = pipeline()
    again.load(str(tmp_path))
    sanitizer = again.embedding.pipeline.sanitizer
    calls, apply = [], sanitizer.apply
    sanitizer.apply = lambda texts, *a, **k: calls.append(list(texts)) or apply(texts, *a, **k)
    assert again.run(documents=_named_docs()) == []  # unchanged: skipped, by the keyed hash
    assert calls == []  # and not sanitized again
    changed = _named_docs()
    changed[1].set_content("The dog sat on the mat.")
    assert len(again.run(documents=changed)) == 1


def test_private_pipeline_needs_an_embedding():
    from private_vectors.errors import InvalidParameterError
    from private_vectors.llamaindex import PrivateIngestionPipeline

    with pytest.raises(InvalidParameterError, match="embedding"):
        PrivateIngestionPipeline(transformations=[SentenceSplitter()])
    assert PrivateIngestionPipeline(transformations=[SanitizeNodes(embedding=_ef())]).embedding is not None


def test_a_plain_pipeline_with_a_cache_or_docstore_warns_once():
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.storage.docstore import SimpleDocumentStore

    step = SanitizeNodes(embedding=_ef())
    cached = IngestionPipeline(transformations=[SentenceSplitter(), step])
    with pytest.warns(PrivacyWarning, match="cache") as record:
        cached.run(documents=_named_docs())
        cached.run(documents=[Document(text="Carlos Ruiz met Ana Diaz.")])
    assert sum(issubclass(w.category, PrivacyWarning) for w in record) == 1
    with pytest.warns(PrivacyWarning, match="docstore"):
        IngestionPipeline(transformations=[SentenceSplitter(), SanitizeNodes(embedding=_ef())], disable_cache=True,
                          docstore=SimpleDocumentStore()).run(documents=_named_docs())
    with warnings.catch_warnings():  # nothing kept before the sanitizer: no warning
        warnings.simplefilter("error", PrivacyWarning)
        IngestionPipeline(transformations=[SentenceSplitter(), SanitizeNodes(embedding=_ef())],
                          disable_cache=True).run(documents=_named_docs())


def test_from_documents_with_raw_documents_warns():
    with pytest.warns(PrivacyWarning, match="from_documents"):
        VectorStoreIndex.from_documents(_named_docs(), embed_model=PrivateLlamaEmbedding(embedding=_ef()),
                                        transformations=[SentenceSplitter(), SanitizeNodes(embedding=_ef())])
