"""The configuration table: every default :func:`resolve_options` fills in, and the mapping of
the single ``concept`` argument onto text concept / erasure / noise concept."""

from __future__ import annotations

import ast
import math
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import _zygote
from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError, InvalidTypeError
from private_vectors.options import EmbeddingOptions, concept_parts, resolve_options, split_concept

# (given, expected after resolve_options): one row per rule of the table in private_vectors.options
DIM = 16
TABLE = [
    ({}, {"eps": 10.0, "sanitize": None, "mechanism": "laplace", "query_eps": 10.0, "space": "cosine",
          "store_geometry": "normalize", "unit": 0.25, "text_concept": None}),
    ({"eps": 20}, {"eps": 20.0, "query_eps": 20.0}),
    ({"eps": 20, "query_eps": 5}, {"query_eps": 5.0}),
    ({"text_concept": "PII"}, {"sanitize": "redact", "mechanism": "laplace", "space": "cosine",
                               "noise_concept": None}),
    ({"text_concept": ("PII", "medical")}, {"sanitize": "redact"}),
    ({"text_concept": "PII", "sanitize": "surrogate"}, {"sanitize": "surrogate"}),
    ({"text_concept": "PII", "sanitize": None}, {"sanitize": None}),
    ({"sanitize": "redact"}, {"text_concept": "PII"}),
    ({"noise_concept": "some/folder"}, {"mechanism": "mahalanobis", "space": "ip", "store_geometry": "augment",
                                        "sanitize": None}),
    ({"noise_concept": "PII", "text_concept": "PII"}, {"mechanism": "mahalanobis", "space": "ip"}),
    ({"noise_concept": "some/folder", "query_transform": "none"}, {"mechanism": "mahalanobis", "space": "cosine"}),
    ({"mechanism": "purkayastha"}, {"space": "cosine", "store_geometry": "normalize"}),
    ({"mechanism": "gaussian", "space": "l2"}, {"space": "l2", "store_geometry": "none"}),
    ({"mechanism": "laplace", "space": "ip"}, {"space": "ip", "store_geometry": "augment"}),
    ({"space": "cosine", "store_geometry": "none"}, {"store_geometry": "none"}),
    ({"erase": "sex"}, {"mechanism": "laplace", "sanitize": None, "space": "cosine"}),
    ({"unit": 0.5}, {"unit": 0.5}),
    ({"unit": 0.25 * (1 + 1e-15)}, {"unit": 0.25}),  # the default one ulp off after a JSON round trip
    ({"store_geometry": {"kind": "augment", "M": 2.5}, "space": "ip"}, {"store_geometry": "augment",
                                                                         "geometry_bound": 2.5}),
]


@pytest.mark.parametrize(("given_", "expected"), TABLE)
def test_resolve_options_table(given_: dict, expected: dict) -> None:
    resolved = resolve_options(EmbeddingOptions(**given_), dim=DIM)
    for field, value in expected.items():
        assert getattr(resolved, field) == value, field


def test_a_mechanism_that_carries_its_parameters_decides_eps_and_space() -> None:
    from private_vectors.mechanisms import LaplaceMechanism, MahalanobisMechanism

    own = LaplaceMechanism(epsilon=3.0, unit=0.25, dim=DIM, random_state=0)
    resolved = resolve_options(EmbeddingOptions(mechanism=own, eps=10), dim=DIM, mechanism=own)
    assert (resolved.eps, resolved.query_eps, resolved.space, resolved.store_geometry) == (3.0, 3.0, "cosine",
                                                                                          "normalize")
    shaped = MahalanobisMechanism(epsilon=2.0, unit=0.25, sigma=[1.0] * 8 + [4.0] * 8, random_state=0)
    resolved = resolve_options(EmbeddingOptions(mechanism=shaped), dim=DIM, mechanism=shaped)
    assert (resolved.eps, resolved.space, resolved.store_geometry) == (2.0, "ip", "augment")
    with pytest.raises(ValueError, match="built mechanism"):
        resolve_options(EmbeddingOptions(mechanism="cape"), dim=DIM)


def test_resolve_options_sets_the_unit_from_the_dimension() -> None:
    assert math.isclose(resolve_options(EmbeddingOptions(), dim=384).unit, 1 / math.sqrt(384))
    assert resolve_options(EmbeddingOptions(unit=0.2), dim=384).unit == 0.2


def test_resolve_options_is_pure() -> None:
    given_ = EmbeddingOptions(text_concept="PII")
    assert resolve_options(given_, dim=DIM) == resolve_options(given_, dim=DIM)
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
    ("PII", {"text_concept": "PII"}, False),
    ("medical", {"text_concept": "medical"}, False),
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
    assert concept_parts("PII", text_concept="PII") == {"text_concept": "PII"}
    with pytest.raises(InvalidParameterError, match="text_concept"):
        concept_parts("PII", text_concept="medical")


def test_mahalanobis_reads_a_builtin_text_concept_as_its_noise_concept_deprecated() -> None:
    with pytest.warns(DeprecationWarning, match="noise_concept="):
        parts = concept_parts("PII", mechanism="mahalanobis")
    assert parts == {"text_concept": "PII", "noise_concept": "PII"}
    assert concept_parts("PHI", mechanism="mahalanobis") == {"text_concept": "PHI"}  # no noise concept: refused later


