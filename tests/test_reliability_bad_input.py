"""Bad input, property-based: one error family, naming the parameter, nothing stored.

Guarantee (issue 6): every bad input to the public API — mechanisms, PrivateEmbedding (Chroma
``__call__``, ``embed_documents``/``embed_query``, LangChain), the Chroma and LangChain
adapters, concepts, FAISS and the CLI — raises a :class:`PrivateVectorsError` subclass (which is
also a ``ValueError``/``TypeError``) whose message names the parameter, what was expected and
what was received; a failed batch stores nothing of itself and leaves earlier data intact.

Where Chroma validates the input *before* our embedding function runs (a ``None`` or non-str
document in ``collection.add``, an empty ``ids`` list, a batch above Chroma's max batch size),
the error is Chroma's own ``ValueError``/``ChromaError``; these tests pin that down, and that
nothing is stored either way.

Every input tried is counted (hypothesis examples + explicit cases); the totals are printed at
the end of the module (``pytest -s``) and appended to ``$PV_RELIABILITY_COUNTS`` when set.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from _workers.counts import flush, record
from private_vectors import PrivateEmbedding, cli
from private_vectors.encoders import CallableEncoder
from private_vectors.errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    PrivateVectorsError,
)
from private_vectors.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    MahalanobisMechanism,
    PurkayasthaMechanism,
)
from private_vectors.mechanisms.factory import MECHANISMS
from private_vectors.options import QUERY_POLICIES

chromadb = pytest.importorskip("chromadb")

DIM = 16
GOOD = ["Maria Lopez flew to Madrid on Monday", "the patient had a cough and fever",
        "quarterly revenue grew by twelve percent", "the trail closes after snowfall"]
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])
STORE = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    flush(__name__)


# -- the contract --------------------------------------------------------------------------------
def expect_family(fn: Callable[[], Any], *, param: str | None = None, kind: str = "bad input",
                  received: str | None = None) -> PrivateVectorsError:
    """Call ``fn``; it must raise one of the package's errors naming ``param``, expected, received."""
    record(kind)
    with pytest.raises(PrivateVectorsError) as info:
        fn()
    exc = info.value
    assert isinstance(exc, (ValueError, TypeError, LookupError)), type(exc).__mro__
    msg = str(exc)
    if isinstance(exc, (InvalidParameterError, InvalidTypeError)):
        assert "expected" in msg and "received" in msg, msg
        if param is not None:
            assert exc.parameter.split("[")[0] == param.split("[")[0], (exc.parameter, param)
            assert msg.startswith(exc.parameter), msg
    elif param is not None:
        assert param.split("[")[0] in msg, msg
    if received is not None:
        assert received in msg, msg
    return exc


def pe_fake(**kw: Any) -> PrivateEmbedding:
    return PrivateEmbedding(model=f"fake:{DIM}", **kw)


# bad numbers for ε-like parameters: ≤ 0, NaN, ±inf, strings, None, bools, containers
bad_numbers = st.one_of(
    st.floats(max_value=0.0, allow_nan=False),
    st.integers(max_value=0),
    st.sampled_from([math.nan, math.inf, -math.inf, np.float32("nan"), np.float64("inf")]),
    st.text(max_size=8),
    st.none(),
    st.booleans(),
    st.lists(st.floats(min_value=1, max_value=10), min_size=1, max_size=3),
    st.just(b"10"),
    st.just(np.array([1.0, 2.0])),
    st.just(1 + 2j),
)


# -- mechanisms --------------------------------------------------------------------------------
MECH_FACTORIES: dict[str, Callable[[Any], Any]] = {
    "laplace": lambda e: LaplaceMechanism(epsilon=e),
    "purkayastha": lambda e: PurkayasthaMechanism(epsilon=e),
    "gaussian": lambda e: GaussianMechanism(epsilon=e, delta=1e-5),
    "mahalanobis": lambda e: MahalanobisMechanism(epsilon=e, sigma=np.ones(4)),
}


