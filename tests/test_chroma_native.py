"""Native Chroma, protected: add_documents stores only sanitized text, records and checks the
configuration and key, reopens in a new process with the key from the parameter or the
environment; the keyed query index lives in its own collection (O(batch) writes, lazy load,
old stores migrated, concurrent writers through a server)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

import _zygote
from private_vectors import PrivateEmbedding
from private_vectors.errors import ConfigMismatchError, InvalidParameterError, PrivacyWarning
from private_vectors.keys import KEY_ENV
from private_vectors.text import Sanitizer
from private_vectors.text.recognizers.names import NameDetector
from private_vectors.text.recognizers.regex import RegexDetector

chromadb = pytest.importorskip("chromadb")
from private_vectors.chroma import (  # noqa: E402
    add_documents,
    create_collection,
    get,
    open_collection,
    query_index_collection_name,
)
from private_vectors.integrations import chroma as integration  # noqa: E402
from private_vectors.integrations import chroma_query_index  # noqa: E402

KEY = "native-chroma-key-Rk3vW8qLm2"
OTHER = "other-native-key-Pz7sT1nYc5"
DOCS = ["Amelia Okafor flew to Lagos on Monday.", "Write to amelia.okafor@example.com about the invoice.",
        "Tomas Berger met Amelia Okafor."]
FIXTURE = Path(__file__).parent / "data" / "keys_main_chroma"
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def _ef(key=KEY, eps=10.0):
    san = Sanitizer("PII", policy="redact", key=key, detectors=[RegexDetector(), NameDetector()])
    return PrivateEmbedding(model="fake:32", eps=eps, key=key, sanitize=san)


def _run(code: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    full["PYTHONPATH"] = SRC + os.pathsep + full.get("PYTHONPATH", "")
    full.update(env or {})
    out = _zygote.run(["-c", textwrap.dedent(code)], env=full, timeout=300)  # a new process (tests/_zygote.py)
    if check:
        assert out.returncode == 0, out.stderr[-3000:]
    return out


def _write(folder: Path) -> None:
    col = create_collection(chromadb.PersistentClient(path=str(folder)), "notes", _ef())
    add_documents(col, ids=["a", "b", "c"], documents=DOCS, metadatas=[{"author": "Amelia Okafor"}, None, None])


# -- what is stored --------------------------------------------------------------------------------
def test_only_sanitized_text_and_sanitized_metadata_are_stored(tmp_path):
    _write(tmp_path)
    col = chromadb.PersistentClient(path=str(tmp_path)).get_collection("notes", embedding_function=_ef())
    got = col.get(ids=["a"], include=["documents", "metadatas"])  # sealed (a key): markers and one record
    assert got["documents"][0].startswith("pv-sealed:") and list(got["metadatas"][0]) == ["pv_sealed"]
    held = get(col, ["a"])  # the key holder's read opens the record
    assert held["documents"][0] == "<PERSON> flew to <LOCATION> on Monday." or "Amelia" not in held["documents"][0]
    meta = dict(held["metadatas"][0])
    assert meta.pop("pv_restore").startswith("pvr1.")  # keyed text stage: the encrypted restore record
    assert meta == {"author": "<PERSON>"}
    raw = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()).lower()
    for value in (b"amelia", b"okafor", b"berger"):
        assert value not in raw


def test_metadata_without_a_text_stage_warns_and_keep_is_silent(tmp_path):
    col = create_collection(chromadb.PersistentClient(path=str(tmp_path)), "plain",
                            PrivateEmbedding(model="fake:32", eps=10, key=KEY))
    with pytest.warns(PrivacyWarning, match="metadata"):
        assert add_documents(col, ids=["a"], documents=["snow"], metadatas=[{"who": "Amelia Okafor"}]) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        add_documents(col, ids=["b"], documents=["rain"], metadatas=[{"n": "3"}], metadata_text="keep")
    with pytest.raises(InvalidParameterError, match="metadata_text"):
        add_documents(col, ids=["c"], documents=["x"], metadata_text="drop")
    assert col.get(ids=["a"], include=["documents"])["documents"] == [None]  # no text stage: no text stored


def test_embedding_runs_on_the_protected_path(tmp_path, monkeypatch):
    from private_vectors.guard import on_protected_path

    ef = _ef()
    col = create_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes", ef)
    seen = []
    cls = type(ef.pipeline)
    original = cls.embed_sanitized
    monkeypatch.setattr(cls, "embed_sanitized", lambda self, texts, *a, **k: (
        seen.append(on_protected_path()), original(self, texts, *a, **k))[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # no raw-text warning on the protected path
        add_documents(col, ids=["a"], documents=DOCS[:1])
    assert seen and all(seen)


def test_a_collection_that_records_no_private_embedding_is_refused(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path))
    col = client.create_collection("plain")
    with pytest.raises(ConfigMismatchError, match="create_collection"):
        add_documents(col, ids=["a"], documents=DOCS[:1], embedding=_ef())
    assert col.count() == 0


def test_another_configuration_or_key_is_refused_on_reopen(tmp_path):
    _write(tmp_path)
    client = chromadb.PersistentClient(path=str(tmp_path))
    with pytest.raises(ConfigMismatchError, match="eps"):
        open_collection(client, "notes", _ef(eps=20))
    for how in ({"key": OTHER}, {"embedding_function": _ef(key=OTHER)}):
        with pytest.raises(ConfigMismatchError, match="key") as info:
            open_collection(client, "notes", **how)
        assert OTHER not in str(info.value) and KEY not in str(info.value)
    col = open_collection(client, "notes", key=KEY)
    with pytest.raises(InvalidParameterError, match="key"):
        open_collection(client, "notes", _ef(), key=KEY)
    assert col.count() == 3


# -- a new process: the key from the parameter or the environment ------------------------------------
_REOPEN = """
    import chromadb, os
    from private_vectors.chroma import add_documents, open_collection
    col = open_collection(chromadb.PersistentClient(path={db!r}), "notes"{key})
    ef = col._embedding_function
    print(ef.pipeline.sanitize_queries(["what did amelia okafor do"])[0])
    print(add_documents(col, ids=["d"], documents=["Amelia Okafor wrote again."])[0])
    print(col.query(query_texts=["okafor flight lagos"], n_results=1)["ids"][0][0], col.count())