@pytest.mark.parametrize("bad", ["no-such-concept", ["PII", "no-such-concept"], [], "PHI-ish"])
def test_an_unknown_text_concept_is_refused_naming_every_accepted_name(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="concept") as caught:
        split_concept(bad)
    message = str(caught.value)
    for name in ("'PII'", "'PHI'", "'quasi'", "'person'", "'medical'", "list of them"):
        assert name in message
    with pytest.raises(InvalidParameterError, match="text_concept"):
        concept_parts(None, text_concept=bad)


@pytest.mark.parametrize(("written", "shown"), [("PHI", "'PHI'"), ("quasi", "'quasi'"),
                                                (["PII", "medical"], "['PII', 'medical']")])
def test_repr_shows_the_text_concept_as_written(written: object, shown: str) -> None:
    pe = PrivateEmbedding(model="fake:16", concept=written, eps=10, random_state=0)
    assert repr(pe).startswith(f"PrivateEmbedding(concept={shown}, eps=10,")
    assert pe.concept == written and pe.noise_concept is None and "noise_concept" not in repr(pe)


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
    assert phi.sanitizer.get_config()["concept"] == "PHI" and phi.noise_concept is None and phi.concept == "PHI"


# -- one meaning per word: concept= loads no noise concept -----------------------------------------
@pytest.mark.parametrize("model", [None, "fake:16"])  # the default model ships a PII artefact; fake has none
def test_a_text_concept_loads_or_fits_no_noise_concept(model: str | None) -> None:
    import json
    import textwrap

    code = textwrap.dedent(f"""
        import json, sys
        from private_vectors import PrivateEmbedding
        pe = PrivateEmbedding(concept="PII", eps=10, sanitize=None, model={model!r})
        pe.embed_array(["Maria Lopez flew to Madrid."])
        loaded = sorted(m for m in sys.modules if m.startswith("private_vectors.fitted.")
                        and m.rsplit(".", 1)[1] in ("artefact", "subspace", "mask", "attribute"))
        print(json.dumps([loaded, pe.noise_concept is None, pe.get_config()["concept"], pe.concept]))
    """)
    res = _zygote.run(["-c", code], timeout=300)  # a new process (tests/_zygote.py)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "fitting it on the fly" not in res.stderr
    assert json.loads(res.stdout.strip().splitlines()[-1]) == [[], True, None, "PII"]


# -- options are resolved once: only options.py writes the defaults ---------------------------------
_OPTION_NAMES = {"eps", "query_eps", "unit", "space", "store_geometry", "mechanism"}
_OPTION_PATH = ("embedding.py", "options.py", "pipeline.py", "mechanisms/factory.py", "config.py",
                "_build_cache.py", "report.py", "restore/__init__.py", "restore/restorer.py", "restore/records.py", "keys.py",
                "keying.py")
"""The modules an option passes through from ``PrivateEmbedding`` to the stages and the stored config
(``retrieval.py``'s scoring helpers, used by the harness, keep their own ``space="ip"`` default)."""


def _writes_a_fallback(value: ast.expr) -> bool:
    """``a if c else b``, ``a or b``, a literal, or ``getattr(x, name, <literal>)``: a default written."""
    if isinstance(value, (ast.IfExp, ast.BoolOp)):
        return True
    if isinstance(value, ast.Constant):
        return value.value is not None
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "getattr"
            and len(value.args) == 3 and not (isinstance(value.args[2], ast.Constant) and value.args[2].value is None))


def _default_writes(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs += list(zip(target.elts, node.value.elts, strict=False))
                else:
                    pairs.append((target, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs.append((node.target, node.value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # a parameter default other than a sentinel
            args = node.args
            positional = args.posonlyargs + args.args
            defaults = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
            defaults += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            found += [f"{node.name}({a.arg}={ast.unparse(d)})" for a, d in defaults
                      if a.arg in _OPTION_NAMES and _writes_a_fallback(d)
                      and not (isinstance(d, ast.Constant) and d.value == "auto")]
        for target, value in pairs:
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
            if name in _OPTION_NAMES and _writes_a_fallback(value):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_only_options_writes_the_defaults_and_the_pipeline_assigns_none() -> None:
    root = Path(__file__).resolve().parents[1] / "src" / "private_vectors"
    trees = {name: ast.parse((root / name).read_text(encoding="utf-8")) for name in _OPTION_PATH}
    elsewhere = {name: _default_writes(tree) for name, tree in trees.items() if name != "options.py"}
    assert not {k: v for k, v in elsewhere.items() if v}, elsewhere
    assert _default_writes(trees["options.py"])  # (the check sees the defaults where they are written)
    pipeline = next(n for n in trees["pipeline.py"].body if isinstance(n, ast.ClassDef) and n.name == "Pipeline")
    assigned = {t.attr for node in ast.walk(pipeline) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                for tgt in (node.targets if isinstance(node, ast.Assign) else [node.target])
                for t in ast.walk(tgt) if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                and t.value.id in ("self", "clone")}
    assert not assigned & _OPTION_NAMES, assigned & _OPTION_NAMES
    assert "options" in assigned  # the resolved options, read through properties
