"""Nothing secret in clear: token lists and allow lists only as keyed HMACs, no raw key or subkey
in a local, repr or message, a check value per store, weak keys refused, a missing key check
refused, a default detector time limit."""

from __future__ import annotations

import json
import sqlite3
import time
import traceback
from pathlib import Path

import pytest

import _zygote
from private_vectors import PrivateEmbedding
from private_vectors.errors import ConfigMismatchError, InvalidParameterError
from private_vectors.keys import KEY_ENV, SecretBytes, SecretKey, generate
from private_vectors.text import Sanitizer
from private_vectors.text.concepts import TextConcept, TokenDetector
from private_vectors.text.detection import DEFAULT_TIMEOUT, DetectionError
from private_vectors.text.recognizers.regex import RegexDetector

KEY = "hygiene-test-key-Vq8sL2mX7"
OTHER = "another-hygiene-key-Zp4Rt9wY"
SECRET_TOKEN = "Quillfeatherbrook"
ALLOWED = "Vandermolen Freight"
DOCS = [f"{SECRET_TOKEN} ships with {ALLOWED} next week.", f"Ask about {SECRET_TOKEN} at the desk."]

chromadb = pytest.importorskip("chromadb")


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def _tb_locals(exc: BaseException) -> str:
    """The traceback with every frame's locals, library frames only (the test frame holds the literals)."""
    tb = exc.__traceback__
    assert tb is not None
    return "".join(traceback.TracebackException(type(exc), exc, tb.tb_next, capture_locals=True).format())


def _sanitizer(key, tokens=(SECRET_TOKEN,), allow=(ALLOWED,)):
    return Sanitizer(TextConcept("project", tokens=tuple(tokens), patterns=(r"QF-\d{4}",)), policy="redact", key=key,
                     allow_list=list(allow))


def _ef(key=KEY, **kw):
    return PrivateEmbedding(model="fake", eps=10, key=key, sanitize=_sanitizer(key, **kw))


def _folder_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file()).lower()


# -- token lists, patterns, allow lists -------------------------------------------------------
def test_token_lists_patterns_and_allow_list_are_keyed_hmacs_in_the_config():
    cfg = _sanitizer(KEY).get_config()
    text = json.dumps(cfg)
    for secret in (SECRET_TOKEN, ALLOWED, r"QF-\\d{4}"):
        assert secret.lower() not in text.lower()
    assert set(cfg["allow_list"]) == {"hmac"} and set(cfg["concept"]["tokens"]) == {"hmac"}
    assert set(cfg["concept"]["patterns"]) == {"hmac"}
    # same key, same HMACs (a reopen compares them); another key, other HMACs
    assert _sanitizer(KEY).get_config()["allow_list"] == cfg["allow_list"]
    assert _sanitizer(OTHER).get_config()["allow_list"] != cfg["allow_list"]


def test_without_a_key_they_are_not_stored_at_all():
    cfg = Sanitizer(TextConcept("project", tokens=(SECRET_TOKEN,)), policy="redact", allow_list=[ALLOWED]).get_config()
    assert SECRET_TOKEN.lower() not in json.dumps(cfg).lower() and ALLOWED.lower() not in json.dumps(cfg).lower()
    assert cfg["allow_list"] == {"withheld": True} and cfg["concept"]["tokens"] == {"withheld": True}


def test_user_detectors_token_lists_hidden_builtin_ones_kept():
    user = Sanitizer("PII", policy="redact", key=KEY, detectors=[RegexDetector(),
                                                                   TokenDetector([SECRET_TOKEN], label="PROJECT")])
    assert SECRET_TOKEN.lower() not in json.dumps(user.get_config()).lower()
    builtin = Sanitizer("datetime", policy="redact", key=KEY).get_config()
    assert "Monday" in json.dumps(builtin)  # a built-in vocabulary is public and stays rebuildable


