"""No document content in any error, warning or log message: what was refused is described by
its type, length, shape or position only.

A marker string travels in every shape a caller can get wrong (a ``str`` where a list belongs,
``bytes``, a list or tuple holding it beside other types, a dict, an object whose ``repr`` and
``str`` are the marker) into every entry point that validates documents, queries, metadata, ids
or the key; whatever is raised (with its chained causes), warned or logged must not contain it.
(Chroma's and LlamaIndex's own checks, which run before the library is called, such as
``collection.query(query_texts=[b"..."])``, are theirs and not tested here.) A static part checks the two ways a message is written by hand: a ``Described`` description and
the ``note=`` of the package's parameter errors, and every ``warnings.warn`` / logger message,
never interpolate a variable that holds documents.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import (
    Described,
    InvalidParameterError,
    InvalidTypeError,
    describe_value,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "private_vectors"
MARKER = "Zebulon Quartermaine"
KEY = "messages-test-key-4Rt8Wq2Zp6Yx"


class Carrier:
    """An object whose repr and str are the marker (a custom document type)."""

    def __repr__(self) -> str:
        return MARKER

    __str__ = __repr__


CARRIERS = {
    "str": MARKER,
    "bytes": MARKER.encode() + b" \xff",
    "bytearray": bytearray(MARKER.encode()),
    "list_of_bytes": [MARKER.encode()],
    "list_mixed": ["fine text", 3, MARKER.encode()],
    "tuple": (MARKER.encode(), None),
    "dict": {MARKER: MARKER},
    "list_of_dict": [{"text": MARKER}],
    "object": Carrier(),
    "list_of_object": [Carrier()],
    "set": {MARKER},
    "nested": [[MARKER]],
    "blank_and_marker": [MARKER, "   "],
    "ndarray": np.array([MARKER]),
}


def _texts_of(exc: BaseException) -> list[str]:
    """The messages an error shows: its own and its causes' (str, repr and args)."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out += [str(exc), repr(exc), *map(repr, exc.args)]
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return out


def _run(call, value, caplog) -> BaseException | None:
    """Call ``call(value)``; every message it raised, warned or logged must lack the marker."""
    caplog.clear()
    raised = None
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
        warnings.simplefilter("always")
        try:
            call(value)
        except Exception as exc:
            raised = exc
    shown = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    if raised is not None:
        shown += _texts_of(raised)
    leaked = [m for m in shown if MARKER in m or MARKER.lower() in m.lower()]
    assert not leaked, f"the marker reached a message: {leaked[0][:300]}"
    return raised


@pytest.fixture(scope="module")
def ef():
    return PrivateEmbedding(concept="PII", model="fake:16", eps=10, key=KEY)


@pytest.fixture(scope="module")
def unkeyed():
    return PrivateEmbedding(concept="PII", model="fake:16", eps=10)


