"""Property-based checks (hypothesis) over the public entry points with the edge inputs of
issue 16: every call either raises the package's clear errors or returns a correct output,
and a failed call stores nothing."""

from __future__ import annotations

import math
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from private_vectors import PrivateEmbedding
from private_vectors._validation import check_texts
from private_vectors.errors import PrivateVectorsError
from private_vectors.mechanisms import GaussianMechanism, LaplaceMechanism, PurkayasthaMechanism

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
KEY = "property-test-key-0123456789abcdef"

EDGE_EPS = st.sampled_from([1e-300, 5e-324, 1e-12, 0.5, 10.0, 1e12, 1e300, 0.0, -1.0, math.nan, math.inf,
                            float(np.finfo(np.float32).max)])
EPS = st.one_of(EDGE_EPS, st.floats(allow_nan=True, allow_infinity=True, width=64))
EDGE_TEXTS = ["", " ", "\u200b", "\u200b\ufeff", "\ud800", "ok \udfff", "a" * 5000, "日本語のテキスト",
              "Maria Lopez flew to Madrid.", "\x00", "é"]
TEXT = st.one_of(st.sampled_from(EDGE_TEXTS), st.text(max_size=40),
                 st.text(alphabet=st.characters(categories=["Cs", "Cf", "Zs", "Ll"]), max_size=6))
BATCH = st.one_of(
    st.lists(TEXT, max_size=6),
    st.dictionaries(st.text(max_size=3), TEXT, max_size=3),
    st.sets(st.sampled_from(["a", "b"])),
    st.sampled_from([None, "a lone str", b"bytes", 3, [1, 2], [None], [b"x"]]),
)


def _vectors(draw_shape: tuple[int, int], scale: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(draw_shape) * scale


@SETTINGS
@given(eps=EPS, kind=st.sampled_from(["laplace", "gaussian", "purkayastha"]),
       scale=st.sampled_from([1e-30, 1.0, 1e30]), seed=st.integers(0, 5))
def test_mechanisms_error_or_finite_float32(eps, kind, scale, seed):
    X = _vectors((3, 8), scale, seed)
    try:
        mech = {"laplace": lambda: LaplaceMechanism(epsilon=eps),
                "gaussian": lambda: GaussianMechanism(epsilon=eps, delta=1e-5),
                "purkayastha": lambda: PurkayasthaMechanism(epsilon=eps)}[kind]()
        out = mech.perturb(X)
    except PrivateVectorsError as exc:
        assert str(exc)
        return
    assert out.shape == X.shape and out.dtype == np.float32 and np.all(np.isfinite(out))


@SETTINGS
@given(batch=BATCH)
def test_check_texts_error_or_clean_list(batch):
    try:
        items = check_texts(batch)
    except PrivateVectorsError as exc:
        assert "texts" in str(exc)
        return
    assert isinstance(items, list)
    for t in items:
        assert isinstance(t, str) and t.strip()
        t.encode("utf-8")  # no lone surrogate got through


@SETTINGS
@given(batch=BATCH, keyed=st.booleans())
def test_embed_documents_error_or_vectors(batch, keyed):
    ef = PrivateEmbedding(model="fake:16", eps=10, key=KEY if keyed else None)
    try:
        out = ef.embed_documents(batch)
    except PrivateVectorsError as exc:
        assert str(exc)
        return
    assert len(out) == len(list(batch))
    assert all(len(v) == 16 and all(math.isfinite(x) for x in v) for v in out)
    if keyed and out:  # keyed: re-embedding reproduces every vector
        assert np.allclose(ef.embed_documents(batch), out, atol=1e-6)


@SETTINGS
@given(eps=EPS)
def test_embedding_eps_error_or_finite(eps):
    try:
        ef = PrivateEmbedding(model="fake:16", eps=eps)
        out = ef.embed_documents(["a short text", "another one"])
    except PrivateVectorsError as exc:
        assert "eps" in str(exc) or "epsilon" in str(exc)
        return
    assert np.all(np.isfinite(out))


@SETTINGS
@given(batch=BATCH)
def test_faiss_failed_add_stores_nothing(batch):
    pytest.importorskip("faiss")
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex(PrivateEmbedding(model="fake:16", eps=10), kind="flat")
    index.add_texts(["seed document"])
    before = (len(index), dict(index.texts))
    try:
        index.add_texts(batch)
    except PrivateVectorsError:
        assert (len(index), dict(index.texts)) == before
        return
    assert len(index) == before[0] + len(list(batch))


@pytest.fixture(scope="module")
def chroma_client():
    chromadb = pytest.importorskip("chromadb")
    return chromadb.EphemeralClient()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(TEXT, min_size=1, max_size=4))
def test_chroma_failed_add_stores_nothing(chroma_client, batch):
    ef = PrivateEmbedding(model="fake:16", eps=10, key=KEY)
    col = chroma_client.create_collection(f"p{uuid.uuid4().hex[:12]}", embedding_function=ef)
    assume(len(set(batch)) == len(batch))
    try:
        col.add(ids=[f"id{i}" for i in range(len(batch))], documents=batch)
    except (PrivateVectorsError, ValueError, TypeError):
        assert col.count() == 0
        return
    assert col.count() == len(batch)
