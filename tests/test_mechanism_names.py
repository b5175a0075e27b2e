"""Names users guess: mechanism="cape"/"textcrafter" load the shipped artefacts for the encoder in
use (and survive a reopen in a new process); unknown names are listed in the error."""

from __future__ import annotations

import os
import textwrap

import pytest

import _zygote
from private_vectors import PrivateEmbedding
from private_vectors.embedding import KEY_ENV
from private_vectors.errors import InvalidParameterError
from private_vectors.mechanisms import CapeEncoder, TextCrafter


@pytest.mark.parametrize(("name", "cls"), [("cape", CapeEncoder), ("textcrafter", TextCrafter)])
def test_learned_names_load_the_shipped_artefact(name, cls):
    pe = PrivateEmbedding(mechanism=name, eps=10)
    assert isinstance(pe.mechanism, cls)
    ref = pe.get_config()["mechanism"]
    assert ref["type"] == "learned" and ref["name"] == name and ref["model"] == "all-MiniLM-L6-v2"
    assert "path" not in ref  # portable: rebuilt by name, not by this install's folder
    out = pe.embed_array(["Maria Lopez flew to Madrid on Monday"])
    assert out.shape == (1, pe.out_dim)
    assert PrivateEmbedding.build_from_config(pe.get_config()) == pe


def test_cape_epsilon_follows_eps():
    assert PrivateEmbedding(mechanism="CAPE", eps=5).mechanism.epsilon == 5


def test_learned_name_with_another_encoder_names_the_shipped_ones():
    with pytest.raises(InvalidParameterError, match=r"mechanism: .*ships for \(all-MiniLM-L6-v2\).*fake-keyword-64"):
        PrivateEmbedding(model="fake", mechanism="cape")


def test_unknown_names_are_listed():
    with pytest.raises(InvalidParameterError, match=r"cape.*textcrafter"):
        PrivateEmbedding(model="fake", mechanism="capee")
    with pytest.raises(InvalidParameterError, match=r"concept: .*'PII', 'PHI', 'quasi', 'person', 'location'"):
        PrivateEmbedding(model="fake", concept="pii_names")


def test_cape_collection_reopens_in_a_new_process(tmp_path):
    chromadb = pytest.importorskip("chromadb")
    db = str(tmp_path / "db")
    col = chromadb.PersistentClient(db).create_collection("notes", embedding_function=PrivateEmbedding(
        mechanism="cape", eps=10))
    col.add(ids=["a", "b"], documents=["the patient had a cough and fever", "quarterly revenue grew"])
    code = textwrap.dedent(f"""
        import chromadb
        import private_vectors.chroma
        col = chromadb.PersistentClient({db!r}).get_collection("notes")
        ef = col.configuration["embedding_function"]
        print(type(ef.mechanism).__name__, ef.get_config()["mechanism"]["name"], ef.eps)
        col.add(ids=["c"], documents=["a third note"])
        print("COUNT", col.count())
    """)
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    res = _zygote.run(["-c", code], timeout=240, env=env)  # a new process (tests/_zygote.py)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "CapeEncoder cape 10.0" in res.stdout and "COUNT 3" in res.stdout
