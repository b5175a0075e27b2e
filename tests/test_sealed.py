"""Sealed records: the AEAD record (wrong key, flipped bit, swapped and moved records refused;
deterministic re-seal; size classes), markers and keyed ids, the data key (wrapped, never in a
config, repr or pickle), the keyring, ``seal=`` resolution and adoption on reopen, the pipeline's
exact vectors and the re-rank helpers."""

from __future__ import annotations

import base64
import json
import math
import pickle
import warnings

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.config import check_config_compatible
from private_vectors.embedding import rebuild
from private_vectors.errors import (
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    SealedRecordError,
    SealedStoreError,
)
from private_vectors.keys import KEY_ENV, SecretKey
from private_vectors.options import EmbeddingOptions, resolve_options
from private_vectors.sealed import (
    KeyringFile,
    LocalKeyWrapper,
    Sealer,
    Sealing,
    candidate_count,
    resolve_sealing,
)
from private_vectors.sealed.datakey import DataKey
from private_vectors.sealed.records import is_marker, size_class
from private_vectors.sealed.rerank import exact_distances, mmr, rerank

KEY = "sealed-test-key-7Hq2Lm9Xv4"
OTHER = "another-sealed-key-Rt5Wp8Zc1"
TEXT = "<PERSON> flew to <LOCATION> on Tuesday for the quarterly review."


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    warnings.simplefilter("ignore", DeprecationWarning)


def _ef(key: str | None = KEY, **kw) -> PrivateEmbedding:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateEmbedding(model="fake", eps=10, key=key, **kw)


def _sealer(ef: PrivateEmbedding) -> Sealer:
    ef.get_config()  # a store records the config: the data key is made
    return Sealer.for_embedding(ef)


def _record(sealer: Sealer, doc_id: str = "d1", text: str = TEXT, **kw) -> str:
    vec = kw.pop("vector", np.linspace(-1, 1, 16, dtype=np.float32))
    return sealer.seal(doc_id, text=text, metadata=kw.pop("metadata", {"year": 2021, "ok": True}), vector=vec, **kw)


def _reopened(config: dict, monkeypatch, key: str = KEY, **kw) -> PrivateEmbedding:
    monkeypatch.setenv(KEY_ENV, key)
    try:
        return rebuild(config, "the test store", use_cache=False, **kw)
    finally:
        monkeypatch.delenv(KEY_ENV)


# -- the record -----------------------------------------------------------------------------------
def test_a_record_opens_to_what_was_sealed() -> None:
    s = _sealer(_ef())
    vec = np.linspace(-1, 1, 16, dtype=np.float32)
    rec = s.seal("d1", text=TEXT, metadata={"year": 2021, "ok": True, "w": 0.5, "n": None}, vector=vec,
                 restore="pvr1.xyz", index_refs=["a1", "b2"])
    assert rec.startswith("pvs1.") and TEXT not in rec
    got = s.open("d1", rec)
    assert (got.doc_id, got.text, got.restore, got.index_refs) == ("d1", TEXT, "pvr1.xyz", ("a1", "b2"))
    assert got.metadata == {"year": 2021, "ok": True, "w": 0.5, "n": None}
    assert got.vector.dtype == np.float32 and np.max(np.abs(got.vector - vec)) < 1e-3  # float16 by default


def test_float32_vectors_are_exact() -> None:
    s = _sealer(_ef(seal=Sealing(vector="float32")))
    vec = np.random.default_rng(0).normal(size=48).astype(np.float32)
    assert np.array_equal(s.open("d", _record(s, "d", vector=vec)).vector, vec)


def test_resealing_the_same_document_gives_the_same_bytes() -> None:
    s = _sealer(_ef())
    assert _record(s) == _record(s)
    assert _record(s, text=TEXT + "!") != _record(s)