def test_chroma_store_holds_no_listed_token_and_reopen_compares_them(tmp_path):
    from private_vectors.chroma import add_documents, create_collection, open_collection

    client = chromadb.PersistentClient(path=str(tmp_path))
    col = create_collection(client, "notes", _ef())
    stored = add_documents(col, ids=["a", "b"], documents=DOCS)
    assert SECRET_TOKEN not in " ".join(stored) and ALLOWED in stored[0]  # allowed text is kept, as asked
    raw = _folder_bytes(tmp_path)
    assert SECRET_TOKEN.lower().encode() not in raw  # not in the config, not in any document
    assert b"qf-\\\\d{4}" not in raw and b"qf-\\d{4}" not in raw
    # another token list or allow list under the same key: refused, and the error names neither list
    for other in (_ef(tokens=["Otherword"]), _ef(allow=["Someone Else"])):
        with pytest.raises(ConfigMismatchError) as info:
            open_collection(client, "notes", other)
        msg = str(info.value) + _tb_locals(info.value)
        assert "sanitizer" in str(info.value)
        for secret in (SECRET_TOKEN, ALLOWED, "Otherword", "Someone Else"):
            assert secret not in msg
    assert open_collection(client, "notes", _ef()).count() == 2
    # the hashed lists cannot be rebuilt from the record: a new process reopening without the function
    # is told what to pass, and the error names no listed value
    import os

    code = ("import chromadb\nfrom private_vectors.chroma import open_collection\n"
            f"open_collection(chromadb.PersistentClient(path={str(tmp_path)!r}), 'notes', key={KEY!r})\n")
    env = {**{k: v for k, v in os.environ.items() if k != KEY_ENV},
           "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    res = _zygote.run(["-c", code], env=env, timeout=300)  # a new process (tests/_zygote.py)
    assert res.returncode != 0 and "ConfigMismatchError" in res.stderr and "same PrivateEmbedding" in res.stderr
    assert SECRET_TOKEN not in res.stderr and ALLOWED not in res.stderr


# -- no raw key or subkey in a local, repr or message -------------------------------------------
@pytest.mark.parametrize("bad", [{"policy": "bogus"}, {"on_error": "nope"}, {"score_threshold": 3},
                                 {"timeout": -1}, {"allow_list": "x"}])
def test_sanitizer_bad_parameter_leaves_no_key_in_traceback_locals(bad):
    with pytest.raises((InvalidParameterError, TypeError)) as info:
        Sanitizer("PII", key=KEY, detectors=[RegexDetector()], **bad)
    assert KEY not in _tb_locals(info.value) and KEY not in str(info.value)


def test_from_config_with_a_wrong_key_leaves_no_key_in_traceback_locals():
    cfg = Sanitizer("PII", policy="surrogate", key=KEY, detectors=[RegexDetector()]).get_config()
    with pytest.raises(ConfigMismatchError) as info:
        Sanitizer.from_config(cfg, key=OTHER)
    shown = _tb_locals(info.value)
    assert OTHER not in shown and KEY not in shown


def test_subkeys_are_redacted_secret_bytes():
    san = Sanitizer("PII", policy="surrogate", key=KEY, detectors=[RegexDetector()])
    for sub in (san.keys.index_key, san.keys.config_key, san._surrogates._subkey):
        assert isinstance(sub, SecretBytes) and repr(sub) == "<secret>" and sub.hex() not in repr(san.__dict__)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(san.keys.index_key)


# -- a check value per store ---------------------------------------------------------------------
def test_two_stores_under_one_key_record_different_check_values(tmp_path):
    from private_vectors.chroma import create_collection

    client = chromadb.PersistentClient(path=str(tmp_path))
    a = create_collection(client, "one", PrivateEmbedding(model="fake", eps=10, key=KEY, sanitize="redact",
                                                           concept="PII"))
    b = create_collection(client, "two", PrivateEmbedding(model="fake", eps=10, key=KEY, sanitize="redact",
                                                           concept="PII"))
    ca, cb = (c.configuration_json["embedding_function"]["config"] for c in (a, b))
    assert ca["sanitizer"]["key_check"] != cb["sanitizer"]["key_check"]
    assert ca["sanitizer"]["key_salt"] != cb["sanitizer"]["key_salt"]
    assert ca["key_check"] != cb["key_check"]
    # each still verifies the key it was written with, and refuses another
    Sanitizer.from_config(ca["sanitizer"], key=KEY)
    with pytest.raises(ConfigMismatchError):
        Sanitizer.from_config(cb["sanitizer"], key=OTHER)


# -- weak keys, generate() ------------------------------------------------------------------------
@pytest.mark.parametrize("weak", ["a" * 16, b"\x00" * 16, b"\x00" * 64, "abab" * 8, "abc" * 11, "wxyz" * 4,
                                  "short-key"])
def test_weak_keys_refused_without_echo(weak):
    with pytest.raises(InvalidParameterError) as info:
        SecretKey.resolve(weak)
    shown = weak if isinstance(weak, str) else repr(weak)
    assert shown not in str(info.value) and shown not in _tb_locals(info.value)
    assert "generate()" in str(info.value)
    with pytest.raises(InvalidParameterError):
        PrivateEmbedding(model="fake", eps=10, key=weak)


def test_generate_gives_distinct_accepted_keys(monkeypatch):
    a, b = generate(), generate()
    assert isinstance(a, str) and len(a) >= 40 and a != b
    assert SecretKey.resolve(a) is not None
    monkeypatch.setenv(KEY_ENV, a)  # usable as the environment variable
    assert SecretKey.resolve(None).source == "env"


def test_parameter_and_environment_must_agree(monkeypatch):
    monkeypatch.setenv(KEY_ENV, OTHER)
    with pytest.raises(InvalidParameterError, match="different") as info:
        PrivateEmbedding(model="fake", eps=10, key=KEY)
    assert KEY not in _tb_locals(info.value) and OTHER not in _tb_locals(info.value)
    assert PrivateEmbedding(model="fake", eps=10, key=OTHER).get_config()["keyed"]  # the same: fine


# -- a missing or edited key check ----------------------------------------------------------------
def test_missing_or_edited_key_check_refused_not_read_as_no_key():
    cfg = PrivateEmbedding(model="fake", eps=10, key=KEY).get_config()
    edits = {"missing": {k: v for k, v in cfg.items() if k != "key_check"}, "empty": {**cfg, "key_check": ""},
             "edited": {**cfg, "key_check": "0" * 32}}
    for name, edit in edits.items():
        for key in (KEY, OTHER):  # refused even with the right key: nothing can be verified
            with pytest.raises(ConfigMismatchError, match="missing" if name != "edited" else "does not match"):
                PrivateEmbedding(model="fake", eps=10, key=key).pipeline.keying.bind(edit, "the edited store")
    san = Sanitizer("PII", policy="redact", key=KEY, detectors=[RegexDetector()]).get_config()
    with pytest.raises(ConfigMismatchError, match="missing"):
        Sanitizer.from_config({k: v for k, v in san.items() if k != "key_check"}, key=KEY)


def test_faiss_sidecar_without_key_check_refuses_a_wrong_key(tmp_path):
    faiss_mod = pytest.importorskip("private_vectors.integrations.faiss")
    folder = faiss_mod.build_index(["snow on the trail", "rain in the valley"],
                                   PrivateEmbedding(model="fake", eps=10, key=KEY)).save(tmp_path / "idx")
    sidecar = folder / "private_vectors.json"
    data = json.loads(sidecar.read_text())
    del data["embedding"]["key_check"]
    sidecar.write_text(json.dumps(data))
    with pytest.raises(ConfigMismatchError, match="missing"):
        faiss_mod.PrivateFaissIndex.load(folder, PrivateEmbedding(model="fake", eps=10, key=OTHER))


def test_chroma_config_without_key_check_refused(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path))
    client.create_collection("notes", embedding_function=PrivateEmbedding(model="fake", eps=10, key=KEY))
    del client
    db = sqlite3.connect(tmp_path / "chroma.sqlite3")
    (raw,) = db.execute("select schema_str from collections where name='notes'").fetchone()
    assert '"key_check"' in raw  # Chroma 1.x keeps the function's config in the collection schema
    edited = raw.replace('"key_check"', '"key_chek"')
    db.execute("update collections set schema_str=?, config_json_str=replace(config_json_str, '\"key_check\"', "
               "'\"key_chek\"') where name='notes'", (edited,))
    db.commit()
    db.close()
    from private_vectors.chroma import open_collection

    with pytest.raises(ConfigMismatchError, match="missing"):
        open_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes", key=OTHER)


# -- a default detector time limit ----------------------------------------------------------------
class _Hangs:
    name = "hangs"

    def spans(self, texts):
        time.sleep(3)
        return [[] for _ in texts]

    def get_config(self):
        return {"type": "hangs"}


def test_default_timeout_is_set_and_a_hung_detector_stores_nothing(tmp_path):
    assert Sanitizer("PII", detectors=[RegexDetector()]).timeout == DEFAULT_TIMEOUT == 60.0
    from private_vectors.chroma import add_documents, create_collection

    san = Sanitizer("PII", policy="redact", key=KEY, detectors=[_Hangs()], timeout=0.3)
    col = create_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes",
                            PrivateEmbedding(model="fake", eps=10, key=KEY, sanitize=san))
    started = time.perf_counter()
    with pytest.raises(DetectionError, match="timed out"):
        add_documents(col, ids=["a"], documents=["Maria Lopez flew to Madrid."])
    assert time.perf_counter() - started < 2.5 and col.count() == 0
