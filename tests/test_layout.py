"""The layout of issue 15: pipeline rooms, moved modules reachable by their old paths."""

from __future__ import annotations

import importlib

import pytest

import private_vectors
from private_vectors import config, embedding, mechanisms
from test_import_cycles import import_graph


@pytest.mark.parametrize(("old", "new", "names"), [
    ("private_vectors.encoders", "private_vectors.mechanisms", ["CapeEncoder", "TextCrafter", "load_learned"]),
    ("private_vectors.encoders.cape", "private_vectors.mechanisms.cape", ["CapeEncoder", "SENSITIVITY", "laplace_noise"]),
    ("private_vectors.encoders.textcrafter", "private_vectors.mechanisms.textcrafter",
     ["TextCrafter", "PIIClassifier", "kmeans", "relabel_pii"]),
    ("private_vectors.encoders.learned", "private_vectors.mechanisms.learned",
     ["LearnedMechanism", "NotFittedError", "packaged_artefact", "Adam", "clip_grad_norm", "small_model_threads"]),
    ("private_vectors.encoders.learned", "private_vectors.mechanisms.factory", ["load_learned"]),
    ("private_vectors.attacks.generative", "private_vectors.attacks.generative.attacker", ["GenerativeInversion"]),
    ("private_vectors.attacks.generative", "private_vectors.attacks.generative.vocabulary",
     ["TokenVocabulary", "_contains"]),
    ("private_vectors.embedding", "private_vectors.config",
     ["KEY_ENV", "CHROMA_NAME", "DRIFT_FIELDS", "check_config_compatible", "_key_bytes", "_key_id", "_canonical",
      "_concept_identity"]),
])
def test_old_paths_give_the_moved_objects(old: str, new: str, names: list[str]) -> None:
    old_mod, new_mod = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(old_mod, name) is getattr(new_mod, name), name


def test_old_path_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        importlib.import_module("private_vectors.encoders").NoSuchThing  # noqa: B018
    with pytest.raises(AttributeError):
        importlib.import_module("private_vectors.encoders.cape").NoSuchThing  # noqa: B018


def test_learned_perturbations_are_mechanisms() -> None:
    assert issubclass(mechanisms.CapeEncoder, mechanisms.Mechanism)
    assert issubclass(mechanisms.TextCrafter, mechanisms.Mechanism)
    assert mechanisms.CapeEncoder.__module__ == "private_vectors.mechanisms.cape"


def test_rooms_point_forward() -> None:
    """encoders never import mechanisms (outside the old-path shims), the core never imports
    integrations, and the persisted config imports no stage at all."""
    graph = import_graph()
    core = [m for m in graph if not m.startswith(("private_vectors.integrations", "private_vectors.bench",
                                                  "private_vectors.cli", "private_vectors.demo"))
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