def test_a_flipped_bit_is_refused() -> None:
    s = _sealer(_ef())
    rec = _record(s)
    raw = bytearray(base64.urlsafe_b64decode(rec[5:] + "=" * (-len(rec[5:]) % 4)))
    for at in (0, len(raw) // 2, len(raw) - 1):
        bad = bytearray(raw)
        bad[at] ^= 0x01
        forged = "pvs1." + base64.urlsafe_b64encode(bytes(bad)).decode().rstrip("=")
        with pytest.raises(SealedRecordError, match="does not open"):
            s.open("d1", forged)
    with pytest.raises(SealedRecordError):
        s.open("d1", rec[:-40])  # truncated
    with pytest.raises(SealedRecordError, match="not a sealed record"):
        s.open("d1", "plain text")


def test_a_record_swapped_between_two_documents_is_refused() -> None:
    s = _sealer(_ef())
    a, b = _record(s, "a", text="first document"), _record(s, "b", text="second document")
    with pytest.raises(SealedRecordError):
        s.open("a", b)
    with pytest.raises(SealedRecordError):
        s.open("b", a)
    assert s.open("a", a).text == "first document"


def test_opened_records_authenticate_every_candidate_and_parse_on_demand() -> None:
    s = _sealer(_ef())
    vecs = np.random.default_rng(1).normal(size=(5, 16)).astype(np.float32)
    recs = [_record(s, f"d{i}", text=f"text {i}", vector=vecs[i]) for i in range(5)]
    opened = s.open_records([f"d{i}" for i in range(5)], recs)
    assert len(opened) == 5 and "text" not in repr(opened)
    assert opened.vectors.dtype == np.float32 and np.max(np.abs(opened.vectors - vecs)) < 1e-2
    assert opened.payload(3).text == "text 3" and opened.payload(3).doc_id == "d3"
    with pytest.raises(SealedRecordError, match="position 2"):  # one candidate of another document: none opens
        s.open_records([f"d{i}" for i in range(5)], recs[:2] + [recs[4]] + recs[3:])
    empty = s.seal("e", text="no vector", metadata=None, vector=None)
    with pytest.raises(SealedRecordError, match="exact vector"):
        s.open_records(["d0", "e"], [recs[0], empty]).vectors


def test_the_associated_data_is_the_sorted_json_of_format_1() -> None:
    import json

    s = _sealer(_ef())
    for sid in ("d1", "pv-abc", 'quote " back \\ é ☃ \U0001f600', "\n\t"):
        body = {"store": s.store, "id": sid, "field": "doc", "v": 1}
        want = b"private_vectors/sealed/v1\x00" + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        assert s._aad(sid) == want


def test_a_record_moved_to_another_store_is_refused() -> None:
    ef_a, ef_b = _ef(), _ef()  # same key, two stores: two data keys
    a, b = _sealer(ef_a), _sealer(ef_b)
    assert a.store != b.store
    with pytest.raises(SealedRecordError):
        b.open("d1", _record(a))


def test_a_record_does_not_open_with_another_key(monkeypatch) -> None:
    ef = _ef()
    rec = _record(_sealer(ef))
    cfg = ef.get_config()
    with pytest.raises(ConfigMismatchError):  # the store's key check refuses another key first
        _reopened(cfg, monkeypatch, key=OTHER)
    forged = json.loads(json.dumps(cfg))  # a forged config with the other key's check value: the wrap refuses
    other = _ef(OTHER, key_salt=bytes.fromhex(cfg["key_salt"]))
    forged["key_check"] = other.get_config()["key_check"]
    with pytest.raises(SealedStoreError, match="does not unwrap"):
        Sealer.for_embedding(_reopened(forged, monkeypatch, key=OTHER))
    foreign = DataKey(b"\x01" * 32, bytes.fromhex(cfg["seal"]["data_key"]["store"]))  # another data key, same store id
    with pytest.raises(SealedRecordError):
        Sealer(foreign, Sealing()).open("d1", rec)


def test_size_classes() -> None:
    assert [size_class(n) for n in (1, 512, 513, 2000, 8192, 8193, 20000)] == [512, 512, 1024, 2048, 8192, 16384,
                                                                              24576]
    s = _sealer(_ef())
    vec = np.ones(16, dtype=np.float32)
    short, longer = (len(_record(s, f"d{i}", text=t, vector=vec)) for i, t in enumerate(("a", "b" * 300)))
    assert short == longer  # both under 512 bytes of plaintext: one class
    assert len(_record(s, "x", text="c" * 3000, vector=vec)) > short


# -- markers and ids ------------------------------------------------------------------------------
def test_markers_are_keyed_and_equal_for_equal_texts() -> None:
    s, t = _sealer(_ef()), _sealer(_ef())
    m = s.marker(TEXT)
    assert is_marker(m) and m == s.marker(TEXT) and m != s.marker(TEXT + " ") and m != t.marker(TEXT)
    assert not any(w.lower() in m for w in ("person", "flew", "tuesday", "review"))
    assert len(m) == len("pv-sealed:") + 26


def test_hmac_ids() -> None:
    s = _sealer(_ef(seal=Sealing(ids="hmac")))
    sid = s.stored_id("maria.lopez@example.org")
    assert sid.startswith("pv-") and "maria" not in sid and sid == s.stored_id("maria.lopez@example.org")
    rec = _record(s, "maria.lopez@example.org")
    assert s.open(sid, rec).doc_id == "maria.lopez@example.org"
    with pytest.raises(SealedRecordError):
        s.open("maria.lopez@example.org", rec)  # bound to the stored id
    assert _sealer(_ef()).stored_id("d1") == "d1"


# -- the data key -----------------------------------------------------------------------------------
def test_no_key_material_in_the_config_or_a_repr(monkeypatch) -> None:
    ef = _ef()
    s = _sealer(ef)
    cfg = json.dumps(ef.get_config())
    dek = ef.pipeline.seal.data_key(ef.pipeline.keying).exposed()
    for form in (dek.hex(), base64.b64encode(dek).decode(), base64.urlsafe_b64encode(dek).decode().rstrip("="), KEY):
        assert form not in cfg
    assert set(ef.get_config()["seal"]) == {"v", "readable_metadata", "ids", "vector", "keyring", "data_key"}
    assert set(ef.get_config()["seal"]["data_key"]) == {"store", "wrapper", "wrapped"}
    payload = s.open("d1", _record(s))
    for obj in (s, ef.pipeline.seal, ef.pipeline.seal.data_key(ef.pipeline.keying), LocalKeyWrapper(KEY), payload,
                Sealing(keyring="/tmp/ring.json")):
        text = repr(obj)
        assert dek.hex() not in text and KEY not in text and TEXT not in text and "ring.json" not in text
    for obj in (s, ef.pipeline.seal, ef.pipeline.seal.data_key(ef.pipeline.keying), LocalKeyWrapper(KEY), payload):
        with pytest.raises(TypeError):
            pickle.dumps(obj)
    monkeypatch.setenv(KEY_ENV, KEY)  # the function pickles as its config: the wrapped key, never the key
    blob = pickle.dumps(ef)
    assert dek not in blob and KEY.encode() not in blob
    assert pickle.loads(blob).get_config()["seal"] == ef.get_config()["seal"]


def test_the_wrap_subkey_is_its_own() -> None:
    sched = SecretKey.resolve(KEY).schedule("v2", b"s" * 16)
    assert len(sched.wrap) == 32 and len({sched.wrap, sched.noise, sched.restore, sched.surrogate}) == 4
    assert repr(sched.wrap) == "<secret>"


def test_the_data_key_is_made_once_and_adopted_on_reopen(monkeypatch) -> None:
    ef = _ef()
    first = ef.get_config()["seal"]
    assert ef.get_config()["seal"] == first  # made once
    rec = _record(_sealer(ef))
    again = _reopened(ef.get_config(), monkeypatch)
    assert again.get_config()["seal"] == first
    assert Sealer.for_embedding(again).open("d1", rec).text == TEXT


class FakeKms:
    """A KMS stand-in: wraps with its own key, records its key name."""

    def __init__(self, name: str = "projects/p/keys/k1") -> None:
        self.name, self._w = name, LocalKeyWrapper(SecretKey.resolve("kms-master-key-Q8vN2xL5", env=None))

    def wrap(self, data_key: bytes, context: bytes) -> str:
        return self._w.wrap(data_key, context)

    def unwrap(self, wrapped: str, context: bytes) -> bytes:
        return self._w.unwrap(wrapped, context)

    def describe(self) -> dict:
        return {"kind": "fake-kms", "key": self.name}


def test_a_kms_wrapper_is_recorded_by_its_description(monkeypatch) -> None:
    kms = FakeKms()
    ef = _ef(seal=Sealing(wrapper=kms))
    assert ef.get_config()["seal"]["data_key"]["wrapper"] == {"kind": "fake-kms", "key": kms.name}
    rec = _record(_sealer(ef))
    bare = _reopened(ef.get_config(), monkeypatch)
    with pytest.raises(SealedStoreError, match="fake-kms"):
        Sealer.for_embedding(bare)  # the store names its wrapper; without it nothing opens
    monkeypatch.setenv(KEY_ENV, KEY)
    with_kms = _ef(None, seal=Sealing(wrapper=kms))
    with_kms.pipeline.bind(ef.get_config(), "the test store")
    assert Sealer.for_embedding(with_kms).open("d1", rec).text == TEXT
    other = _ef(None, seal=Sealing(wrapper=FakeKms("projects/p/keys/k2")))
    with pytest.raises(ConfigMismatchError, match="wrapped by"):
        other.pipeline.bind(ef.get_config(), "the test store")


def test_the_data_key_is_not_part_of_the_drift_identity() -> None:
    a, b = _ef(), _ef()
    ca, cb = a.get_config(), b.get_config()
    assert ca["seal"]["data_key"] != cb["seal"]["data_key"]
    assert a == b and hash(a) == hash(b)
    check_config_compatible(ca, cb)


# -- the keyring ----------------------------------------------------------------------------------
def test_a_keyring_holds_document_keys_under_keyed_names(tmp_path) -> None:
    ring = tmp_path / "ring.json"
    s = _sealer(_ef(seal=Sealing(keyring=ring)))
    recs = s.seal_many(["maria", "tomas"], texts=["one", "two"], metadatas=None,
                       vectors=np.ones((2, 8), dtype=np.float32))
    body = ring.read_text()
    assert "maria" not in body and "tomas" not in body and len(json.loads(body)["keys"]) == 2
    assert s.seal("maria", text="one", metadata=None, vector=np.ones(8)) == recs[0]  # the key is kept: same bytes
    assert s.forget(["maria"]) == 1 and s.forget(["maria"]) == 0
    with pytest.raises(SealedRecordError, match="destroyed"):
        s.open("maria", recs[0])
    assert s.open("tomas", recs[1]).text == "two"
    assert len(json.loads(ring.read_text())["keys"]) == 1


def test_a_keyring_store_needs_its_keyring(tmp_path, monkeypatch) -> None:
    ef = _ef(seal=Sealing(keyring=tmp_path / "ring.json"))
    rec = _record(_sealer(ef))
    bare = _reopened(ef.get_config(), monkeypatch)
    with pytest.raises(SealedStoreError, match="keyring"):
        Sealer.for_embedding(bare)
    monkeypatch.setenv(KEY_ENV, KEY)
    given = _ef(None, seal=Sealing(keyring=tmp_path / "ring.json"))
    given.pipeline.bind(ef.get_config(), "the test store")
    assert Sealer.for_embedding(given).open("d1", rec).text == TEXT
    assert KeyringFile(tmp_path / "ring.json").get("nothing") is None


# -- seal= ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("seal", "keyed", "expected"), [
    (None, True, Sealing()), (None, False, None), (True, True, Sealing()), (False, True, None), (False, False, None),
    ({"ids": "hmac"}, True, Sealing(ids="hmac")), (Sealing(vector="float32"), True, Sealing(vector="float32")),
])
def test_resolve_sealing_table(seal, keyed, expected) -> None:
    assert resolve_sealing(seal, keyed=keyed) == expected
    resolved = resolve_options(EmbeddingOptions(seal=seal), dim=16, keyed=keyed)
    assert resolved.seal == (expected or False)
    assert resolve_options(resolved, dim=16, keyed=keyed).seal == resolved.seal  # a fixed point