@FAST
@given(eps=bad_numbers, which=st.sampled_from(sorted(MECH_FACTORIES)))
def test_mechanism_epsilon_refused(eps, which):
    expect_family(lambda: MECH_FACTORIES[which](eps), param="epsilon", kind="mechanism parameter")


@FAST
@given(unit=bad_numbers, which=st.sampled_from(["laplace", "purkayastha"]))
def test_mechanism_unit_refused(unit, which):
    cls = LaplaceMechanism if which == "laplace" else PurkayasthaMechanism
    expect_family(lambda: cls(epsilon=1.0, unit=unit), param="unit", kind="mechanism parameter")


@st.composite
def bad_vectors(draw):
    """(array, reason): a batch with NaN/inf somewhere, or the wrong dimension, or not numeric."""
    m = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["nonfinite", "dimension", "type", "rank"]))
    X = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).uniform(-1, 1, (m, DIM))
    if kind == "nonfinite":
        i, j = draw(st.integers(0, m - 1)), draw(st.integers(0, DIM - 1))
        X[i, j] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        return X, kind
    if kind == "dimension":
        n = draw(st.integers(1, 3 * DIM).filter(lambda k: k != DIM))
        return np.zeros((m, n)), kind
    if kind == "rank":
        return np.zeros((m, DIM, 2)), kind
    return draw(st.sampled_from(["abc", None, [["a", "b"]], {"x": 1}, [1.0, None]])), kind


@FAST
@given(data=bad_vectors(), which=st.sampled_from(sorted(MECH_FACTORIES)))
def test_mechanism_bad_vectors_refused(data, which):
    X, _ = data
    if which == "mahalanobis":
        mech = MahalanobisMechanism(epsilon=5.0, sigma=np.ones(DIM))
    else:
        mech = {"laplace": LaplaceMechanism, "purkayastha": PurkayasthaMechanism}.get(which)
        mech = (mech(epsilon=5.0, dim=DIM) if mech is not None
                else GaussianMechanism(epsilon=5.0, delta=1e-5, dim=DIM))
    expect_family(lambda: mech.perturb(X), param="X", kind="mechanism vectors")


# -- PrivateEmbedding construction -----------------------------------------------------------------
@FAST
@given(value=bad_numbers, param=st.sampled_from(["eps", "query_eps", "unit"]))
def test_private_embedding_numbers_refused(value, param):
    assume(value is not None)  # eps=None / query_eps=None / unit=None mean "the default"
    expect_family(lambda: pe_fake(**{param: value}), param=param, kind="PrivateEmbedding parameter")


CHOICES = {"mechanism": MECHANISMS, "query": QUERY_POLICIES, "query_transform": ("auto", "none", "project", "wiener"),
           "space": ("ip", "cosine", "l2")}


@FAST
@given(param=st.sampled_from(sorted(CHOICES)),
       value=st.one_of(st.text(max_size=12), st.integers(), st.floats(), st.just(b"laplace"), st.just(["laplace"])))
def test_private_embedding_unknown_names_refused(param, value):
    assume(not (isinstance(value, str) and value.lower() in CHOICES[param]))
    assume(not (param == "mechanism" and isinstance(value, str) and value.lower() in MECHANISMS))
    assume(not (param == "mechanism" and value is None))
    expect_family(lambda: pe_fake(**{param: value}), param=param, kind="unknown name")


@FAST
@given(key=st.one_of(st.just(""), st.just(b""), st.integers(), st.floats(), st.lists(st.text(), max_size=2)))
def test_private_embedding_bad_key_refused(key):
    expect_family(lambda: pe_fake(key=key), param="key", kind="PrivateEmbedding parameter")


@FAST
@given(model=st.one_of(st.integers(), st.floats(), st.just(b"fake"), st.just([1, 2]),
                       st.just({"type": "nonexistent"}), st.just("fake:0"), st.just("fake:1")))
