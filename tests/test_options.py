"""The configuration table: every default :func:`resolve_options` fills in, and the mapping of
the single ``concept`` argument onto text concept / erasure / noise concept."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError, InvalidTypeError
from private_vectors.options import EmbeddingOptions, concept_parts, resolve_options, split_concept

# (given, expected after resolve_options): one row per rule of the table in private_vectors.options
TABLE = [
    ({}, {"eps": 10.0, "sanitize": None, "mechanism": "laplace", "query_eps": 10.0, "space": "cosine",
          "store_geometry": "normalize", "unit": None}),
    ({"eps": 20}, {"eps": 20.0, "query_eps": 20.0}),
    ({"eps": 20, "query_eps": 5}, {"query_eps": 5.0}),
    ({"text_concept": "PII"}, {"sanitize": "redact", "mechanism": "laplace", "space": "cosine"}),
    ({"text_concept": ("PII", "medical")}, {"sanitize": "redact"}),
    ({"text_concept": "PII", "sanitize": "surrogate"}, {"sanitize": "surrogate"}),
    ({"text_concept": "PII", "sanitize": None}, {"sanitize": None}),
    ({"noise_concept": "some/folder"}, {"mechanism": "mahalanobis", "space": "ip", "store_geometry": "augment",
                                        "sanitize": None}),
    ({"noise_concept": "PII", "text_concept": "PII"}, {"mechanism": "laplace", "space": "cosine"}),
    ({"noise_concept": "some/folder", "query_transform": "none"}, {"mechanism": "mahalanobis", "space": "cosine"}),
    ({"mechanism": "purkayastha"}, {"space": "cosine", "store_geometry": "normalize"}),
    ({"mechanism": "gaussian", "space": "l2"}, {"space": "l2", "store_geometry": "none"}),
    ({"mechanism": "laplace", "space": "ip"}, {"space": "ip", "store_geometry": "augment"}),
    ({"space": "cosine", "store_geometry": "none"}, {"store_geometry": "none"}),
    ({"mechanism": "cape"}, {"space": None, "store_geometry": "auto", "query_eps": None}),
    ({"erase": "sex"}, {"mechanism": "laplace", "sanitize": None, "space": "cosine"}),
    ({"unit": 0.5}, {"unit": 0.5}),
]


@pytest.mark.parametrize(("given_", "expected"), TABLE)
def test_resolve_options_table(given_: dict, expected: dict) -> None:
    resolved = resolve_options(EmbeddingOptions(**given_))
    for field, value in expected.items():
        assert getattr(resolved, field) == value, field


def test_resolve_options_sets_the_unit_from_the_dimension() -> None:
    assert math.isclose(resolve_options(EmbeddingOptions(), dim=384).unit, 1 / math.sqrt(384))
    assert resolve_options(EmbeddingOptions(unit=0.2), dim=384).unit == 0.2


def test_resolve_options_is_pure() -> None:
    given_ = EmbeddingOptions(text_concept="PII")
    assert resolve_options(given_) == resolve_options(given_)
    assert given_.sanitize == "auto" and given_.mechanism is None  # the input is left as it was


@pytest.mark.parametrize(("field", "value", "error"), [
    ("query", "loud", InvalidParameterError), ("query", 3, InvalidTypeError),
    ("query_transform", "rotate", InvalidParameterError), ("space", "manhattan", InvalidParameterError),
    ("store_geometry", "sphere", InvalidParameterError), ("eps", 0, InvalidParameterError),
    ("eps", float("nan"), InvalidParameterError), ("query_eps", -1, InvalidParameterError),
    ("sanitize", "blur", InvalidParameterError),
])
def test_options_refuse_bad_values_by_name(field: str, value: object, error: type) -> None:
    with pytest.raises(error, match=field):
        EmbeddingOptions(**{field: value})


def test_options_are_frozen() -> None:
    opts = EmbeddingOptions(eps=3)
    with pytest.raises(AttributeError):
        opts.eps = 4  # type: ignore[misc]


@pytest.mark.parametrize(("concept", "parts", "deprecated"), [
    ("PII", {"text_concept": "PII", "noise_concept": "PII"}, False),
    ("medical", {"text_concept": "medical", "noise_concept": "medical"}, False),
    (["PII", "medical"], {"text_concept": ("PII", "medical")}, False),
    ("PHI", {"text_concept": "PHI"}, False),
    ("quasi", {"text_concept": "quasi"}, False),
    ("sex", {"erase": "sex"}, True),
    ("some/fitted/folder", {"noise_concept": "some/fitted/folder"}, True),
    (None, {}, False),
])
def test_split_concept(concept: object, parts: dict, deprecated: bool) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert split_concept(concept) == parts
    assert any(issubclass(w.category, DeprecationWarning) for w in caught) == deprecated


def test_concept_and_an_explicit_part_must_agree() -> None:
    assert concept_parts("PII", text_concept="PII") == {"text_concept": "PII", "noise_concept": "PII"}
    with pytest.raises(InvalidParameterError, match="text_concept"):
        concept_parts("PII", text_concept="medical")


def test_a_list_of_unknown_concepts_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="concept"):
        split_concept(["PII", "no-such-concept"])


# -- __eq__ and __hash__ agree ---------------------------------------------------------------------
_SETTINGS = st.fixed_dictionaries({
    "eps": st.sampled_from([5.0, 10.0, 20.0]),
    "mechanism": st.sampled_from(["laplace", "gaussian", "purkayastha", "none"]),
    "space": st.sampled_from([None, "cosine", "ip", "l2"]),
    "query": st.sampled_from(["clean", "noised"]),
    "sanitize": st.sampled_from([None, "redact"]),
})


def _build(kwargs: dict) -> PrivateEmbedding:
    return PrivateEmbedding(model="fake:16", random_state=0, **kwargs)


@settings(max_examples=40, deadline=None)
@given(_SETTINGS, _SETTINGS)
def test_equal_embeddings_hash_alike(a: dict, b: dict) -> None:
    x, y = _build(a), _build(b)
    if a == b:
        assert x == y
    if x == y:
        assert hash(x) == hash(y)
    assert x == _build(a) and hash(x) == hash(_build(a))


def test_embeddings_differing_in_any_drift_field_are_unequal() -> None:
    base = _build({"eps": 10.0})
    for change in ({"eps": 11.0}, {"mechanism": "gaussian"}, {"space": "ip"}, {"sanitize": "redact"},
                   {"store_geometry": "none"}):
        assert base != _build({"eps": 10.0, **change}), change
    assert base != PrivateEmbedding(model="fake:16", eps=10.0, random_state=0, key="k" * 8 + "0123456789")


def test_rebuilds_are_distinct_objects() -> None:
    from private_vectors.embedding import rebuild

    pe = _build({"eps": 10.0})
    a, b = rebuild(pe.get_config(), "here"), rebuild(pe.get_config(), "here")
    assert a is not b and a is not pe and a == pe
    a.store_space = "l2"
    assert b.store_space is None and pe.store_space is None


def test_composed_and_preset_concepts_reach_the_text_stage() -> None:
    pe = PrivateEmbedding(model="fake:16", concept=["PII", "medical"], eps=10, random_state=0)
    assert pe.sanitizer.get_config()["concept"] == ["PII", "medical"]
    out = pe.sanitize_documents(["Amelia Okafor was diagnosed with asthma."])[0]
    assert "Okafor" not in out and "asthma" not in out
    phi = PrivateEmbedding(model="fake:16", concept="PHI", eps=10, random_state=0)
    assert phi.sanitizer.get_config()["concept"] == "PHI" and phi.concept is None