@pytest.mark.parametrize("seal", [True, Sealing(), {"ids": "hmac"}])
def test_sealing_without_a_key_names_the_key(seal) -> None:
    with pytest.raises(InvalidParameterError, match=r"^key"):
        _ef(None, seal=seal)


@pytest.mark.parametrize(("seal", "parameter"), [
    ("yes", "seal"), ({"colour": 1}, "seal"), ({"ids": "uuid"}, "ids"), ({"vector": "int8"}, "vector"),
    ({"readable_metadata": "year"}, "readable_metadata"), ({"readable_metadata": [1]}, "readable_metadata"),
    ({"keyring": 3}, "keyring"), ({"wrapper": object()}, "wrapper"),
])
def test_bad_seal_options_name_the_parameter(seal, parameter) -> None:
    with pytest.raises((InvalidParameterError, InvalidTypeError)) as err:
        _ef(seal=seal)
    assert err.value.parameter == parameter


def test_an_unkeyed_function_records_seal_false() -> None:
    assert _ef(None).get_config()["seal"] is False
    assert _ef(seal=False).get_config()["seal"] is False


def test_reopen_adopts_the_store_s_choice_and_refuses_another(monkeypatch) -> None:
    sealed = _ef(seal=Sealing(readable_metadata=["year"])).get_config()
    plain = _ef(seal=False).get_config()
    old = {k: v for k, v in plain.items() if k != "seal"}  # written before sealing existed
    assert _reopened(sealed, monkeypatch).get_config()["seal"]["readable_metadata"] == ["year"]
    assert _reopened(plain, monkeypatch).get_config()["seal"] is False
    assert _reopened(old, monkeypatch).get_config()["seal"] is False
    monkeypatch.setenv(KEY_ENV, KEY)
    for seal, config in ((False, sealed), (True, old), (Sealing(), plain), (Sealing(readable_metadata=["city"]), sealed),
                         (Sealing(ids="hmac"), sealed)):
        ef = _ef(None, seal=seal)
        with pytest.raises(ConfigMismatchError, match=r"^seal"):
            ef.pipeline.bind(config, "the test store")
    ef = _ef(None, seal=True)  # True, or a Sealing with defaults: the store's settings
    ef.pipeline.bind(sealed, "the test store")
    assert ef.get_config()["seal"] == sealed["seal"]