def test_private_embedding_bad_model_refused(model):
    expect_family(lambda: PrivateEmbedding(model=model), kind="PrivateEmbedding parameter")


@pytest.mark.slow  # imports sentence-transformers (~10-20 s here)
def test_unknown_model_name_is_a_clear_offline_error():
    exc = expect_family(lambda: PrivateEmbedding(model="no-such-org/no-such-model-xyz"), kind="unknown name")
    assert "no-such-model-xyz" in str(exc)


@pytest.mark.parametrize("name", ["not-a-concept", "PIIX", "../../etc/passwd"])
def test_unknown_concept_name_refused(name):
    exc = expect_family(lambda: pe_fake(concept=name), kind="unknown name")
    assert "concept" in str(exc).lower()
    concepts = pytest.importorskip("private_vectors.fitted")
    if not hasattr(concepts, "load_concept"):
        return
    if "/" in name:  # path-like: treated as a fitted-concept folder that does not exist
        assert isinstance(exc, ArtefactError) and name in str(exc)
    else:  # the real loader: InvalidParameterError listing the built-ins
        assert isinstance(exc, InvalidParameterError) and exc.parameter == "concept"
        assert "PII" in str(exc)


@pytest.mark.parametrize("concept", [42, 3.5, [42], ["PII", 7], b"PII"])
def test_concept_of_the_wrong_type_refused(concept):
    expect_family(lambda: pe_fake(concept=concept), param="concept", kind="PrivateEmbedding parameter")


# -- documents ------------------------------------------------------------------------------------
bad_item = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.binary(max_size=5),
    st.text(alphabet=" \t\n\r\u00a0\u2003", max_size=6),  # empty or blank
    st.lists(st.text(min_size=1, max_size=3), max_size=2), st.just({"text": "x"}),
)


@st.composite
def bad_batches(draw):
    """(batch, index of the first bad item)."""
    good = draw(st.lists(st.sampled_from(GOOD), max_size=5))
    pos = draw(st.integers(0, len(good)))
    return [*good[:pos], draw(bad_item), *good[pos:]], pos


VERBS: dict[str, Callable[[PrivateEmbedding, list[Any]], Any]] = {
    "__call__": lambda pe, b: pe(b),
    "embed_documents": lambda pe, b: pe.embed_documents(b),
    "embed_query(list)": lambda pe, b: pe.embed_query(b),
    "aembed_documents": lambda pe, b: asyncio.run(pe.aembed_documents(b)),
}
VERB_PARAM = {"__call__": "input", "embed_documents": "texts", "embed_query(list)": "input",
              "aembed_documents": "texts"}

_PE = None


def shared_pe() -> PrivateEmbedding:
    global _PE
    if _PE is None:
        _PE = pe_fake(eps=10)
    return _PE


@FAST
@given(data=bad_batches(), verb=st.sampled_from(sorted(VERBS)))
def test_bad_documents_refused_by_every_verb(data, verb):
    batch, pos = data
    exc = expect_family(lambda: VERBS[verb](shared_pe(), batch), kind="bad document")
    assert isinstance(exc, (InvalidParameterError, InvalidTypeError))
    # the error points at the offending element (embed_query re-labels documents as queries)
    assert exc.parameter in (f"{VERB_PARAM[verb]}[{pos}]", f"queries[{pos}]"), exc.parameter


@FAST
@given(value=st.one_of(st.none(), st.integers(), st.just(b"abc"), st.text(alphabet=" \t\n", max_size=4)))
def test_bad_single_query_refused(value):
    pe = shared_pe()
    expect_family(lambda: pe.embed_query(value), kind="bad document")
    expect_family(lambda: asyncio.run(pe.aembed_query(value)), kind="bad document")