def _entry_points(ef, unkeyed, tmp_path):
    """(name, function of the marker-bearing value) for every path that validates input."""
    from private_vectors import _validation as v
    from private_vectors.text import Sanitizer

    points = {
        "PrivateEmbedding.embed_documents": ef.embed_documents,
        "PrivateEmbedding.__call__": ef,
        "PrivateEmbedding.embed_query": ef.embed_query,
        "PrivateEmbedding.embed_query(text=)": lambda x: ef.embed_query(text=x),
        "PrivateEmbedding.aembed_documents": lambda x: asyncio.run(ef.aembed_documents(x)),
        "PrivateEmbedding.aembed_query": lambda x: asyncio.run(ef.aembed_query(x)),
        "PrivateEmbedding.embed_array": ef.embed_array,
        "PrivateEmbedding.embed_query_array": ef.embed_query_array,
        "PrivateEmbedding.sanitize_documents": ef.sanitize_documents,
        "PrivateEmbedding.prepare_documents": ef.prepare_documents,
        "PrivateEmbedding.privacy_report": unkeyed.privacy_report,
        "PrivateEmbedding(key=)": lambda x: PrivateEmbedding(model="fake:16", eps=10, key=x),
        "PrivateEmbedding.set_key": lambda x: PrivateEmbedding(model="fake:16", eps=10).set_key(x),
        "PrivateEmbedding(concept=)": lambda x: PrivateEmbedding(model="fake:16", eps=10, concept=[x]),
        "PrivateEmbedding(eps=)": lambda x: PrivateEmbedding(model="fake:16", eps=x),
        "PrivateEmbedding(random_state=)": lambda x: PrivateEmbedding(model="fake:16", eps=10, random_state=x),
        "check_texts": v.check_texts,
        "text_list": lambda x: v.text_list(x, "texts"),
        "as_float_matrix": v.as_float_matrix,
        "check_int": lambda x: v.check_int(x, "n"),
        "check_positive_finite": lambda x: v.check_positive_finite(x, "eps"),
        "check_non_negative_finite": lambda x: v.check_non_negative_finite(x, "x"),
        "check_probability": lambda x: v.check_probability(x, "p"),
        "check_stage_output": lambda x: v.check_stage_output(x, ["a", "b"], "text stage"),
        "Sanitizer.apply": Sanitizer("PII").apply,
        "Sanitizer.apply_queries": Sanitizer("PII").apply_queries,
        "Sanitizer(allow_list=)": lambda x: Sanitizer("PII", allow_list=x),
        "Sanitizer(key=)": lambda x: Sanitizer("PII", policy="surrogate", key=x),
    }
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.chroma import add_documents, create_collection

    col = create_collection(chromadb.PersistentClient(path=str(tmp_path / "chroma")), "messages", ef)
    points.update({
        "chroma.add_documents(documents=)": lambda x: add_documents(col, ids=["a"], documents=x),
        "chroma.add_documents(ids=)": lambda x: add_documents(col, ids=x, documents=["fine text"]),
        "chroma.add_documents(ids repeated)": lambda x: add_documents(col, ids=[str(x), str(x)],
                                                                      documents=["one text", "another"]),
        "chroma.add_documents(metadatas=)": lambda x: add_documents(col, ids=["m"], documents=["fine text"],
                                                                    metadatas=x),
    })
    from private_vectors.integrations.faiss import PrivateFaissIndex

    index = PrivateFaissIndex(ef)
    index.add_texts(["held text"], ids=[str(MARKER)])
    points.update({
        "PrivateFaissIndex.add_texts": lambda x: index.add_texts(x),
        "PrivateFaissIndex.add_texts(ids=)": lambda x: index.add_texts(["fine text"], ids=x),
        "PrivateFaissIndex.add_texts(held id)": lambda x: index.add_texts(["fine text"], ids=[str(MARKER)]),
        "PrivateFaissIndex.search_documents": lambda x: index.search_documents(x, k=1),
    })
    from private_vectors.langchain import FAISS, Chroma

    store = Chroma(collection_name="messages", persist_directory=str(tmp_path / "lc"), embedding_function=ef)
    points.update({
        "langchain.Chroma.add_texts": store.add_texts,
        "langchain.Chroma.add_texts(metadatas=)": lambda x: store.add_texts(["fine text"], metadatas=x),
        "langchain.Chroma.add_texts(ids=)": lambda x: store.add_texts(["fine text", "other text"], ids=[x, x]),
        "langchain.Chroma.similarity_search": lambda x: store.similarity_search(x, k=1),
        "langchain.FAISS.from_texts": lambda x: FAISS.from_texts(x, unkeyed),
    })
    from private_vectors.restore import restore, restore_answer

    points.update({
        "restore": lambda x: restore(x, ef),
        "restore_answer": lambda x: restore_answer(x, [], ef),
    })
    pytest.importorskip("llama_index.core")
    from private_vectors.llamaindex import PrivateLlamaEmbedding, SanitizeNodes, protect_documents

    points.update({
        "PrivateLlamaEmbedding.get_text_embedding_batch":
            PrivateLlamaEmbedding(embedding=ef).get_text_embedding_batch,
        "SanitizeNodes": lambda x: SanitizeNodes(embedding=ef)(x),
        "protect_documents": lambda x: protect_documents(ef, x),
    })
    return points


def test_describe_value_carries_no_content():
    for name, value in CARRIERS.items():
        shown = describe_value(value)
        assert MARKER not in shown and MARKER.lower() not in shown.lower(), (name, shown)
    assert describe_value(-1) == "-1 (int)" and describe_value(None) == "None (NoneType)"
    assert describe_value(MARKER) == f"a str of length {len(MARKER)}"
    assert describe_value(MARKER.encode()) == f"a bytes object of length {len(MARKER)}"
    assert describe_value([MARKER, 3]) == "a list of length 2 (items: str, int)"
    assert describe_value(np.zeros((2, 3))) == "ndarray of shape (2, 3) and dtype float64"
    assert describe_value(Described("3 ids")) == "3 ids"


