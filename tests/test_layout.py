"""The layout: pipeline rooms, moved modules gone from their old paths, Chroma registration."""

from __future__ import annotations

import importlib

import pytest

import private_vectors
from private_vectors import config, embedding, mechanisms
from test_import_cycles import import_graph


@pytest.mark.parametrize("old", ["private_vectors.encoders.cape", "private_vectors.encoders.textcrafter",
                                 "private_vectors.encoders.learned"])
def test_old_module_paths_are_gone(old: str) -> None:
    """Compatibility is by stored version, not by shims: moved modules have no old path."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_no_private_re_exports() -> None:
    for name in ("_key_bytes", "_key_id", "_canonical", "_concept_identity", "_BUILD_CACHE", "_LIVE"):
        assert not hasattr(embedding, name), name
    assert not hasattr(importlib.import_module("private_vectors.encoders"), "CapeEncoder")


def test_learned_perturbations_are_mechanisms() -> None:
    assert issubclass(mechanisms.CapeEncoder, mechanisms.Mechanism)
    assert issubclass(mechanisms.TextCrafter, mechanisms.Mechanism)
    assert mechanisms.CapeEncoder.__module__ == "private_vectors.mechanisms.cape"


def test_rooms_point_forward() -> None:
    """encoders never import mechanisms (outside the old-path shims), the core never imports
    integrations, and the persisted config imports no stage at all."""
    graph = import_graph()
    # private_vectors.langchain is the user-facing alias of integrations.langchain (issue 20)
    core = [m for m in graph if not m.startswith(("private_vectors.integrations", "private_vectors.eval",
                                                  "private_vectors.cli", "private_vectors.demo",
                                                  "private_vectors.langchain", "private_vectors.chroma",
                                                  "private_vectors.llamaindex"))
            and m != "private_vectors"]
    for module in core:
        assert not any(t.startswith("private_vectors.integrations") for t in graph[module]), module
    for module in (m for m in graph if m.startswith("private_vectors.encoders")):
        assert not any(t.startswith("private_vectors.mechanisms") for t in graph[module]), module
    assert graph["private_vectors.config"] <= {"private_vectors.errors"}
    # import private_vectors loads no integration (Chroma learns the function when one is imported)
    assert not any(t.startswith("private_vectors.integrations") for t in graph["private_vectors"])


def test_chroma_registration_is_triggered_by_the_chroma_integration() -> None:
    """Chroma learns the embedding function when the library's Chroma integration is imported
    (no import hook: the test imports it, so the outcome does not depend on which test ran before)."""
    pytest.importorskip("chromadb")
    import private_vectors.chroma  # noqa: F401
    from chromadb.utils.embedding_functions import known_embedding_functions

    assert known_embedding_functions[config.CHROMA_NAME] is private_vectors.PrivateEmbedding
    assert embedding.PrivateEmbedding is private_vectors.PrivateEmbedding


def _public_methods(cls: type) -> set[str]:
    """Public callables a class of this package defines or inherits from this package's classes
    (a third-party base's own API, e.g. ``bytes`` or ``langchain_chroma.Chroma``, is not counted)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("private_vectors"):
            continue
        names |= {k for k, v in vars(klass).items()
                  if not k.startswith("_") and (callable(v) or isinstance(v, (staticmethod, classmethod)))
                  and not isinstance(v, type)}
    return names


def test_no_class_has_more_than_twenty_public_methods() -> None:
    import inspect
    import pkgutil

    crowded = {}
    for info in pkgutil.walk_packages(private_vectors.__path__, "private_vectors."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency that is not installed
            continue
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and len(_public_methods(cls)) > 20:
                crowded[f"{module.__name__}.{name}"] = len(_public_methods(cls))
    assert not crowded, crowded
    # the adapter, with the protocols it speaks (Chroma's inherited embed_with_retries included)
    chroma_api = {m for m in dir(embedding.PrivateEmbedding) if not m.startswith("_")
                  and callable(getattr(embedding.PrivateEmbedding, m))}
    assert len(chroma_api) <= 20, sorted(chroma_api)


def test_embedding_module_stays_small() -> None:
    from pathlib import Path

    assert len(Path(embedding.__file__).read_text().splitlines()) <= 300