@pytest.mark.parametrize("batch", ["a single string", b"bytes", 42, None])
def test_a_lone_string_or_scalar_is_not_a_batch(batch):
    pe = shared_pe()
    for verb in ("__call__", "embed_documents"):
        expect_family(lambda verb=verb: VERBS[verb](pe, batch), param=VERB_PARAM[verb], kind="bad document")


def test_empty_batches():
    pe = shared_pe()
    # Chroma's EmbeddingFunction call must not return an empty list: refused by name
    expect_family(lambda: pe([]), param="input", kind="empty batch")
    # LangChain's embed_documents([]) is a no-op by that API's convention
    record("empty batch")
    assert pe.embed_documents([]) == []
    record("empty batch")
    assert asyncio.run(pe.aembed_documents([])) == []


def test_very_long_and_huge_inputs_are_handled_not_refused():
    pe = shared_pe()
    long_doc = "Maria Lopez lives at 42 Elm Street. " * 30_000  # ~1 MB
    record("very long document")
    v = np.asarray(pe([long_doc]))
    assert v.shape == (1, DIM) and np.all(np.isfinite(v))
    huge = [f"document number {i} about topic {i % 97}" for i in range(20_000)]
    record("huge batch")
    Z = pe.embed_array(huge)
    assert Z.shape == (20_000, DIM) and np.all(np.isfinite(Z))
    # no two documents received identical noise
    assert len({row.tobytes() for row in Z}) == len(huge)


@pytest.mark.slow  # loads the default model
def test_very_long_document_with_the_default_model():
    """The real tokenizer truncates (256 word pieces); the vector is finite and unit-scale."""
    pe = PrivateEmbedding(eps=40)
    record("very long document")
    v = np.asarray(pe(["Maria Lopez moved to 42 Elm Street in Springfield. " * 4000]))
    assert v.shape == (1, 384) and np.all(np.isfinite(v))
    assert 0.2 < float(np.linalg.norm(v)) < 3.0


# -- vectors from the encoder -----------------------------------------------------------------------
class Switchable:
    """An encoder function that behaves until told to return a bad matrix."""

    def __init__(self) -> None:
        self.bad: Any = None
        self._rng = np.random.default_rng(0)

    def __call__(self, texts: list[str]) -> Any:
        if self.bad is not None:
            return self.bad(len(texts))
        return self._rng.standard_normal((len(texts), DIM))


@st.composite
def bad_encoder_outputs(draw):
    kind = draw(st.sampled_from(["nan", "inf", "dimension", "rows", "type", "empty"]))
    value = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    where = draw(st.integers(0, DIM - 1))
    n = draw(st.integers(1, 3 * DIM).filter(lambda k: k != DIM))

    def make(m: int) -> Any:
        X = np.ones((m, DIM))
        if kind in ("nan", "inf"):
            X[m - 1, where] = value if kind == "nan" else np.inf
            return X
        if kind == "dimension":
            return np.ones((m, n))
        if kind == "rows":
            return np.ones((m + 1, DIM))
        if kind == "empty":
            return np.zeros((m, 0))
        return [["x"] * DIM] * m

    return kind, make


@STORE
@given(case=bad_encoder_outputs(), verb=st.sampled_from(sorted(VERBS)))
def test_bad_vectors_from_the_encoder_refused(case, verb):
    fn = Switchable()
    pe = PrivateEmbedding(model=CallableEncoder(fn, dim=DIM, model_id="switchable"), eps=10)
    assert np.all(np.isfinite(pe(GOOD)))
    fn.bad = case[1]
    expect_family(lambda: VERBS[verb](pe, GOOD), kind="bad encoder vectors")
    expect_family(lambda: pe.embed_query("a query"), kind="bad encoder vectors")


# -- Chroma: a failed batch stores nothing ---------------------------------------------------------
@pytest.fixture(scope="module")
def chroma_store(tmp_path_factory):
    fn = Switchable()
    pe = PrivateEmbedding(model=CallableEncoder(fn, dim=DIM, model_id="switchable"), eps=10, random_state=0)
    client = chromadb.PersistentClient(path=str(tmp_path_factory.mktemp("chroma_bad")))
    col = client.create_collection("bad_input", embedding_function=pe)
    col.add(ids=[f"g{i}" for i in range(len(GOOD))], documents=GOOD)
    before = col.get(include=["embeddings", "documents"])
    return col, fn, before