"""


@pytest.mark.parametrize("source", ["parameter", "environment"])
def test_new_process_reopen_with_the_key_from_the_parameter_or_the_environment(tmp_path, source):
    _write(tmp_path)
    key = f", key={KEY!r}" if source == "parameter" else ""
    env = {KEY_ENV: KEY} if source == "environment" else None
    lines = _run(_REOPEN.format(db=str(tmp_path), key=key), env).stdout.split("\n")
    assert lines[0] == "what did <PERSON> do" and lines[1] == "<PERSON> wrote again."
    assert lines[2].split()[1] == "4"


def test_new_process_reopen_refuses_two_different_keys_and_a_wrong_one(tmp_path):
    _write(tmp_path)
    # the key reaches the child through a variable, not as a literal in its code: Python 3.13 prints
    # the source lines of `python -c` code in a traceback, which would show a literal key
    both = _run(_REOPEN.format(db=str(tmp_path), key=", key=__import__('os').environ['PV_PARAM_KEY']"),
                {KEY_ENV: OTHER, "PV_PARAM_KEY": KEY}, check=False)
    assert both.returncode != 0 and "different secrets" in both.stderr
    assert KEY not in both.stderr and OTHER not in both.stderr
    wrong = _run(_REOPEN.format(db=str(tmp_path), key=""), {KEY_ENV: OTHER}, check=False)
    assert wrong.returncode != 0 and "ConfigMismatchError" in wrong.stderr and OTHER not in wrong.stderr


# the environment source runs with -m slow (18 s on 2 cores); test_new_process_reopen_with_the_key_from_the_
# parameter_or_the_environment covers both sources by default
@pytest.mark.parametrize("source", ["parameter", pytest.param("environment", marks=pytest.mark.slow)])
def test_new_process_reopen_of_the_langchain_drop_in_with_a_keyed_text_stage(tmp_path, source):
    pytest.importorskip("langchain_chroma")
    code = """
        import os
        from private_vectors import PrivateEmbedding
        from private_vectors.langchain import Chroma, chroma_store
        from private_vectors.text import Sanitizer
        from private_vectors.text.recognizers.names import NameDetector
        from private_vectors.text.recognizers.regex import RegexDetector

        def ef():  # a keyed text stage (cheap detectors: the point is the keyed rebuild, not detection)
            secret = {key_expr}
            san = Sanitizer("PII", policy="redact", key=secret, detectors=[RegexDetector(), NameDetector()])
            return PrivateEmbedding(model="fake:32", eps=10, sanitize=san{key})

        store = Chroma(collection_name="notes", embedding_function=ef(), persist_directory={db!r})
        if {first}:
            store.add_texts(["Amelia Okafor flew to Lagos."])
        again = chroma_store(ef(), collection_name="notes", persist_directory={db!r})
        print(again.similarity_search("flight", k=1)[0].page_content)
    """
    key = f", key={KEY!r}" if source == "parameter" else ""
    key_expr = repr(KEY) if source == "parameter" else f"os.environ[{KEY_ENV!r}]"
    env = {KEY_ENV: KEY} if source == "environment" else None
    _run(code.format(db=str(tmp_path), key=key, key_expr=key_expr, first=True), env)
    out = _run(code.format(db=str(tmp_path), key=key, key_expr=key_expr, first=False), env).stdout  # a new process
    assert "<PERSON>" in out and "Amelia" not in out


# -- the keyed query index -------------------------------------------------------------------------------
def test_each_add_writes_only_its_batch_entries(tmp_path, monkeypatch):
    ef = _ef()
    col = create_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes", ef)
    written: list[int] = []
    real = chroma_query_index._index_collection

    def spy(collection, sanitizer, *, create):
        side = real(collection, sanitizer, create=create)
        if side is None:
            return None
        upsert = side.upsert
        side.upsert = lambda **kw: (written.append(len(kw["ids"])), upsert(**kw))[1]
        return side

    monkeypatch.setattr(chroma_query_index, "_index_collection", spy)
    names = ["Zelda Quorrington", "Marta Quillfeather", "Jonas Brightwater", "Priya Oakhurst", "Tomas Ellingsby"]
    for i, name in enumerate(names):
        add_documents(col, ids=[f"p{i}"], documents=[f"{name} called about order {i}."])
    side = chromadb.PersistentClient(path=str(tmp_path)).get_collection(query_index_collection_name(col))
    assert side.count() >= 5 and max(written) <= 4  # a batch's own entries, never the whole index
    assert integration.QUERY_INDEX_KEY not in (col.metadata or {})


def test_index_is_loaded_lazily_and_checked_against_the_key(tmp_path):
    _write(tmp_path)
    client = chromadb.PersistentClient(path=str(tmp_path))
    ef = _ef()
    open_collection(client, "notes", ef)
    assert ef.sanitizer.index.pending and not len(ef.sanitizer.index)  # nothing read yet
    assert ef.pipeline.sanitize_queries(["was okafor there"])[0] == "was <PERSON> there"  # the index caught it
    assert not ef.sanitizer.index.pending and len(ef.sanitizer.index)


def test_a_store_written_by_the_previous_version_opens_and_is_upgraded(tmp_path):
    folder = tmp_path / "db"
    shutil.copytree(FIXTURE, folder, ignore=shutil.ignore_patterns("*.md", "*.py"))
    key = "fixture-key-Qm7v2Lx9Tb4Wz8Rk"
    client = chromadb.PersistentClient(path=str(folder))
    col = open_collection(client, "old", key=key)
    assert integration.QUERY_INDEX_KEY in (col.metadata or {})
    ef = col._embedding_function
    assert "okafor" not in ef.pipeline.sanitize_queries(["what about amelia okafor"])[0].lower()  # the old index loads
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # the upgrade succeeds (it warns when it cannot)
        add_documents(col, ids=["d2"], documents=["Tomas Berger wrote to Amelia Okafor."])
    again = chromadb.PersistentClient(path=str(folder))
    meta = again.get_collection("old", embedding_function=ef).metadata or {}
    assert integration.QUERY_INDEX_KEY not in meta  # moved to its own collection
    side = again.get_collection(query_index_collection_name(col))
    assert side.count() >= 6  # the 5 old entries and the new ones
    import sqlite3

    rows = sqlite3.connect(folder / "chroma.sqlite3").execute(
        "select coalesce(config_json_str, '') || coalesce(schema_str, '') from collections").fetchall()
    recorded = " ".join(r[0] for r in rows)
    assert "Projectquill" not in recorded and "Acme Zorbatron" not in recorded and '"key_salt"' in recorded
    fresh = open_collection(chromadb.PersistentClient(path=str(folder)), "old", col._embedding_function)
    assert fresh.count() == 3


# -- two writers through a Chroma server ---------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_concurrent_writers_through_a_server_lose_no_index_entry(tmp_path):
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    if not Path(exe).exists():
        pytest.skip("the `chroma` CLI is not installed (pip install chromadb provides it)")
    port = _free_port()
    server = subprocess.Popen([exe, "run", "--path", str(tmp_path / "srv"), "--host", "127.0.0.1", "--port",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                if time.time() > deadline:
                    pytest.fail("the chroma server did not start within 60 s")
                time.sleep(0.5)
        create_collection(chromadb.HttpClient(host="127.0.0.1", port=port), "shared", _ef())
        writer = """
            import chromadb, sys
            from private_vectors import PrivateEmbedding
            from private_vectors.text import Sanitizer
            from private_vectors.text.recognizers.names import NameDetector
            from private_vectors.text.recognizers.regex import RegexDetector
            from private_vectors.chroma import add_documents, open_collection
            san = Sanitizer("PII", policy="redact", key={key!r}, detectors=[RegexDetector(), NameDetector()])
            ef = PrivateEmbedding(model="fake:32", eps=10, key={key!r}, sanitize=san)
            col = open_collection(chromadb.HttpClient(host="127.0.0.1", port={port}), "shared", ef)
            for i in range(8):
                add_documents(col, ids=[f"{who}{{i}}"], documents=[f"{name} visited store number {{i}}."])
        """
        env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
        env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
        procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(writer.format(key=KEY, port=port, who=who,
                                                                                       name=name))],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for who, name in (("w", "Amelia Okafor"), ("v", "Tomas Berger"))]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
        reader = _ef()
        col = open_collection(chromadb.HttpClient(host="127.0.0.1", port=port), "shared", reader)
        assert col.count() == 16
        out = reader.pipeline.sanitize_queries(["okafor", "berger"])
        assert out == ["<PERSON>", "<PERSON>"]  # both writers' entries are in the index
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
