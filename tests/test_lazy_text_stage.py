"""presidio and spaCy are imported and loaded when the text stage first runs, not when a
``PrivateEmbedding`` or a ``Sanitizer`` is built (issue 49, start-up); the recorded
configuration is the same before and after they load."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import pytest

CODE = """
    import json, sys, warnings
    warnings.simplefilter("ignore")
    from private_vectors import PrivateEmbedding
    ef = PrivateEmbedding(concept="PII", eps=10, model="fake")
    before = ef.get_config()
    heavy = ("presidio_analyzer", "spacy", "transformers")
    loaded_at_construction = [m for m in heavy if m in sys.modules]
    out = ef.sanitize_documents(["maria lopez flew to madrid."])
    print(json.dumps({"construction": loaded_at_construction, "after": [m for m in heavy if m in sys.modules],
                      "same_config": before == ef.get_config(), "out": out}))
"""


def test_construction_imports_neither_presidio_nor_spacy() -> None:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(CODE)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["construction"] == []
    assert set(got["after"]) >= {"presidio_analyzer", "spacy"}
    assert got["same_config"] is True
    assert got["out"] == ["<PERSON> flew to <LOCATION>."]


def test_the_predicted_disabled_components_are_those_loaded() -> None:
    pytest.importorskip("presidio_analyzer")
    from private_vectors.text.recognizers.presidio import PresidioDetector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = PresidioDetector()
    predicted = det.get_config()["disabled_pipes"]
    assert "ner" not in predicted and "parser" in predicted
    assert predicted == sorted(det.nlp.disabled)


def test_stop_words_are_spacy_s_without_importing_it() -> None:
    from spacy.lang.en.stop_words import STOP_WORDS

    from private_vectors.text.vocabulary import stop_words

    assert stop_words() == frozenset(w.casefold() for w in STOP_WORDS)
