"""The BERT inference path for sentence-transformers folders (quick start-up) gives
sentence-transformers' vectors, is chosen only for folders it supports, and keeps
sentence-transformers out of the default line's imports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from private_vectors.encoders import fingerprint, load_encoder
from private_vectors.encoders.bert import BertSentenceModel, supports
from private_vectors.encoders.sentence_transformers import (
    SentenceTransformerEncoder,
    default_model_path,
)
from private_vectors.errors import InvalidParameterError

TEXTS = ["Maria Lopez flew to Madrid on Monday.", "x", "?", "Ünïcödé naïve café 東京 🙂 — “quotes”",
         "The quarterly revenue rose by four percent in Europe, " * 40,  # beyond 256 tokens: truncated
         "cough and fever since Tuesday", "   spaces   and\ttabs\n"]


@pytest.fixture(scope="module")
def folder():
    try:
        return default_model_path()
    except Exception as exc:  # pragma: no cover - the packaged model is a core dependency
        pytest.skip(f"packaged model unavailable: {exc}")


def test_packaged_model_is_supported(folder):
    assert supports(folder)


@pytest.mark.parametrize("edit", ["cls_pooling", "prompt", "not_bert", "no_tokenizer", "dense_head"])
def test_other_layouts_are_left_to_sentence_transformers(folder, tmp_path, edit):
    copy = tmp_path / "model"
    shutil.copytree(folder, copy)
    if edit == "cls_pooling":
        cfg = json.loads((copy / "1_Pooling" / "config.json").read_text())
        cfg.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
        (copy / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    elif edit == "prompt":
        (copy / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "},
                                                                            "default_prompt_name": "query"}))
    elif edit == "not_bert":
        cfg = json.loads((copy / "config.json").read_text())
        (copy / "config.json").write_text(json.dumps(cfg | {"model_type": "roberta"}))
    elif edit == "no_tokenizer":
        (copy / "tokenizer.json").unlink()
    else:
        modules = json.loads((copy / "modules.json").read_text())
        modules.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
        (copy / "modules.json").write_text(json.dumps(modules))
    assert supports(copy) is False


def test_same_vectors_as_sentence_transformers(folder):
    pytest.importorskip("sentence_transformers")
    lean = SentenceTransformerEncoder(str(folder), batch_size=3)
    st = SentenceTransformerEncoder(str(folder), batch_size=3, backend="sentence-transformers")
    assert lean._lean is not None and st._lean is None
    a, b = lean.encode(TEXTS), st.encode(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384) and a.dtype == np.float32
    np.testing.assert_allclose(a, b, atol=1e-5)
    # and the order of texts in a batch does not change a text's vector
    np.testing.assert_allclose(lean.encode(TEXTS[::-1])[::-1], a, atol=1e-5)


def test_model_property_loads_sentence_transformers_on_demand(folder):
    pytest.importorskip("sentence_transformers")
    enc = SentenceTransformerEncoder(str(folder))
    assert enc._model is None
    assert enc.model.get_max_seq_length() == BertSentenceModel(folder).max_len == 256


def test_unknown_backend_is_refused():
    with pytest.raises(InvalidParameterError, match="backend"):
        SentenceTransformerEncoder(backend="onnx")


def test_default_line_does_not_import_sentence_transformers():
    code = textwrap.dedent("""
        import sys
        from private_vectors.encoders import load_encoder
        v = load_encoder(None).encode(["Maria Lopez flew to Madrid."])
        print(v.shape[1], "sentence_transformers" in sys.modules, "transformers" in sys.modules)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["384", "False", "False"]


def test_fingerprint_is_computed_once_per_encoder():
    calls = []

    class Counting:
        model_id, dim, normalize = "counting", 3, True

        def encode(self, texts):
            calls.append(len(texts))
            return np.ones((len(texts), 3), dtype=np.float32)

    enc = Counting()
    first = fingerprint(enc)
    first["canary"].clear()  # a caller editing its copy does not change the next one
    second = fingerprint(enc)
    assert len(calls) == 1 and second["canary"] and second["dim"] == 3
    assert fingerprint(Counting())["canary_sha256"] == second["canary_sha256"] and len(calls) == 2


def test_default_encoder_fingerprint_matches_the_shipped_concept():
    # the PII concept artefact was fitted with sentence-transformers' vectors: the BERT path
    # must reproduce its canaries (the artefact's own tolerance)
    from private_vectors.encoders import fingerprints_match
    from private_vectors.fitted.artefact import shipped_artefact

    folder = shipped_artefact("PII", "all-MiniLM-L6-v2")
    assert folder is not None
    stored = json.loads((folder / "config.json").read_text())["fingerprint"]
    ours = fingerprint(load_encoder(None))
    ok, why = fingerprints_match(stored, ours)
    assert ok, why
    assert np.abs(np.asarray(stored["canary"]) - np.asarray(ours["canary"])).max() < 1e-4
