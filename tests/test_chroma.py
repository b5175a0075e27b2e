"""Chroma: registration, perturbed storage, reopen in a new process, drift refusal on the
library's own paths, real server."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import _zygote

chromadb = pytest.importorskip("chromadb")

from private_vectors import PrivateEmbedding  # noqa: E402
from private_vectors.embedding import CHROMA_NAME, KEY_ENV  # noqa: E402
from private_vectors.errors import ConfigMismatchError, PrivateVectorsError  # noqa: E402
from private_vectors.integrations.chroma import (  # noqa: E402
    add_documents,
    check_collection,
    create_collection,
    open_collection,
)

DOCS = ["Maria Lopez flew to Madrid on Monday", "the patient had a cough and fever",
        "quarterly revenue grew by twelve percent", "the trail closes after snowfall",
        "John Smith called about the unpaid invoice"]
IDS = [f"d{i}" for i in range(len(DOCS))]


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def _run(code: str, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **(env or {})}
    full_env.pop(KEY_ENV, None) if env is None or KEY_ENV not in env else None
    res = _zygote.run(["-c", textwrap.dedent(code)], timeout=120, env=full_env)  # a new process (tests/_zygote.py)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_registered_under_stable_name():
    from chromadb.utils.embedding_functions import known_embedding_functions

    assert known_embedding_functions[CHROMA_NAME] is PrivateEmbedding
    pe = PrivateEmbedding(model="fake")
    assert pe.name() == CHROMA_NAME and not pe.is_legacy()
    assert pe.default_space() == "cosine" and pe.supported_spaces()[0] == "cosine"


def test_documents_are_stored_perturbed_and_queries_work(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=40, random_state=0)
    client = chromadb.PersistentClient(path=str(tmp_path))
    col = client.create_collection("notes", embedding_function=pe)
    col.add(ids=IDS, documents=DOCS)
    stored = np.asarray(col.get(ids=IDS, include=["embeddings"])["embeddings"])
    clean = pe.encoder.encode(DOCS)
    dist = np.linalg.norm(stored - clean, axis=1)
    assert np.all(dist > 0.1) and dist.mean() == pytest.approx(0.2, rel=0.3)  # E = 64·(1/8)/40
    assert col.configuration_json["hnsw"]["space"] == "cosine"
    res = col.query(query_texts=["cough fever patient"], n_results=1)
    assert res["ids"][0][0] == "d1"


def test_failed_batch_stores_nothing(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path))
    col = client.create_collection("notes", embedding_function=PrivateEmbedding(model="fake"))
    col.add(ids=["a"], documents=["first"])
    with pytest.raises((PrivateVectorsError, ValueError)):
        col.add(ids=["b", "c"], documents=["fine", "   "])
    assert col.count() == 1


def test_reopen_in_new_process_rebuilds_the_same_function_and_keyed_noise(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=15, mechanism="laplace", key="k-123-0123456789abc")
    client = chromadb.PersistentClient(path=str(tmp_path))
    col = client.create_collection("notes", embedding_function=pe)
    col.add(ids=IDS, documents=DOCS)
    expected_cfg = pe.get_config()
    del client, col
    out = _run(f"""
        import json, chromadb, numpy as np
        import private_vectors.chroma  # the library's Chroma integration registers the function
        client = chromadb.PersistentClient(path={str(tmp_path)!r})
        col = client.get_collection("notes")   # no embedding function passed
        ef = col.configuration["embedding_function"]
        res = col.query(query_texts=["cough fever patient"], n_results=1)
        col.add(ids=["again"], documents=[{DOCS[0]!r}])   # re-ingest with the env key
        e = col.get(ids=["d0", "again"], include=["embeddings"])["embeddings"]
        print(json.dumps({{"type": type(ef).__name__, "config": ef.get_config(), "top": res["ids"][0][0],
                          "same": bool(np.allclose(e[0], e[1]))}}))
    """, env={KEY_ENV: "k-123-0123456789abc"})
    got = json.loads(out.strip().splitlines()[-1])
    assert got["type"] == "PrivateEmbedding"
    for field in ("encoder", "mechanism", "eps", "unit", "space", "keyed", "key_derivation", "key_salt", "key_check"):
        assert got["config"][field] == expected_cfg[field]
    assert got["top"] == "d1"
    assert got["same"] is True  # keyed: re-ingesting gives the identical vector
    # without the key, adding documents is refused instead of drawing fresh noise
    out = _run(f"""
        import chromadb, private_vectors.chroma
        col = chromadb.PersistentClient(path={str(tmp_path)!r}).get_collection("notes")
        try:
            col.add(ids=["x"], documents=["new text"])
            print("ADDED")
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    assert "ConfigMismatchError" in out and "PRIVATE_VECTORS_KEY" in out