def test_the_parameter_errors_keep_only_the_description():
    exc = InvalidTypeError("texts[0]", "a str", MARKER.encode())
    assert exc.received == f"a bytes object of length {len(MARKER)}" and MARKER not in str(exc)
    hint = InvalidParameterError("mechanism", "one of ('laplace', 'gaussian')", "lapalce")
    assert str(hint).endswith("did you mean 'laplace'?") and "lapalce" not in str(hint)
    assert "did you mean" not in str(InvalidParameterError("mechanism", "one of ('laplace',)", MARKER))


def test_a_bytes_document_is_refused_by_type_and_length(ef):
    with pytest.raises(InvalidTypeError) as info:
        ef.embed_documents([b"Zebulon Quartermaine \xff"])
    assert str(info.value) == "texts[0]: expected a str, received a bytes object of length 22"


def test_embed_query_says_it_takes_one_string(ef):
    for bad in (None, 3, MARKER.encode()):
        with pytest.raises(InvalidTypeError, match=r"^text: expected one query str"):
            ef.embed_query(bad)
    assert len(ef.embed_query("who flew to Madrid?")) == ef.out_dim
    assert len(ef.embed_query(["one", "two"])) == 2  # Chroma's list of queries


def test_no_refused_input_echoes_its_content(ef, unkeyed, tmp_path, caplog):
    points = _entry_points(ef, unkeyed, tmp_path)
    refusing, leaks = set(), []
    for name, call in points.items():
        for kind, value in CARRIERS.items():
            try:
                raised = _run(call, value, caplog)
            except AssertionError as exc:
                leaks.append(f"{name} given {kind}: {str(exc).splitlines()[0][:400]}")
                continue
            if raised is not None:
                refusing.add(name)
    assert not leaks, "\n".join(leaks)
    assert refusing == set(points), f"entry points that refused none of the carriers: {set(points) - refusing}"


# -- the messages written by hand ---------------------------------------------------------------
DOCUMENT_NAMES = {"text", "texts", "t", "doc", "docs", "document", "documents", "items", "item", "query", "queries",
                  "value", "values", "raw", "received", "content", "page_content", "metadata", "metadatas", "meta",
                  "metas", "ids", "node", "nodes", "answer", "secret", "key", "tokens", "allow_list"}


def _interpolated_names(node: ast.AST) -> set[str]:
    """The variable names an f-string interpolates bare (``{text}``, ``{text!r}``, ``{texts[:5]}``)."""
    names = set()
    for part in ast.walk(node):
        if isinstance(part, ast.FormattedValue):
            inner = part.value
            while isinstance(inner, (ast.Subscript, ast.Starred)):
                inner = inner.value
            if isinstance(inner, ast.Name):
                names.add(inner.id)
    return names


def _hand_written_messages():
    """(file:line, f-string node) of every Described text, parameter-error note, warning and log message."""
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            where = f"{path.relative_to(SRC)}:{node.lineno}"
            if name == "Described" and node.args:
                yield where, node.args[0]
            elif name in ("InvalidParameterError", "InvalidTypeError"):
                yield from ((where, kw.value) for kw in node.keywords if kw.arg == "note")
            elif name == "warn" and isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "warnings":
                yield from ((where, a) for a in node.args[:1])
            elif name in ("debug", "info", "warning", "error", "exception") and getattr(func.value, "id", "") in (
                    "log", "logger", "LOG"):
                yield from ((where, a) for a in node.args)


def test_hand_written_messages_interpolate_no_document_variable():
    found = list(_hand_written_messages())
    assert len(found) > 50  # the walk finds them
    bad = [f"{where}: {{{', '.join(sorted(hit))}}}" for where, node in found
           if (hit := _interpolated_names(node) & DOCUMENT_NAMES)]
    assert not bad, "messages that interpolate a document-holding variable:\n" + "\n".join(bad)


def test_the_static_check_can_fail():
    node = ast.parse('f"received {texts[:5]!r} and {len(texts)}"', mode="eval").body
    assert _interpolated_names(node) == {"texts"}


def test_descriptions_written_by_hand_are_marked_as_descriptions():
    """A parameter error given a literal description ("3 ids", f"<{type(x).__name__}>") wraps it in
    ``Described``; unwrapped, it would be taken for a received str and shown by its length only."""
    plain = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("InvalidParameterError",
                                                                                  "InvalidTypeError")
                    and len(node.args) >= 3 and (isinstance(node.args[2], ast.JoinedStr) or (
                        isinstance(node.args[2], ast.Constant) and isinstance(node.args[2].value, str)))):
                plain.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not plain, "descriptions not wrapped in Described: " + ", ".join(plain)
