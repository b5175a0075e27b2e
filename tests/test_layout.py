"""The layout of issue 15: pipeline rooms, moved modules reachable by their old paths."""

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
    core = [m for m in graph if not m.startswith(("private_vectors.integrations", "private_vectors.bench",
                                                  "private_vectors.cli", "private_vectors.demo",
                                                  "private_vectors.langchain"))
            and m != "private_vectors"]
    for module in core:
        assert not any(t.startswith("private_vectors.integrations") for t in graph[module]), module
    for module in (m for m in graph if m.startswith("private_vectors.encoders")):
        assert not any(t.startswith("private_vectors.mechanisms") for t in graph[module]), module
    assert graph["private_vectors.config"] <= {"private_vectors.errors"}
    assert "private_vectors.integrations.chroma" in graph["private_vectors"]


def test_chroma_registration_is_triggered_by_the_package() -> None:
    pytest.importorskip("chromadb")
    from chromadb.utils.embedding_functions import known_embedding_functions

    assert known_embedding_functions[config.CHROMA_NAME] is private_vectors.PrivateEmbedding
    assert embedding.PrivateEmbedding is private_vectors.PrivateEmbedding