def test_conflicting_function_is_refused_on_the_library_s_paths(tmp_path):
    """Chroma compares embedding-function names only (nothing of it is patched): the library's
    own paths refuse another configuration, naming the collection."""
    client = chromadb.PersistentClient(path=str(tmp_path))
    client.create_collection("notes", embedding_function=PrivateEmbedding(model="fake", eps=10))
    for other in (PrivateEmbedding(model="fake", eps=20), PrivateEmbedding(model="fake:32", eps=10),
                  PrivateEmbedding(model="fake", eps=10, mechanism="purkayastha")):
        plain = client.get_collection("notes", embedding_function=other)  # Chroma's own check: names only
        with pytest.raises(ConfigMismatchError, match="collection 'notes'"):
            check_collection(plain, other)
        with pytest.raises(ConfigMismatchError, match="collection 'notes'"):
            add_documents(plain, ids=["x"], documents=["a note"])
        with pytest.raises(ConfigMismatchError, match="collection 'notes'"):
            open_collection(client, "notes", other)
        with pytest.raises(ConfigMismatchError, match="collection 'notes'"):
            create_collection(client, "notes", other, get_or_create=True)
    assert client.get_collection("notes").count() == 0  # nothing was written
    # the same configuration is accepted
    same = open_collection(client, "notes", PrivateEmbedding(model="fake", eps=10))
    assert same.name == "notes"


def test_open_collection_refuses_a_collection_without_private_embedding(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path))
    client.create_collection("plain", embedding_function=None, configuration={"hnsw": {"space": "ip"}})
    with pytest.raises(ConfigMismatchError, match="no PrivateEmbedding"):
        open_collection(client, "plain")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_real_chroma_server(tmp_path):
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    if not Path(exe).exists():
        pytest.skip("the `chroma` CLI is not installed")
    port = _free_port()
    proc = subprocess.Popen([exe, "run", "--path", str(tmp_path / "db"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = None
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                client = chromadb.HttpClient(host="127.0.0.1", port=port)
                client.heartbeat()
                break
            except Exception:
                client = None
                time.sleep(0.5)
        assert client is not None, "chroma server did not start"
        col = client.create_collection("notes", embedding_function=PrivateEmbedding(model="fake", eps=40))
        col.add(ids=IDS, documents=DOCS)
        out = _run(f"""
            import chromadb, private_vectors.chroma
            col = chromadb.HttpClient(host="127.0.0.1", port={port}).get_collection("notes")
            print(type(col.configuration["embedding_function"]).__name__)
            print(col.query(query_texts=["cough fever patient"], n_results=1)["ids"][0][0])
        """)
        assert out.split() == ["PrivateEmbedding", "d1"]
        with pytest.raises(ConfigMismatchError):
            open_collection(client, "notes", PrivateEmbedding(model="fake", eps=5))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_rebuild_in_the_same_process_reuses_the_live_stages_in_a_new_object(tmp_path):
    pe = PrivateEmbedding(model="fake", eps=12, random_state=3)
    client = chromadb.PersistentClient(path=str(tmp_path))
    client.create_collection("notes", embedding_function=pe)
    rebuilt = client.get_collection("notes").configuration["embedding_function"]
    assert rebuilt == pe and rebuilt is not pe  # no mutable instance shared between callers
    assert rebuilt.encoder is pe.encoder and rebuilt.mechanism is pe.mechanism  # nothing reloaded


def test_unrebuildable_function_fails_loudly_on_reopen_instead_of_falling_back(tmp_path):
    import gc

    from private_vectors.mechanisms import LaplaceMechanism

    client = chromadb.PersistentClient(path=str(tmp_path))
    pe = PrivateEmbedding(model="fake", mechanism=LaplaceMechanism(epsilon=50.0, unit=0.125))
    client.create_collection("notes", embedding_function=pe).add(ids=["a"], documents=["first note"])
    del pe
    gc.collect()
    with pytest.raises(ConfigMismatchError, match="'notes'.*cannot be rebuilt"):
        open_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes")
    plain = chromadb.PersistentClient(path=str(tmp_path)).get_collection("notes")
    for use in (lambda: plain.query(query_texts=["first note"], n_results=1),
                lambda: plain.add(ids=["b"], documents=["second note"])):
        with pytest.raises(ValueError, match="Could not build embedding function private_vectors"):
            use()  # Chroma refuses too, at first use: never its default function
    assert plain.count() == 1
    # passing the same function explicitly works
    again = PrivateEmbedding(model="fake", mechanism=LaplaceMechanism(epsilon=50.0, unit=0.125))
    col = chromadb.PersistentClient(path=str(tmp_path)).get_collection("notes", embedding_function=again)
    assert col.query(query_texts=["first note"], n_results=1)["ids"][0] == ["a"]


def test_reopen_with_a_builtin_concept_in_a_new_process(tmp_path):
    pe = PrivateEmbedding(model="fake", concept="PII", noise_concept="PII", eps=10, mechanism="mahalanobis")
    col = chromadb.PersistentClient(path=str(tmp_path)).create_collection("notes", embedding_function=pe)
    col.add(ids=IDS, documents=DOCS)
    out = _run(f"""
        import json, chromadb, private_vectors.chroma
        col = chromadb.PersistentClient(path={str(tmp_path)!r}).get_collection("notes")
        ef = col.configuration["embedding_function"]
        print(json.dumps({{"concept": ef.get_config()["concept"], "mechanism": ef.mechanism.name,
                          "transform": ef.query_transform.name, "space": ef.space,
                          "n": len(col.query(query_texts=["cough fever"], n_results=2)["ids"][0])}}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["concept"]["sha256"] == pe.get_config()["concept"]["sha256"]
    assert (got["mechanism"], got["transform"], got["space"], got["n"]) == ("mahalanobis", "wiener", "ip", 2)
