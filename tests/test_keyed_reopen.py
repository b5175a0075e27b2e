"""Issue 16: keyed noise survives every reopen, a wrong key is always refused (naming the
collection, never the key), old (v1) collections keep their derivation, the key never leaks."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest

import _zygote
from private_vectors import PrivateEmbedding
from private_vectors.errors import (
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    PrivacyWarning,
)
from private_vectors.keys import KEY_ENV, SecretKey, legacy_key_check

KEY = "reopen-test-key-5b1e9c0d7a"
OTHER = "another-key-of-enough-length"
DOCS = ["Maria Lopez flew to Madrid on Monday.", "The quarterly revenue rose by 4%.",
        "cough and fever since Tuesday", "snow on the mountain trail"]
FIXTURE = Path(__file__).parent / "data" / "keyed_v1_main.json"

chromadb = pytest.importorskip("chromadb")


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def _run(code: str, env_key: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    if env_key is not None:
        env[KEY_ENV] = env_key
    res = _zygote.run(["-c", textwrap.dedent(code)], timeout=300, env=env)  # a new process (tests/_zygote.py)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout.strip().splitlines()[-1]


def _tb_locals(exc: BaseException) -> str:
    tb = exc.__traceback__
    assert tb is not None
    return "".join(traceback.TracebackException(type(exc), exc, tb.tb_next, capture_locals=True).format())


# -- point 1: idempotence after a documented reopen --------------------------------------------------------
REOPEN_CODE = """
    import json, chromadb, numpy as np
    import private_vectors.chroma                   # the library's Chroma integration: Chroma can rebuild it
    client = chromadb.PersistentClient(path={path!r})
    col = client.get_collection("notes")            # no function: rebuilt from the stored config
    stored = np.asarray(col.get(ids=["d0"], include=["embeddings"])["embeddings"][0])
    col.upsert(ids=["d0"], documents=[{doc!r}])      # re-ingest through the collection
    again = np.asarray(col.get(ids=["d0"], include=["embeddings"])["embeddings"][0])
    print(json.dumps({{"gap": float(np.abs(stored - again).max()), "count": col.count()}}))