def assert_intact(col, before) -> None:
    after = col.get(include=["embeddings", "documents"])
    assert sorted(after["ids"]) == sorted(before["ids"])
    order = {i: k for k, i in enumerate(after["ids"])}
    for k, i in enumerate(before["ids"]):
        assert after["documents"][order[i]] == before["documents"][k]
        np.testing.assert_array_equal(after["embeddings"][order[i]], before["embeddings"][k])


@STORE
@given(data=bad_batches(), op=st.sampled_from(["add", "upsert"]))
def test_chroma_bad_batch_stores_nothing(chroma_store, data, op):
    col, fn, before = chroma_store
    fn.bad = None
    batch, _ = data
    ids = [f"new{i}" for i in range(len(batch))]
    record("chroma bad batch")
    if all(isinstance(b, str) for b in batch):
        # blank strings reach PrivateEmbedding: our family
        with pytest.raises(PrivateVectorsError):
            getattr(col, op)(ids=ids, documents=batch)
    else:
        # None / non-str documents: Chroma's own validation runs first (ValueError)
        with pytest.raises((PrivateVectorsError, ValueError)):
            getattr(col, op)(ids=ids, documents=batch)
    assert_intact(col, before)


@STORE
@given(case=bad_encoder_outputs(), op=st.sampled_from(["add", "upsert"]))
def test_chroma_bad_vectors_store_nothing(chroma_store, case, op):
    col, fn, before = chroma_store
    fn.bad = case[1]
    try:
        record("chroma bad vectors")
        with pytest.raises(PrivateVectorsError):
            getattr(col, op)(ids=["n1", "n2", "g0"], documents=["one new text", "another", "overwrite g0"])
        with pytest.raises(PrivateVectorsError):
            col.query(query_texts=["a query"], n_results=1)
    finally:
        fn.bad = None
    assert_intact(col, before)


def test_chroma_empty_and_oversized_batches_store_nothing(chroma_store):
    col, fn, before = chroma_store
    fn.bad = None
    record("chroma empty batch")
    with pytest.raises(ValueError):  # Chroma: "Non-empty lists are required"
        col.add(ids=[], documents=[])
    limit = col._client.get_max_batch_size()
    record("chroma huge batch")
    with pytest.raises(Exception, match="max batch size"):  # Chroma's own limit
        col.add(ids=[f"h{i}" for i in range(limit + 1)], documents=[f"doc {i}" for i in range(limit + 1)])
    assert_intact(col, before)


@pytest.fixture(scope="module")
def reopen_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("chroma_reopen")
    client = chromadb.PersistentClient(path=str(path))
    col = client.create_collection("notes", embedding_function=PrivateEmbedding(model="fake", eps=10))
    col.add(ids=[f"g{i}" for i in range(len(GOOD))], documents=GOOD)
    return client, col.get(include=["embeddings", "documents"])


