"""Why each piece of process-wide state exists: every test here switches one off and shows what
breaks (or is repeated) without it. The state is documented in place and names its test:

* ``_build_cache._LIVE`` / ``_BUILD_CACHE`` — Chroma rebuilds the embedding function on every
  config read: without them each read reloads every stage;
* ``keys._SCOPED`` (:func:`~private_vectors.keys.key_scope`) — a key given as a parameter reaches
  Chroma's own rebuild of the stored function;
* ``guard._PROTECTED`` (:func:`~private_vectors.guard.protected_path`) — an adapter that sanitizes
  the text itself and lets its store call the function gets no raw-text warning there;
* ``text.detection._PROGRESS`` (:func:`~private_vectors.text.detection.detection_progress`) —
  the progress bar of a long batch reaches the detection loop without a parameter on every
  detector;
* ``fitted.artefact._ON_THE_FLY`` — a built-in noise concept fitted on the fly (an encoder without
  a shipped artefact) is fitted once per process.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import warnings

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import PrivacyWarning
from private_vectors.keys import KEY_ENV

KEY = "process-state-test-key-5Jq2Wx"


def _subprocess(code: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=env)


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import private_vectors.embedding as embedding

    builds: list[int] = []
    original = embedding.build_pipeline
    monkeypatch.setattr(embedding, "build_pipeline", lambda *a, **k: (builds.append(1), original(*a, **k))[1])
    return builds


@pytest.mark.parametrize("cache", [True, False])
def test_the_build_cache_spares_chroma_s_rebuilds(tmp_path, monkeypatch, cache):
    chromadb = pytest.importorskip("chromadb")
    import gc

    import private_vectors._rebuild as _rebuild
    from private_vectors.chroma import add_documents, create_collection, open_collection

    client = chromadb.PersistentClient(path=str(tmp_path))
    create_collection(client, "notes", PrivateEmbedding(model="fake:16", eps=10, concept="PII"))
    gc.collect()  # the writer is gone: no live object to reuse
    if not cache:
        monkeypatch.setattr(_rebuild, "cached_build", lambda config: None)
    builds = _count_builds(monkeypatch)
    col = open_collection(client, "notes")
    for i in range(3):
        add_documents(col, ids=[f"d{i}"], documents=[f"Maria Lopez wrote note {i}."])
        col.query(query_texts=["a note"], n_results=1)
    if cache:
        assert len(builds) == 1  # one build, reused by every later rebuild
    else:
        assert len(builds) > 3  # without the cache: every config read builds every stage again


_REOPEN = """
    import contextlib, warnings
    warnings.simplefilter("ignore")
    import chromadb
    import private_vectors.integrations.chroma as c
    from private_vectors.chroma import add_documents, open_collection
    if {off!r}:
        c.key_scope = lambda key: contextlib.nullcontext()
    col = open_collection(chromadb.PersistentClient(path={path!r}), "notes", key={key!r})
    print(col.query(query_texts=["Maria"], n_results=1)["ids"][0][0])
    add_documents(col, ids=["b"], documents=["Tomas Berger paid the invoice."])  # keyed noise: needs the key
"""


@pytest.mark.slow
def test_a_key_scope_hands_a_key_parameter_to_chroma_s_rebuild(tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.chroma import add_documents, create_collection

    col = create_collection(chromadb.PersistentClient(path=str(tmp_path)), "notes",
                            PrivateEmbedding(model="fake:16", eps=10, concept="PII", key=KEY))
    add_documents(col, ids=["a"], documents=["Maria Lopez flew to Madrid."])
    ok = _subprocess(_REOPEN.format(off=False, key=KEY, path=str(tmp_path)))
    assert ok.returncode == 0 and ok.stdout.split() == ["a"], ok.stderr[-1500:]
    off = _subprocess(_REOPEN.format(off=True, key=KEY, path=str(tmp_path)))
    assert off.returncode != 0 and "ConfigMismatchError" in off.stderr  # rebuilt without the key: a reader


def _no_live_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process, as in a fresh one: no keyed function to reuse, no key in the environment."""
    import gc

    import private_vectors._rebuild as _rebuild

    gc.collect()
    monkeypatch.setattr(_rebuild, "cached_build", lambda config: None)
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.mark.parametrize("scope", [True, False])
def test_a_key_scope_reaches_chroma_s_rebuild_in_process(tmp_path, monkeypatch, scope):
    """The in-process sibling of the slow subprocess test above (default run)."""
    chromadb = pytest.importorskip("chromadb")
    import private_vectors.integrations.chroma as c
    from private_vectors.chroma import add_documents, create_collection, open_collection
    from private_vectors.errors import ConfigMismatchError

    client = chromadb.PersistentClient(path=str(tmp_path))
    col = create_collection(client, "notes", PrivateEmbedding(model="fake:16", eps=10, concept="PII", key=KEY))
    add_documents(col, ids=["a"], documents=["Maria Lopez flew to Madrid."])
    del col
    _no_live_function(monkeypatch)
    if not scope:
        monkeypatch.setattr(c, "key_scope", lambda key: contextlib.nullcontext())
    with pytest.raises(ConfigMismatchError) if not scope else contextlib.nullcontext():
        col = open_collection(client, "notes", key=KEY)  # (a keyed text stage is not rebuilt without its key)
        assert col.query(query_texts=["Maria"], n_results=1)["ids"][0] == ["a"]
        add_documents(col, ids=["b"], documents=["Tomas Berger paid the invoice."])