"""


@pytest.mark.parametrize("model", ["fake:384", None], ids=["fake-384", "real-minilm-384"])
def test_keyed_reingest_after_chroma_reopen_in_new_process(tmp_path, model):
    """main: the config round trip turned unit 0.051031036307982884 into 0.05103103630798288,
    so re-ingesting after a reopen drew fresh noise (gap 0.401 with the real model)."""
    ef = PrivateEmbedding(model=model, eps=10, key=KEY)
    col = chromadb.PersistentClient(path=str(tmp_path)).create_collection("notes", embedding_function=ef)
    col.add(ids=[f"d{i}" for i in range(len(DOCS))], documents=DOCS)
    got = json.loads(_run(REOPEN_CODE.format(path=str(tmp_path), doc=DOCS[0]), KEY))
    assert got["count"] == len(DOCS)
    assert got["gap"] <= 1e-6


def test_keyed_reingest_after_faiss_reload_with_real_model(tmp_path):
    faiss_mod = pytest.importorskip("private_vectors.integrations.faiss")
    ef = PrivateEmbedding(eps=10, key=KEY)  # the real default model
    index = faiss_mod.build_index(DOCS, ef)
    stored = index.stored_vectors()
    index.save(tmp_path / "idx")
    code = f"""
        import json, os, numpy as np
        from private_vectors.integrations.faiss import PrivateFaissIndex
        idx = PrivateFaissIndex.load({str(tmp_path / "idx")!r})
        z = idx.embedding.embed_array({DOCS!r})
        print(json.dumps(np.asarray(z, dtype=float).tolist()))
    """
    again = np.asarray(json.loads(_run(code, KEY)))
    # cosine space: the index stores normalised vectors
    again /= np.linalg.norm(again, axis=1, keepdims=True)
    np.testing.assert_allclose(again, stored, atol=1e-6)


# -- point 2: a different key is refused on every reopen path ----------------------------------------------
def _keyed_collection(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path))
    col = client.create_collection("notes", embedding_function=PrivateEmbedding(model="fake", eps=10, key=KEY))
    col.add(ids=["d0"], documents=DOCS[:1])
    return client


def _assert_refused(exc_info, where: str):
    msg = str(exc_info.value)
    assert where in msg and "key" in msg
    assert KEY not in msg and OTHER not in msg
    assert OTHER not in _tb_locals(exc_info.value).replace(f"'{OTHER}'", "")  # only the test's own literal


def _open(client, method: str, ef):
    from private_vectors.chroma import create_collection, open_collection

    if method == "open_collection":
        return open_collection(client, "notes", ef)
    return create_collection(client, "notes", ef, get_or_create=True)


@pytest.mark.parametrize("method", ["open_collection", "create_collection(get_or_create=True)"])
def test_chroma_reopen_with_another_key_refused(tmp_path, method):
    client = _keyed_collection(tmp_path)
    with pytest.raises(ConfigMismatchError) as info:
        _open(client, method, PrivateEmbedding(model="fake", eps=10, key=OTHER))
    _assert_refused(info, "'notes'")
    # the same key is accepted and reproduces the stored vector
    col = _open(client, method, PrivateEmbedding(model="fake", eps=10, key=KEY))
    before = col.get(ids=["d0"], include=["embeddings"])["embeddings"][0]
    col.upsert(ids=["d0"], documents=DOCS[:1])
    np.testing.assert_array_equal(col.get(ids=["d0"], include=["embeddings"])["embeddings"][0], before)


def test_chroma_reopen_without_function_and_another_env_key_refused(tmp_path, monkeypatch):
    from private_vectors.chroma import open_collection

    client = _keyed_collection(tmp_path)
    monkeypatch.setenv(KEY_ENV, OTHER)
    with pytest.raises(ConfigMismatchError) as info:
        open_collection(client, "notes")
    _assert_refused(info, "'notes'")
    plain = client.get_collection("notes")  # Chroma rebuilds the stored function at first use, and refuses
    with pytest.raises(ValueError, match="key") as raw:
        plain.add(ids=["x"], documents=["new"])
    assert OTHER not in str(raw.value) and KEY not in str(raw.value)
    assert plain.count() == 1
    monkeypatch.delenv(KEY_ENV)  # a reader without any key may still query
    col = client.get_collection("notes")
    assert col.query(query_texts=["travel"], n_results=1)["ids"][0] == ["d0"]
    with pytest.raises(ConfigMismatchError, match="keyed noise"):
        col.add(ids=["x"], documents=["new"])


def test_chroma_store_with_another_key_refused(tmp_path):
    pytest.importorskip("langchain_chroma")
    from private_vectors.integrations.langchain import chroma_store

    chroma_store(PrivateEmbedding(model="fake", eps=10, key=KEY), collection_name="lcstore",
                 persist_directory=str(tmp_path)).add_texts(DOCS[:2])
    with pytest.raises(ConfigMismatchError) as info:
        chroma_store(PrivateEmbedding(model="fake", eps=10, key=OTHER), collection_name="lcstore",
                     persist_directory=str(tmp_path))
    _assert_refused(info, "'lcstore'")


def test_faiss_load_with_another_key_refused(tmp_path, monkeypatch):
    faiss_mod = pytest.importorskip("private_vectors.integrations.faiss")
    folder = faiss_mod.build_index(DOCS, PrivateEmbedding(model="fake", eps=10, key=KEY)).save(tmp_path / "idx")
    with pytest.raises(ConfigMismatchError) as info:
        faiss_mod.PrivateFaissIndex.load(folder, PrivateEmbedding(model="fake", eps=10, key=OTHER))
    _assert_refused(info, str(folder))
    monkeypatch.setenv(KEY_ENV, OTHER)
    with pytest.raises(ConfigMismatchError) as info:
        faiss_mod.PrivateFaissIndex.load(folder)
    _assert_refused(info, str(folder))


def test_check_value_is_128_bits_through_scrypt_and_no_key_in_config():
    ef = PrivateEmbedding(model="fake", eps=10, key=KEY)
    cfg = ef.get_config()
    assert cfg["key_derivation"] == "v2" and len(cfg["key_check"]) == 32
    assert len(bytes.fromhex(cfg["key_salt"])) == 16 and cfg["key_scrypt"]["n"] >= 2**14
    assert "key_id" not in cfg  # main: an 8-hex-digit HMAC of the raw key (brute-forced in 211 s)
    assert KEY not in json.dumps(cfg)
    # a new collection gets its own salt, hence its own check value
    other = PrivateEmbedding(model="fake", eps=10, key=KEY).get_config()
    assert other["key_salt"] != cfg["key_salt"] and other["key_check"] != cfg["key_check"]


# -- versions: a collection written by main (derivation v1) keeps reproducing its vectors ---------------------
def test_v1_vectors_written_by_main_are_reproduced(monkeypatch):
    data = json.loads(FIXTURE.read_text())
    monkeypatch.setenv(KEY_ENV, data["key"])  # main accepted short keys; a v1 collection keeps working
    for cfg, vectors in zip(data["configs"], data["vectors"], strict=True):
        assert "key_derivation" not in cfg and len(cfg["key_id"]) == 8
        # as Chroma returns it: the unit one ulp off (the point-1 round trip)
        cfg = {**cfg, "unit": float(repr(cfg["unit"])[:-1]) if len(repr(cfg["unit"])) > 18 else cfg["unit"]}
        ef = PrivateEmbedding.build_from_config(cfg)
        assert ef.get_config()["key_derivation"] == "v1"
        np.testing.assert_allclose(ef.embed_array(data["texts"]), np.asarray(vectors), rtol=0, atol=1e-6)
    # the wrong key is refused against the v1 check value too
    monkeypatch.setenv(KEY_ENV, OTHER)
    with pytest.raises(ConfigMismatchError, match="key"):
        PrivateEmbedding.build_from_config(data["configs"][0])


def test_v1_chroma_collection_reopened_keeps_v1(tmp_path, monkeypatch):
    data = json.loads(FIXTURE.read_text())
    monkeypatch.setenv(KEY_ENV, data["key"])
    ef = PrivateEmbedding.build_from_config(data["configs"][0])  # a function bound to the v1 record
    col = chromadb.PersistentClient(path=str(tmp_path)).create_collection("old", embedding_function=ef)
    col.add(ids=["d0"], documents=data["texts"][:1])
    np.testing.assert_allclose(col.get(ids=["d0"], include=["embeddings"])["embeddings"][0],
                               data["vectors"][0][0], atol=1e-6)
    got = json.loads(_run(REOPEN_CODE.format(path=str(tmp_path), doc=data["texts"][0]).replace('"notes"', '"old"'),
                          data["key"]))
    assert got["gap"] <= 1e-6


# -- point 3: no key material in exceptions or frame locals ----------------------------------------------------
def test_constructor_errors_never_show_the_key_in_tracebacks():
    for kwargs, exc_type in [(dict(key="short!"), InvalidParameterError),
                             (dict(key=KEY, eps=-1), InvalidParameterError),
                             (dict(key=KEY, mechanism="bogus"), InvalidParameterError),
                             (dict(key=KEY, query="bogus"), InvalidParameterError),
                             (dict(key=12345678901234567890), InvalidTypeError)]:
        secret = str(kwargs["key"])
        with pytest.raises(exc_type) as info:
            PrivateEmbedding(model="fake", eps=kwargs.pop("eps", 10), **kwargs)
        assert secret not in str(info.value)
        assert secret not in _tb_locals(info.value), kwargs


def test_non_utf8_env_key_through_private_embedding():
    code = """
        import json
        from private_vectors import PrivateEmbedding
        ef = PrivateEmbedding(model="fake", eps=10)
        print(json.dumps({"keyed": ef.get_config()["keyed"], "repr": repr(ef)}))
    """
    env_b = {k.encode(): v.encode() for k, v in os.environ.items() if k != KEY_ENV}
    env_b[KEY_ENV.encode()] = b"\xff\xfe-latin1-\xe9-secret-bytes"
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, env=env_b, timeout=120)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    assert json.loads(res.stdout.decode().strip().splitlines()[-1])["keyed"] is True
    assert b"secret-bytes" not in res.stdout + res.stderr


# -- pickling --------------------------------------------------------------------------------------------------
def test_pickle_never_contains_the_key(tmp_path):
    ef = PrivateEmbedding(model="fake", eps=10, key=KEY)
    Z = ef.embed_array(DOCS)
    blob = pickle.dumps(ef)
    assert KEY.encode() not in blob and ef.pipeline.keying.schedule().noise not in blob
    (tmp_path / "ef.pkl").write_bytes(blob)
    code = f"""
        import json, pickle
        from private_vectors.errors import ConfigMismatchError
        ef = pickle.loads(open({str(tmp_path / "ef.pkl")!r}, "rb").read())
        try:
            ef.embed_array({DOCS!r})
            print(json.dumps({{"error": None}}))
        except ConfigMismatchError as exc:
            ef.set_key({KEY!r})
            print(json.dumps({{"error": str(exc), "z": ef.embed_array({DOCS!r}).tolist()}}))
    """
    got = json.loads(_run(code, None))  # no key in the environment: a clear error, then set_key
    assert "keyed noise" in got["error"] and KEY_ENV in got["error"]
    np.testing.assert_allclose(np.asarray(got["z"]), Z, atol=1e-6)
    z_env = json.loads(_run(code.replace("ef.embed_array", "ef.embed_array", 1), KEY))  # env key: no error
    assert z_env["error"] is None
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(PrivateEmbedding(model=lambda t: np.ones((len(t), 4)), eps=10))


# -- point 6 through PrivateEmbedding ----------------------------------------------------------------------------
def test_tiny_eps_is_blamed_on_eps_not_the_texts():
    with pytest.raises(InvalidParameterError, match=r"^epsilon|^eps") as info:
        PrivateEmbedding(model="fake", eps=1e-300).embed_array(DOCS)
    assert "texts" not in str(info.value).split(":")[0]


@pytest.mark.parametrize("batch", [{"a": "x"}, ["ok", "\ud800"], ["\u200b"]], ids=["dict", "surrogate", "zero-width"])
def test_bad_batches_refused_by_name(tmp_path, batch):
    ef = PrivateEmbedding(model="fake", eps=10)
    with pytest.raises((InvalidParameterError, InvalidTypeError), match=r"texts|input"):
        ef.embed_documents(batch)
    col = chromadb.PersistentClient(path=str(tmp_path)).create_collection("col", embedding_function=ef)
    if isinstance(batch, list):
        with pytest.raises(Exception):  # noqa: B017 - Chroma may wrap ours; what matters: nothing stored
            col.add(ids=[f"i{k}" for k in range(len(batch))], documents=batch)
        assert col.count() == 0


def test_all_zero_vectors_from_a_callable_encoder_refused():
    ef = PrivateEmbedding(model=lambda texts: np.zeros((len(texts), 8)), eps=10)
    with pytest.raises(InvalidParameterError, match="non-zero"):
        ef.embed_array(DOCS)


def test_defaulted_eps_warns_and_is_reported():
    with pytest.warns(PrivacyWarning, match="eps not given"):
        ef = PrivateEmbedding(model="fake")
    assert ef.privacy_report()["eps_defaulted"] is True
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        assert PrivateEmbedding(model="fake", eps=10).privacy_report()["eps_defaulted"] is False


def test_reingesting_without_a_key_warns():
    ef = PrivateEmbedding(model="fake", eps=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        ef.embed_array(DOCS[:2])
    with pytest.warns(PrivacyWarning, match="without a key"):
        ef.embed_array(DOCS[1:3])
    with warnings.catch_warnings():  # keyed: re-ingestion is harmless, no warning
        warnings.simplefilter("error", PrivacyWarning)
        keyed = PrivateEmbedding(model="fake", eps=10, key=KEY)
        keyed.embed_array(DOCS[:2])
        keyed.embed_array(DOCS[:2])


def test_same_process_reopen_without_function_uses_the_live_keyed_function(tmp_path):
    ef = PrivateEmbedding(model="fake", eps=10, key=KEY)
    client = chromadb.PersistentClient(path=str(tmp_path))
    client.create_collection("notes", embedding_function=ef).add(ids=["d0"], documents=DOCS[:1])
    col = client.get_collection("notes")  # no function, no env key: the live function (with its key)
    before = col.get(ids=["d0"], include=["embeddings"])["embeddings"][0]
    col.upsert(ids=["d0"], documents=DOCS[:1])
    np.testing.assert_array_equal(col.get(ids=["d0"], include=["embeddings"])["embeddings"][0], before)


def test_one_function_cannot_serve_two_keyed_collections_with_different_salts(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path))
    for name in ("first", "second"):
        client.create_collection(name, embedding_function=PrivateEmbedding(model="fake", eps=10, key=KEY))
    from private_vectors.chroma import add_documents, open_collection

    ef = PrivateEmbedding(model="fake", eps=10, key=KEY)
    add_documents(open_collection(client, "first", ef), ids=["d0"], documents=DOCS[:1])
    with pytest.raises(ConfigMismatchError, match=r"'second'.*one PrivateEmbedding per keyed collection"):
        open_collection(client, "second", ef)


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_errors_inside_the_keyed_path_show_no_key_material(version, monkeypatch):
    if version == "v1":
        data = json.loads(FIXTURE.read_text())
        monkeypatch.setenv(KEY_ENV, KEY)
        cfg = {**data["configs"][0], "key_id": legacy_key_check(SecretKey.resolve(KEY))}
        ef = PrivateEmbedding.build_from_config(cfg)
    else:
        ef = PrivateEmbedding(model="fake:384", eps=10, key=KEY)
    sched = ef.pipeline.keying.schedule()
    ef.mechanism.epsilon = 1e-300  # the noise overflows inside the keyed stream's call
    with pytest.raises(InvalidParameterError, match="epsilon") as info:
        ef.embed_array(DOCS)
    shown = _tb_locals(info.value)
    for secret in (KEY, KEY.encode().hex(), repr(KEY.encode()), sched.noise.hex(), repr(bytes(sched.noise))):
        assert secret not in shown, version


# -- a fixed, public salt (benchmarks): keyed vectors reproduce across collections and processes ----------
def test_fixed_key_salt_reproduces_keyed_vectors_across_collections(tmp_path):
    salt = bytes(range(16))
    got = []
    for name in ("first", "second"):  # each collection records its config: the salt would be random without key_salt
        ef = PrivateEmbedding(model="fake", eps=10, key=KEY, key_salt=salt)
        col = chromadb.PersistentClient(path=str(tmp_path / name)).create_collection(name, embedding_function=ef)
        col.add(ids=["d0", "d1"], documents=DOCS[:2])
        assert col.configuration_json["embedding_function"]["config"]["key_salt"] == salt.hex()
        got.append(np.asarray(col.get(ids=["d0", "d1"], include=["embeddings"])["embeddings"]))
    np.testing.assert_array_equal(got[0], got[1])
    # the default stays a random salt per collection: the same key gives other vectors
    fresh = [PrivateEmbedding(model="fake", eps=10, key=KEY) for _ in range(2)]
    salts = [f.get_config()["key_salt"] for f in fresh]
    assert salts[0] != salts[1]
    assert not np.array_equal(fresh[0](DOCS[:2]), fresh[1](DOCS[:2]))


def test_key_salt_is_validated_by_name():
    with pytest.raises(InvalidParameterError, match=r"key_salt.*only together with a key"):
        PrivateEmbedding(model="fake", eps=10, key_salt=bytes(16))
    with pytest.raises(InvalidParameterError, match=r"key_salt.*at least 16"):
        PrivateEmbedding(model="fake", eps=10, key=KEY, key_salt=b"short")
    with pytest.raises(InvalidTypeError, match="key_salt"):
        PrivateEmbedding(model="fake", eps=10, key=KEY, key_salt="00" * 16)