@STORE
@given(change=st.one_of(
    st.builds(lambda e: {"eps": e}, st.floats(0.5, 100).filter(lambda e: abs(e - 10) > 1e-6)),
    st.builds(lambda m: {"mechanism": m}, st.sampled_from(["purkayastha", "gaussian", "none"])),
    st.builds(lambda d: {"model": f"fake:{d}"}, st.sampled_from([16, 32, 128])),
    st.builds(lambda s: {"space": s}, st.sampled_from(["ip", "cosine", "l2"])), st.just({"key": "some-key-0123456789"}),
))
def test_reopened_collection_with_another_privacy_config_refused(reopen_dir, change):
    client, before = reopen_dir
    other = PrivateEmbedding(**{"model": "fake", "eps": 10, **change})
    assume(other != PrivateEmbedding(model="fake", eps=10))  # e.g. the default space itself
    from private_vectors.chroma import add_documents, create_collection, open_collection

    plain = client.get_collection("notes", embedding_function=other)  # Chroma's own check: names only
    for opener in (lambda: open_collection(client, "notes", other),
                   lambda: create_collection(client, "notes", other, get_or_create=True),
                   lambda: add_documents(plain, ids=["x"], documents=["a note"])):
        record("reopen with another config")
        with pytest.raises(ConfigMismatchError) as info:
            opener()
        assert isinstance(info.value, ValueError)
        field = next(iter(change)) if "key" not in change else "keyed"
        field = {"model": "encoder"}.get(field, field)
        assert field in str(info.value), str(info.value)
    col = client.get_collection("notes")
    assert_intact(col, before)


# -- LangChain over Chroma -------------------------------------------------------------------------------
def test_langchain_chroma_bad_batch_stores_nothing(tmp_path):
    lc = pytest.importorskip("langchain_chroma")
    store = lc.Chroma(collection_name="lc_bad", embedding_function=pe_fake(eps=10),
                      persist_directory=str(tmp_path))
    store.add_texts(GOOD, ids=[f"g{i}" for i in range(len(GOOD))])
    before = store._collection.get(include=["embeddings", "documents"])
    for bad in ([*GOOD[:2], ""], [GOOD[0], None], [GOOD[0], 7], ["   "], [GOOD[1], b"bytes"]):
        expect_family(lambda bad=bad: store.add_texts(bad, ids=[f"x{i}" for i in range(len(bad))]),
                      kind="langchain bad batch")
        expect_family(lambda bad=bad: asyncio.run(store.aadd_texts(bad, ids=[f"y{i}" for i in range(len(bad))])),
                      kind="langchain bad batch")
    for query in ("", "  ", None):
        expect_family(lambda query=query: store.similarity_search(query, k=1), kind="langchain bad query")
    record("langchain empty batch")
    with contextlib.suppress(ValueError):  # langchain_chroma upserts an empty batch; Chroma refuses it
        store.add_texts([], ids=[])
    assert_intact(store._collection, before)


# -- concept artefacts ---------------------------------------------------------------------------------------
def _concepts():
    concepts = pytest.importorskip("private_vectors.fitted")
    for name in ("FittedConcept", "load_concept", "fit_concept", "builtin_concept"):
        if not hasattr(concepts, name):
            pytest.skip(f"private_vectors.fitted.{name} not available yet")
    return concepts


@pytest.fixture(scope="module")
def saved_concept(tmp_path_factory):
    concepts = _concepts()
    from private_vectors.encoders import FakeEncoder

    enc = FakeEncoder(dim=DIM)
    fitted = concepts.load_concept("person", enc)
    folder = tmp_path_factory.mktemp("concept") / "person"
    fitted.save(folder)
    return concepts, enc, folder


def _copy(folder, tmp_path):
    import shutil

    dst = tmp_path / "copy"
    shutil.copytree(folder, dst)
    return dst


def test_concept_round_trip_is_accepted(saved_concept, tmp_path):
    concepts, enc, folder = saved_concept
    loaded = concepts.FittedConcept.load(folder)
    loaded.check_encoder(enc)
    pe = PrivateEmbedding(model=enc, concept=str(folder), eps=10)
    assert np.all(np.isfinite(pe(GOOD)))


@pytest.mark.parametrize("damage", ["truncate-safetensors", "garbage-safetensors", "empty-safetensors",
                                    "truncate-config", "garbage-config", "config-not-object", "missing-safetensors",
                                    "missing-config", "wrong-dimension-in-config"])