def test_a_function_that_sealed_for_one_store_refuses_another() -> None:
    ef = _ef()
    _record(_sealer(ef))
    with pytest.raises(ConfigMismatchError, match="another store"):
        ef.pipeline.bind(_ef().get_config(), "the other store")


def test_a_keyless_reader_of_a_sealed_store_is_told_to_give_the_key() -> None:
    cfg = _ef().get_config()
    reader = rebuild(cfg, "the test store", use_cache=False)
    assert reader.get_config()["seal"] == cfg["seal"]  # keeps the store's record
    with pytest.raises(SealedStoreError, match=r"^key"):
        Sealer.for_embedding(reader)
    with pytest.raises(InvalidParameterError, match=r"^embedding"):
        Sealer.for_embedding(_ef(None))


# -- the pipeline's exact vectors ---------------------------------------------------------------------
def test_exact_vectors_come_from_the_same_pass() -> None:
    ef = _ef()
    texts = ["Maria Lopez flew to Madrid.", "A second, unrelated sentence."]
    sanitized, noisy, exact = ef.pipeline.embed_documents(texts, exact=True)
    assert (sanitized, noisy.tolist()) == (ef.pipeline.embed_documents(texts)[0], ef.embed_array(texts).tolist())
    _, clean = ef.pipeline.encode(sanitized, "texts")
    assert exact.dtype == np.float32 and np.allclose(exact, clean, atol=1e-6)
    assert not np.allclose(exact, noisy[:, :exact.shape[1]], atol=1e-2)
    stored, again = ef.pipeline.embed_sanitized(sanitized, exact=True)
    assert np.array_equal(stored, noisy) and np.array_equal(again, exact)
    q, q_exact = ef.pipeline.embed_queries(["Madrid"], exact=True)
    assert np.array_equal(q, ef.embed_query_array(["Madrid"]))
    assert q_exact.shape == (1, ef.dim) and q_exact.dtype == np.float32
    assert np.allclose(q_exact, ef.pipeline.encode(ef.pipeline.sanitize_queries(["Madrid"]), "q")[1], atol=1e-6)


