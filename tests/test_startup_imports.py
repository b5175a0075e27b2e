"""Start-up stays light: what ``import private_vectors``, the command line and the default line
import (each checked in a fresh process), and that deferring imports loses nothing: Chroma
learns the embedding function whenever the library's Chroma integration is imported, in any
order, without an import hook; presidio is imported as it is (its Hugging Face engine is
presidio's own). Times are in benchmarks/startup.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("torch", "chromadb", "langchain_core", "scipy", "sentence_transformers", "transformers", "spacy",
         "presidio_analyzer", "private_vectors.embedding", "private_vectors.eval.runner")


def _run(code: str) -> dict:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _loaded_after(statement: str) -> list[str]:
    return _run(f"""
        import json, sys
        {statement}
        print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
    """)  # type: ignore[return-value]


def test_package_import_is_light():
    assert _loaded_after("import private_vectors") == []


def test_command_line_parser_is_light():
    assert _loaded_after("from private_vectors.cli import build_parser; build_parser()") == []


def test_lazy_names_resolve():
    got = _run("""
        import json, private_vectors, private_vectors.eval as b, private_vectors.fitted as c
        from private_vectors import PrivateEmbedding, Sanitizer
        from private_vectors.embedding import PrivateEmbedding as direct
        print(json.dumps([PrivateEmbedding is direct, Sanitizer.__module__, b.run_benchmark.__module__,
                          c.load_concept.__module__, "PrivateEmbedding" in dir(private_vectors)]))
    """)
    assert got == [True, "private_vectors.text.sanitizer", "private_vectors.eval.runner",
                   "private_vectors.fitted.artefact", True]


def test_unknown_name_is_an_attribute_error():
    import private_vectors

    with pytest.raises(AttributeError, match="NoSuchName"):
        private_vectors.NoSuchName  # noqa: B018


@pytest.mark.parametrize(("order", "registered"), [
    ("import chromadb, private_vectors.chroma", True),
    ("import private_vectors.chroma, chromadb", True),
    ("import private_vectors.integrations.chroma", True),
    ("from private_vectors import PrivateEmbedding; import private_vectors.langchain", True),
    ("import private_vectors, chromadb", False),  # the package alone touches no other package
    ("import chromadb, private_vectors.embedding", False),
])
def test_chroma_learns_the_embedding_function_from_the_integration_in_any_order(order, registered):
    pytest.importorskip("chromadb")
    got = _run(f"""
        import json, sys
        finders = list(sys.meta_path)
        {order}
        from chromadb.utils.embedding_functions import known_embedding_functions
        from private_vectors.embedding import PrivateEmbedding
        print(json.dumps([known_embedding_functions.get("private_vectors") is PrivateEmbedding,
                          sys.meta_path == finders]))
    """)
    assert got == [registered, True]  # Chroma's public registry, and no import hook


def test_default_line_imports_presidio_as_it_is_and_not_sentence_transformers():
    pytest.importorskip("presidio_analyzer")
    got = _run("""
        import json, sys
        from private_vectors import PrivateEmbedding
        pe = PrivateEmbedding(concept="PII", eps=10)
        stored = pe.sanitize_documents(["Maria Lopez flew to Madrid."])
        import presidio_analyzer.nlp_engine.huggingface_token_pipe as pipe
        import transformers
        print(json.dumps([stored, "sentence_transformers" in sys.modules, pipe.is_available(),
                          pipe.hf_pipeline is transformers.pipeline]))
    """)
    assert got == [["<PERSON> flew to <LOCATION>."], False, True, True]
