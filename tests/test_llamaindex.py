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


def test_unsanitized_text_is_sanitized_once_with_a_warning():
    ef = _ef()
    model = PrivateLlamaEmbedding(embedding=ef)
    with pytest.warns(PrivacyWarning, match="the store keeps the raw text"):
        model.get_text_embedding_batch(["Maria Lopez flew to Madrid."])
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
