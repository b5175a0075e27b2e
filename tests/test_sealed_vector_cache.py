"""The key holder's exact-vector cache of a sealed Chroma collection: a warm query reads only the
records it returns, gives what an uncached read gives, follows the library's writes and deletes,
catches a record rewritten by another writer, keeps to its byte budget (LRU), and refuses bad
options (fake encoder, small texts)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError, InvalidTypeError
from private_vectors.keys import KEY_ENV
from private_vectors.sealed import Sealer, Sealing
from private_vectors.sealed.vector_cache import ENTRY_OVERHEAD, ExactVectorCache

chromadb = pytest.importorskip("chromadb")
from private_vectors.chroma import add_documents, create_collection, delete, query  # noqa: E402
from private_vectors.integrations.chroma_cached import cache_of  # noqa: E402

KEY = "vector-cache-key-Qm4tR8zLw2"
WORDS = ["harbour", "invoice", "Lagos", "review", "memo", "ledger", "audit", "river", "summit", "contract", "garden",
         "report", "tender", "budget", "office", "train", "letter", "market", "bridge", "engine"]
DOCS = {f"d{i:02d}": " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6)) + f" item {i}"
        for i in range(40)}
QUERIES = ["harbour invoice review", "river summit garden", "train engine bridge", "budget tender letter"]


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    warnings.simplefilter("ignore")


def _ef(**seal) -> PrivateEmbedding:
    return PrivateEmbedding(model="fake:32", eps=10, key=KEY, seal=Sealing(**seal) if seal else None)


class Counting:
    """A collection that records the ``include`` of each query and the ids of each get."""

    def __init__(self, col) -> None:
        self._col, self.queries, self.gets = col, [], []

    def __getattr__(self, name):
        return getattr(self._col, name)

    def query(self, **kw):
        self.queries.append(list(kw.get("include") or []))
        return self._col.query(**kw)

    def get(self, ids=None, **kw):
        self.gets.append(list(ids or []))
        return self._col.get(ids=ids, **kw)


def _store(tmp_path, ef=None, name="notes"):
    ef = ef or _ef()
    col = create_collection(chromadb.PersistentClient(path=str(tmp_path)), name, ef)
    add_documents(col, ids=list(DOCS), documents=list(DOCS.values()))
    return col, ef


def _read(col, ef, texts=QUERIES, n=5):
    res = query(col, list(texts), n_results=n, embedding=ef)
    return res["ids"], res["documents"], res["distances"]


def _same(a, b) -> None:
    assert a[0] == b[0] and a[1] == b[1]
    for x, y in zip(a[2], b[2], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def _reader(col, **seal):
    ef = _ef(**seal)
    query(col, ["warm up"], n_results=1, embedding=ef)  # binds ef to the collection
    return ef


# -- what a warm query reads ------------------------------------------------------------------------
def test_a_warm_query_fetches_only_the_records_it_returns(tmp_path):
    col, ef = _store(tmp_path)
    counted = Counting(col)
    cold = _read(counted, ef, QUERIES[:1])
    assert counted.queries == [["metadatas"]] and counted.gets == []  # cold: one query with every record
    counted.queries.clear()
    warm = _read(counted, ef, QUERIES[:1])
    _same(warm, cold)
    assert counted.queries == [[]]  # ids only: no record read by the query
    fetched = [i for g in counted.gets for i in g]
    assert sorted(fetched) == sorted(warm[0][0]) and len(counted.gets) == 1  # only the 5 it returns


def test_cached_reads_give_the_uncached_ids_order_and_distances(tmp_path):
    for vector in ("float16", "float32"):
        col, ef = _store(tmp_path / vector, _ef(vector=vector))
        off = _reader(col, vector_cache=0)
        assert Sealer.for_embedding(off).caches.of("x") is None
        for _ in range(3):  # cold, then warm twice
            _same(_read(col, ef), _read(col, off))
        assert len(cache_of(Sealer.for_embedding(ef), col)) == len(DOCS)


def test_cache_off_always_reads_every_record(tmp_path):
    col, _ = _store(tmp_path)
    off = _reader(col, vector_cache=0)
    counted = Counting(col)
    for _ in range(3):
        _read(counted, off, QUERIES[:1])
    assert counted.queries == [["metadatas"]] * 3 and counted.gets == []


# -- invalidation ------------------------------------------------------------------------------------
def test_the_librarys_upsert_and_delete_drop_the_cached_vectors(tmp_path):
    col, ef = _store(tmp_path)
    off = _reader(col, vector_cache=0)
    _read(col, ef)
    cache = cache_of(Sealer.for_embedding(ef), col)
    assert cache.take(["d03"])[1] == []
    add_documents(col, ids=["d03"], documents=["train engine bridge signal depot"], upsert=True, embedding=ef)
    assert cache.take(["d03"])[1] == [0]  # gone: the next query fetches its new record
    _same(_read(col, ef), _read(col, off))
    delete(col, ["d05", "d07"], embedding=ef)
    assert cache.take(["d05", "d07"])[1] == [0, 1]
    got = _read(col, ef)
    assert not {"d05", "d07"} & {i for ids in got[0] for i in ids}
    _same(got, _read(col, off))


def test_a_record_rewritten_by_another_writer_is_ranked_by_its_new_vector(tmp_path):
    col, ef = _store(tmp_path)
    old_text = DOCS["d11"]
    first = _read(col, ef, [old_text], n=3)
    assert first[0][0][0] == "d11"  # its cached vector ranks it first for its own text
    other = _ef()  # another function object (as another process): its writes reach no cache of ef
    other_col = create_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes", other, get_or_create=True)
    add_documents(other_col, ids=["d11"], documents=["completely unrelated words about a violin concert"],
                  upsert=True, embedding=other)
    fresh = _reader(col, vector_cache=0)
    truth = _read(col, fresh, [old_text], n=3)
    assert truth[0][0][0] != "d11"  # by its new vector it is no longer first
    _same(_read(col, ef, [old_text], n=3), truth)  # not ranked (nor scored) by the vector ef cached
    new = ["completely unrelated words about a violin concert"]
    assert query(col, new, n_results=1, embedding=fresh)["ids"][0] == ["d11"]
    _same(_read(col, ef, new, n=3), _read(col, fresh, new, n=3))


# -- the cache itself --------------------------------------------------------------------------------
def test_the_byte_budget_evicts_the_least_recently_used():
    per = 4 * 2 + ENTRY_OVERHEAD
    cache = ExactVectorCache(3 * per)
    vec = lambda x: np.full((1, 4), x, dtype=np.float16)  # noqa: E731
    for name, x in (("a", 1), ("b", 2), ("c", 3)):
        cache.put([name], vec(x))
    assert cache.take(["a"])[1] == []  # a is now the most recently used
    cache.put(["d"], vec(4))
    mat, missing = cache.take(["a", "b", "c", "d"])
    assert missing == [1] and len(cache) == 3 and cache.capacity == 3
    assert mat[0, 0] == 1 and mat[3, 0] == 4 and mat[1, 0] == 0
    cache.put([f"x{i}" for i in range(10)], np.ones((10, 4), np.float16))
    assert len(cache) == 3 and cache.take(["x9"])[1] == [] and cache.take(["x0"])[1] == [0]


def test_max_age_forgets_old_vectors_and_another_shape_starts_again():
    now = [0.0]
    cache = ExactVectorCache(10_000, max_age=5.0, clock=lambda: now[0])
    cache.put(["a", "b"], np.ones((2, 4), np.float16))
    now[0] = 4.0
    cache.put(["b"], np.ones((1, 4), np.float16))
    now[0] = 6.0
    assert cache.take(["a", "b"])[1] == [0]
    cache.put(["c"], np.ones((1, 8), np.float32))  # records of another encoder: the old ones go
    assert len(cache) == 1 and cache.take(["b"])[1] == [0]


def test_the_cache_shows_and_pickles_no_vector():
    cache = ExactVectorCache(10_000)
    cache.put(["secret-id"], np.full((1, 4), 0.123, dtype=np.float16))
    assert "secret-id" not in repr(cache) and "0.123" not in repr(cache)
    with pytest.raises(TypeError):
        pickle.dumps(cache)


@pytest.mark.parametrize(("kw", "error"), [({"vector_cache": -1}, InvalidParameterError),
                                           ({"vector_cache": "64MB"}, InvalidTypeError),
                                           ({"vector_cache": True}, InvalidTypeError),
                                           ({"vector_cache": 1.5}, InvalidTypeError),
                                           ({"vector_cache_max_age": 0}, InvalidParameterError),
                                           ({"vector_cache_max_age": float("nan")}, InvalidParameterError),
                                           ({"vector_cache_max_age": "1h"}, InvalidTypeError)])
def test_bad_cache_options_name_the_parameter(kw, error):
    (name,) = kw
    with pytest.raises(error) as got:
        Sealing(**kw)
    msg = str(got.value)
    assert msg.startswith(f"{name}: expected ") and "received" in msg
    with pytest.raises(error):
        PrivateEmbedding(model="fake:32", eps=10, key=KEY, seal=kw)


def test_the_reader_options_survive_binding_and_are_not_recorded(tmp_path):
    col, _ = _store(tmp_path)
    ef = _reader(col, vector_cache=123_456, vector_cache_max_age=30)
    sealer = Sealer.for_embedding(ef)
    assert sealer.sealing.vector_cache == 123_456 and sealer.sealing.vector_cache_max_age == 30.0
    assert cache_of(sealer, col).budget == 123_456
    recorded = str(col.configuration_json)
    assert "vector_cache" not in recorded
