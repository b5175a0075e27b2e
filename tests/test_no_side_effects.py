"""The library patches nothing of another package and writes nothing process-wide: after
``import private_vectors``, building the default ``PrivateEmbedding`` and writing a protected
store, chromadb's, presidio's and transformers' functions and classes are the originals, and
``sys.meta_path``, the other packages' ``sys.modules`` entries and ``os.environ`` are unchanged
(checked in a fresh process, with those packages imported first; the encoder is also loaded
through sentence-transformers, whose hub client reads its environment)."""

from __future__ import annotations

import json
import textwrap

import pytest

import _zygote

_CHECK = r"""
import inspect, json, os, sys, tempfile, types, warnings
warnings.simplefilter("ignore")
import chromadb, chromadb.api.client, chromadb.api.async_client, chromadb.api.collection_configuration
import presidio_analyzer, sentence_transformers, transformers  # (sentence-transformers adds its own finder)
from transformers import pipeline  # (resolves the lazy attribute before the snapshot)

WATCHED = ("chromadb", "presidio_analyzer", "sentence_transformers", "transformers")

def snapshot():
    out = {}
    for name, mod in list(sys.modules.items()):
        if not isinstance(mod, types.ModuleType) or name.split(".")[0] not in WATCHED:
            continue
        for attr, value in list(vars(mod).items()):
            if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
                out[f"{name}.{attr}"] = id(value)
                if inspect.isclass(value) and getattr(value, "__module__", "") == name:
                    for k, v in list(vars(value).items()):
                        if callable(v) or isinstance(v, (staticmethod, classmethod, property)):
                            out[f"{name}.{attr}.{k}"] = id(v)
    return out

modules = {name: id(mod) for name, mod in sys.modules.items() if not name.startswith("private_vectors")}
finders, environ, before = list(sys.meta_path), dict(os.environ), snapshot()

import private_vectors
from private_vectors import PrivateEmbedding
from private_vectors.chroma import add_documents, create_collection
ef = PrivateEmbedding(concept="PII", eps=10)
with tempfile.TemporaryDirectory() as folder:
    col = create_collection(chromadb.PersistentClient(path=folder), "notes", ef)
    stored = add_documents(col, ids=["a"], documents=["Maria Lopez flew to Madrid."])
from private_vectors.encoders import SentenceTransformerEncoder
SentenceTransformerEncoder(backend="sentence-transformers").encode(["a note"])  # (loads through sentence-transformers)

after = snapshot()
print(json.dumps({
    "stored": stored,
    "changed": sorted(k for k in before if after.get(k, before[k]) != before[k]),
    "meta_path_same": len(sys.meta_path) == len(finders) and all(a is b for a, b in zip(sys.meta_path, finders)),
    "modules_replaced": sorted(n for n, i in modules.items() if id(sys.modules.get(n)) != i),
    "modules_none": sorted(n for n, m in sys.modules.items() if m is None),
    "environ_changed": sorted(k for k in set(environ) | set(os.environ) if environ.get(k) != os.environ.get(k)),
}))
"""


def test_no_patch_of_another_library_and_no_process_wide_write():
    for name in ("chromadb", "presidio_analyzer", "sentence_transformers", "transformers"):
        pytest.importorskip(name)
    # a new process forked from one that imported torch, transformers, presidio and spaCy first
    # (tests/_zygote.py): the check imports those packages first itself, before the snapshot
    res = _zygote.run(["-c", textwrap.dedent(_CHECK)], timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["stored"] == ["<PERSON> flew to <LOCATION>."]
    assert got["changed"] == [], got["changed"][:20]
    assert got["meta_path_same"] is True
    assert got["modules_replaced"] == [] and got["modules_none"] == []
    assert got["environ_changed"] == []