def test_corrupted_or_truncated_concept_artefact_refused(saved_concept, tmp_path, damage):
    concepts, enc, folder = saved_concept
    dst = _copy(folder, tmp_path)
    st_file, cfg_file = dst / "model.safetensors", dst / "config.json"
    if damage == "truncate-safetensors":
        st_file.write_bytes(st_file.read_bytes()[: st_file.stat().st_size // 2])
    elif damage == "garbage-safetensors":
        st_file.write_bytes(b"\x80\x04\x95not a safetensors file at all" * 10)
    elif damage == "empty-safetensors":
        st_file.write_bytes(b"")
    elif damage == "truncate-config":
        cfg_file.write_text(cfg_file.read_text()[:20])
    elif damage == "garbage-config":
        cfg_file.write_bytes(b"\xff\xfe{{{")
    elif damage == "config-not-object":
        cfg_file.write_text("[1, 2, 3]")
    elif damage == "missing-safetensors":
        st_file.unlink()
    elif damage == "missing-config":
        cfg_file.unlink()
    elif damage == "wrong-dimension-in-config":
        cfg = json.loads(cfg_file.read_text())
        cfg["fingerprint"]["dim"] = DIM * 2
        cfg_file.write_text(json.dumps(cfg))
    for load in (lambda: concepts.FittedConcept.load(dst), lambda: PrivateEmbedding(model=enc, concept=str(dst))):
        exc = expect_family(load, kind="corrupted concept artefact")
        assert isinstance(exc, (ArtefactError, ConfigMismatchError, InvalidParameterError)), type(exc)


@pytest.mark.parametrize("other", ["fake:32", "fake:16-renormalised"])
def test_concept_artefact_from_another_model_refused(saved_concept, other):
    concepts, _, folder = saved_concept
    from private_vectors.encoders import FakeEncoder

    # another dimension, or the same dimension but another model (not normalised: other canaries)
    other_enc = FakeEncoder(dim=32) if other == "fake:32" else FakeEncoder(dim=DIM, normalize=False)
    exc = expect_family(lambda: PrivateEmbedding(model=other_enc, concept=str(folder)), kind="foreign concept")
    assert isinstance(exc, (ConfigMismatchError, ArtefactError)), type(exc)
    expect_family(lambda: concepts.FittedConcept.load(folder).check_encoder(other_enc), kind="foreign concept")


@FAST
@given(text=st.one_of(st.none(), st.integers(), st.just(b"bytes"), st.lists(st.text(), max_size=2)),
       tokens=st.one_of(st.just(["Maria"]), st.none(), st.integers(), st.just("Maria"), st.just([None]),
                        st.just([3])))
def test_remove_tokens_bad_input(text, tokens):
    concepts = pytest.importorskip("private_vectors.fitted")
    remove_tokens = getattr(concepts, "remove_tokens", None)
    if remove_tokens is None:
        from private_vectors.fitted.removal import remove_tokens
    expect_family(lambda: remove_tokens(text, tokens), kind="remove_tokens")


@FAST
@given(tokens=st.one_of(st.none(), st.integers(), st.just([None]), st.just([3]), st.just([b"x"])))
def test_remove_tokens_bad_token_list(tokens):
    concepts = pytest.importorskip("private_vectors.fitted")
    remove_tokens = getattr(concepts, "remove_tokens", None)
    if remove_tokens is None:
        from private_vectors.fitted.removal import remove_tokens
    expect_family(lambda: remove_tokens("Maria Lopez flew to Madrid", tokens), kind="remove_tokens")


# -- FAISS -----------------------------------------------------------------------------------------------
@pytest.fixture
def faiss_index():
    faiss_mod = pytest.importorskip("private_vectors.integrations.faiss")
    pytest.importorskip("faiss")
    idx = faiss_mod.build_index(GOOD, pe_fake(eps=10, random_state=0), kind="flat")
    return faiss_mod, idx


def test_faiss_bad_batch_adds_nothing(faiss_index):
    faiss_mod, idx = faiss_index
    before = idx.stored_vectors().copy()
    for bad in ([GOOD[0], ""], [None], [GOOD[1], 5], ["  \n"], "a lone string", None, []):
        if bad == []:
            record("faiss empty batch")
            assert idx.add_texts(bad) == []
        else:
            expect_family(lambda bad=bad: idx.add_texts(bad), kind="faiss bad batch")
    for ids in ([0], [1, 1], [99], ["x"]):  # existing id, duplicates, wrong count, not an int
        expect_family(lambda ids=ids: idx.add_texts(["new one", "new two"], ids=ids), kind="faiss bad ids")
    for query in ("", None, [3], ["  "]):
        expect_family(lambda query=query: idx.search(query, k=1), kind="faiss bad query")
    for k in (0, -1, 1.5, "3", None):
        expect_family(lambda k=k: idx.search(["a query"], k=k), param="k", kind="faiss bad k")
    for kind in ("annoy", None, 3):
        expect_family(lambda kind=kind: faiss_mod.PrivateFaissIndex(pe_fake(), kind=kind), param="kind",
                      kind="unknown name")
    assert len(idx) == len(GOOD) and sorted(idx.texts) == list(range(len(GOOD)))
    np.testing.assert_array_equal(idx.stored_vectors(), before)


@pytest.mark.parametrize("damage", ["truncate-index", "garbage-index", "missing-index", "garbage-sidecar",
                                    "truncate-sidecar", "missing-sidecar", "foreign-format", "other-config",
                                    "other-dimension"])
def test_faiss_corrupted_or_foreign_files_refused(faiss_index, tmp_path, damage):
    faiss_mod, idx = faiss_index
    folder = idx.save(tmp_path / "idx")
    index_file, sidecar = folder / faiss_mod.INDEX_FILE, folder / faiss_mod.SIDECAR
    embedding = None
    if damage == "truncate-index":
        index_file.write_bytes(index_file.read_bytes()[:40])
    elif damage == "garbage-index":
        index_file.write_bytes(b"\x80\x04not an index" * 20)
    elif damage == "missing-index":
        index_file.unlink()
    elif damage == "garbage-sidecar":
        sidecar.write_bytes(b"\xff\xfe{{")
    elif damage == "truncate-sidecar":
        sidecar.write_text(sidecar.read_text()[:30])
    elif damage == "missing-sidecar":
        sidecar.unlink()
    elif damage == "foreign-format":
        cfg = json.loads(sidecar.read_text())
        cfg["format"] = "someone-else/9"
        sidecar.write_text(json.dumps(cfg))
    elif damage == "other-config":
        embedding = pe_fake(eps=20)
    elif damage == "other-dimension":
        embedding = PrivateEmbedding(model="fake:32", eps=10)
    exc = expect_family(lambda: faiss_mod.PrivateFaissIndex.load(folder, embedding), kind="faiss bad files")
    assert isinstance(exc, (ArtefactError, ConfigMismatchError)), type(exc)


# -- CLI ---------------------------------------------------------------------------------------------------
@FAST
@given(eps=st.one_of(st.sampled_from(["0", "-1", "nan", "inf", "-inf", "-0.0", "1e-400"]),
                     st.floats(max_value=0, allow_nan=False).map(repr)))
def test_cli_bad_epsilon_exit_code_2(eps, capsys):
    record("cli")
    code = cli.main(["demo", "--model", "fake", f"--eps={eps}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "eps" in err and "expected" in err and "received" in err, err


@FAST
@given(argv=st.one_of(
    st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=10), min_size=1, max_size=3)
    .filter(lambda a: a[0] not in ("info", "demo", "-h", "--help", "--version", "concept", "bench")
            and not a[0].startswith("-")),
    st.just(["demo", "--eps", "ten"]), st.just(["demo", "--eps"]), st.just(["demo", "--no-such-flag"]),
    st.just([]),
))
def test_cli_usage_errors_exit_code_2(argv, capsys):
    record("cli")
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "error" in err, (argv, code, err)