def _called_by_chroma(fn, *args):
    """``fn(*args)`` called from a frame of a module named as chromadb's own (a store's code)."""
    namespace = {"__name__": "chromadb.api.models.Collection", "fn": fn}
    exec("def call(*args):\n    return fn(*args)\n", namespace)
    return namespace["call"](*args)


@pytest.mark.parametrize("guard", [True, False])
@pytest.mark.parametrize("by_store", [True, False])
def test_the_protected_path_keeps_an_adapter_silent_where_its_store_embeds(guard, by_store):
    """An adapter that sanitizes the text itself and then lets its store call the function (as
    Chroma's ``collection.add(documents=...)`` does) runs inside ``protected_path``: the function
    cannot tell that call from a plain store's, which keeps the raw text, except by the context.
    A call that no store's code makes (a direct call) involves no store and does not warn."""
    from private_vectors.guard import protected_path

    ef = PrivateEmbedding(model="fake:16", eps=10, concept="PII")
    sanitized = ef.sanitize_documents(["Maria Lopez flew to Madrid."])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with protected_path() if guard else contextlib.nullcontext():
            _called_by_chroma(ef, sanitized) if by_store else ef(sanitized)  # the store embeds what it was handed
    raw = [w for w in caught if issubclass(w.category, PrivacyWarning) and "raw text" in str(w.message)]
    assert bool(raw) == (by_store and not guard)


def test_detection_progress_reaches_the_detection_loop():
    from private_vectors.text import Sanitizer
    from private_vectors.text.sanitizer import DETECT_GROUP, detection_progress

    seen: list[float] = []
    texts = [f"Maria Lopez wrote note {i}." for i in range(2 * DETECT_GROUP + 1)]
    with detection_progress(seen.append):
        Sanitizer("PII").apply(texts)
    assert len(seen) >= 2 and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    reported = len(seen)
    Sanitizer("PII").apply(texts)  # outside the block: nobody is told
    assert len(seen) == reported


@pytest.mark.parametrize("cache", [True, False])
def test_a_noise_concept_fitted_on_the_fly_is_fitted_once(monkeypatch, cache):
    import private_vectors.fitted.artefact as artefact

    fits: list[int] = []
    original = artefact.fit_concept
    monkeypatch.setattr(artefact, "fit_concept", lambda *a, **k: (fits.append(1), original(*a, **k))[1])
    monkeypatch.setattr(artefact, "_ON_THE_FLY", {})
    for _ in range(2):
        PrivateEmbedding(model="fake:8", eps=10, noise_concept="person", random_state=0)
        if not cache:
            artefact._ON_THE_FLY.clear()
    assert len(fits) == (1 if cache else 2)  # without the cache every embedding fits it again


def test_an_encoder_s_fingerprint_is_computed_once():
    """``encoders.base._FINGERPRINTS`` (weak, per encoder object): an attribute concept checks the
    fingerprint on load and again against the pipeline's encoder; each check would encode the
    canary sentences again."""
    from private_vectors.encoders import FakeEncoder, fingerprint

    class Counting(FakeEncoder):
        calls = 0

        def encode(self, texts):  # type: ignore[no-untyped-def]
            Counting.calls += 1
            return super().encode(texts)

    enc = Counting(dim=8)
    assert fingerprint(enc) == fingerprint(enc) and Counting.calls == 1
    fresh = Counting(dim=8)
    fingerprint(fresh)
    assert Counting.calls == 2  # another object: computed for it


class _Forgetful(dict):
    """A cache that never holds anything (``in`` is always False)."""

    def __contains__(self, key: object) -> bool:
        return False


@pytest.mark.parametrize("cache", [True, False])
def test_a_presidio_analyzer_is_built_once_per_model(monkeypatch, cache):
    """``text.recognizers.presidio._ENGINES``: every text stage of the process shares one analyzer
    per spaCy model; without it each Sanitizer would load the spaCy model again."""
    pytest.importorskip("presidio_analyzer")
    import private_vectors.text.recognizers.presidio as presidio

    if not cache:
        monkeypatch.setattr(presidio, "_ENGINES", _Forgetful())
    first, second = presidio._engine(None)[0], presidio._engine(None)[0]
    assert (first is second) == cache  # without the cache: a second analyzer, a second model load