# -- re-ranking ---------------------------------------------------------------------------------------
def test_candidate_count_rule() -> None:
    from private_vectors.sealed import rerank as rr

    def documented(k: int, eps: float, n: int) -> int:  # the docstring's formula, written out
        share = 0.5 * math.erfc(-(rr.RULE_Z - rr.RULE_A * eps) / math.sqrt(2.0))
        return min(n, max(10 * k, 200, math.ceil(k / 10 * n * share)))

    for k, eps, n in [(10, 5.0, 105_183), (10, 10.0, 105_183), (10, 20.0, 105_183), (5, 10.0, 1_000_000),
                      (50, 7.5, 2_000_000), (10, 40.0, 100_000), (1, 10.0, 10)]:
        assert candidate_count(k, eps, n) == documented(k, eps, n)
    # the floor for small stores and large ε, the cap at n, growth in n and k, fall in ε
    assert candidate_count(10, 40.0, 5_000) == 200 and candidate_count(50, 40.0, 5_000) == 500
    assert candidate_count(10, 10.0, 150) == 150
    sizes = [candidate_count(10, 10.0, n) for n in (10**4, 10**5, 10**6, 10**7)]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    by_eps = [candidate_count(10, e, 10**6) for e in (2.0, 5.0, 10.0, 20.0, 40.0)]
    assert by_eps == sorted(by_eps, reverse=True) and by_eps[0] > by_eps[-1]
    assert candidate_count(20, 5.0, 10**6) >= 2 * candidate_count(10, 5.0, 10**6) - 1
    assert candidate_count(5, 10.0, 10_000, candidates=40) == 40
    with pytest.raises(InvalidParameterError, match=r"^candidates"):
        candidate_count(5, 10.0, 100, candidates=3)
    with pytest.raises(InvalidParameterError, match=r"^eps"):
        candidate_count(5, 0.0, 100)
    with pytest.raises(InvalidParameterError, match=r"^eps"):
        candidate_count(5, float("inf"), 100)


def test_exact_distances_follow_chroma_s_conventions() -> None:
    q = np.array([1.0, 0.0])
    x = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]])
    assert np.allclose(exact_distances(q, x, "l2"), [0.0, 5.0, 4.0])
    assert np.allclose(exact_distances(q, x, "ip"), [0.0, 1.0, 2.0])
    assert np.allclose(exact_distances(q, x, "cosine"), [0.0, 1.0, 2.0])
    order, dist = rerank(q, x, 2, "l2")
    assert order.tolist() == [0, 2] and np.allclose(dist, [0.0, 4.0])


def test_mmr_prefers_a_diverse_second_result() -> None:
    q = np.array([1.0, 0.2, 0.0])
    x = np.array([[1.0, 0.2, 0.0], [1.0, 0.21, 0.0], [0.7, 0.0, 0.7]])
    assert mmr(q, x, 2, lambda_mult=1.0) == [0, 1]
    assert mmr(q, x, 2, lambda_mult=0.3) == [0, 2]
