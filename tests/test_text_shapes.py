"""The name shapes the learned tagger misses: an initial joined to a surname or written after it,
a lone surname with a possessive opening a sentence; not places, common words or eponyms."""

from __future__ import annotations

import pytest

from private_vectors.text import Sanitizer
from private_vectors.text.recognizers.identifiers import IdentifierDetector
from private_vectors.text.recognizers.names import NameDetector


def _found(detector, text):
    return [text[s.start:s.end] for s in detector.spans([text])[0] if s.label == "PERSON"]


@pytest.mark.parametrize("text, name", [
    ("We received a short note from T.Udeorah thanking the team.", "T.Udeorah"),
    ("J.R.Tolkien wrote it.", "J.R.Tolkien"),
    ("The complaint filed by Negash, M. is still open.", "Negash, M."),
    ("According to Hætta, S., the meeting moved.", "Hætta, S."),
    ("SMITH, J.R. and JONES, K. (2001) report", "SMITH, J.R."),
])
def test_an_initial_joined_or_after_is_a_name(text, name):
    assert name in _found(IdentifierDetector(), text)


@pytest.mark.parametrize("text", ["However, J. Smith said so.", "S.Korea won the final.", "See Fig. 2, A.",
                                  "Prices rose, U.S. data showed."])
def test_places_common_words_and_the_next_names_initial_are_not(text):
    assert _found(IdentifierDetector(), text) == []


def test_a_lone_surname_with_a_possessive_opening_a_sentence():
    assert _found(NameDetector(), "Begay's flat is on the second floor.") == ["Begay"]
    assert _found(NameDetector(), "The keys are here. Nwogu's results came back.") == ["Nwogu"]
    for text in ("Crohn's disease is common.", "Google's results were late.", "Europe's buses are red."):
        assert _found(NameDetector(), text) == [], text


def test_the_stage_replaces_the_whole_written_form():
    out = Sanitizer("PII").apply(["Our new project lead, S.Rattanakosin, starts Monday.",
                                  "The report was written by Dimagiba, T. and reviewed.",
                                  "Etsitty's email about the refund arrived this morning."])
    assert out == ["Our new project lead, <PERSON>, starts Monday.", "The report was written by <PERSON> and reviewed.",
                   "<PERSON>'s email about the refund arrived this morning."]
