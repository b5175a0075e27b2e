"""The learned tagger is the default detector for a concept with names or places (issue 49):
``detector="model"`` on every path that builds a text stage, ``"rules"`` for users who ask and
for concepts without names; a store written with ``"rules"`` reopens as ``"rules"``, and a
default ``PrivateEmbedding`` given for it is refused, naming ``detector``."""

from __future__ import annotations

import warnings

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.config import check_config_compatible
from private_vectors.embedding import rebuild
from private_vectors.errors import ConfigMismatchError, InvalidParameterError, InvalidTypeError
from private_vectors.text import Sanitizer

LOWER = "john smith called about his bill"


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _names(stage: Sanitizer) -> list[str]:
    return [d.name for d in stage.detectors]


@pytest.mark.parametrize("concept", ["PII", "PHI", "quasi", "person", "location", ["PII", "medical"]])
def test_a_concept_with_names_or_places_gets_the_tagger_by_default(concept) -> None:
    stage = Sanitizer(concept)
    assert stage.options.detector == "model" and _names(stage)[-1] == "tagger"
    assert stage.get_config()["detector"] == "model"


@pytest.mark.parametrize("concept", ["medical", "demographic", "datetime"])
def test_a_concept_without_names_keeps_the_rules(concept) -> None:
    stage = Sanitizer(concept)
    assert stage.options.detector == "rules" and "tagger" not in _names(stage)
    assert "detector" not in stage.get_config()
    if concept == "datetime":  # dates alone: the tagger is there for those who ask
        assert _names(Sanitizer(concept, detector="model"))[-1] == "tagger"
        return
    with pytest.raises(InvalidParameterError, match="detector"):
        Sanitizer(concept, detector="model")


def test_a_user_s_own_detectors_keep_the_rules() -> None:
    own = Sanitizer("PII", detector="rules").detectors[:1]
    stage = Sanitizer("PII", detectors=own)
    assert stage.options.detector == "rules" and _names(stage) == [own[0].name]


def test_the_default_private_embedding_finds_a_lower_case_name_and_rules_is_reachable() -> None:
    default = PrivateEmbedding(concept="PII", eps=10, model="fake")
    assert default.sanitizer.options.detector == "model" and _names(default.sanitizer)[-1] == "tagger"
    assert default.sanitize_documents([LOWER]) == ["<PERSON> called about his bill"]
    rules = PrivateEmbedding(concept="PII", eps=10, model="fake", detector="rules")
    assert rules.sanitizer.options.detector == "rules" and "tagger" not in _names(rules.sanitizer)
    assert "detector" not in rules.get_config()["sanitizer"]
    assert default != rules


def test_device_reaches_the_tagger_and_is_not_recorded() -> None:
    ef = PrivateEmbedding(concept="PII", eps=10, model="fake", device="cpu:0")
    assert ef.sanitizer.detectors[-1].device == "cpu:0"
    assert "cpu:0" not in repr(ef.get_config())


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"detector": "tagger"}, InvalidParameterError, ["detector", "'rules', 'model'", "str of length 6"]),
    ({"detector": 1}, InvalidTypeError, ["detector", "'rules', 'model'", "int"]),
    ({"device": 0}, InvalidTypeError, ["device", "torch device", "int"]),
    ({"device": ""}, InvalidTypeError, ["device", "torch device"]),
])
def test_detector_and_device_are_validated(kwargs, error, words) -> None:
    with pytest.raises(error) as got:
        PrivateEmbedding(concept="PII", eps=10, model="fake", **kwargs)
    for word in words:
        assert word in str(got.value), (word, str(got.value))


def test_detector_beside_a_sanitizer_object_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="detector.*Sanitizer"):
        PrivateEmbedding(eps=10, model="fake", sanitize=Sanitizer("PII", detector="rules"), detector="model")


def _rules_store_config() -> dict:
    """The config a store written before the tagger was the default records (no ``detector``)."""
    return PrivateEmbedding(concept="PII", eps=10, model="fake", detector="rules").get_config()


def test_a_store_written_with_rules_reopens_as_rules() -> None:
    stored = _rules_store_config()
    assert "detector" not in stored["sanitizer"]
    again = rebuild(stored, "this collection", use_cache=False)
    assert again.sanitizer.options.detector == "rules" and "tagger" not in _names(again.sanitizer)
    assert Sanitizer.from_config(stored["sanitizer"]).options.detector == "rules"
    check_config_compatible(stored, again.get_config())  # (the same function: accepted)


def test_a_fresh_default_function_given_for_a_rules_store_is_refused_naming_detector() -> None:
    stored = _rules_store_config()
    fresh = PrivateEmbedding(concept="PII", eps=10, model="fake")
    with pytest.raises(ConfigMismatchError) as got:
        check_config_compatible(stored, fresh.get_config())
    message = str(got.value)
    assert "detector: stored 'rules', given 'model'" in message
    assert "PrivateEmbedding(detector='rules'" in message
    check_config_compatible(stored, PrivateEmbedding(concept="PII", eps=10, model="fake",
                                                     detector="rules").get_config())


def test_the_chroma_drop_in_refuses_it_too(tmp_path) -> None:
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.integrations.chroma import create_collection, open_collection

    client = chromadb.PersistentClient(path=str(tmp_path))
    create_collection(client, "notes", PrivateEmbedding(concept="PII", eps=10, model="fake", detector="rules"))
    with pytest.raises(ConfigMismatchError, match="detector: stored 'rules'"):
        open_collection(client, "notes", PrivateEmbedding(concept="PII", eps=10, model="fake"))
    reopened = open_collection(client, "notes")  # without a function: the stored one, with its rules
    ef = reopened.configuration["embedding_function"]
    assert ef.sanitizer.options.detector == "rules"
