"""Hashtags and handles read as the words they join (text/tags.py): the cut, the view the tagger
reads with its offsets mapped back, and the rules that weigh a tag's shape by its words."""

from __future__ import annotations

from private_vectors.text.rules import RuleContext, StageSettings
from private_vectors.text.rules.context_free import ContextFree
from private_vectors.text.rules.name_shape import MixedCaps, NameShape
from private_vectors.text.rules.ordinary_words import OrdinaryWords
from private_vectors.text.spans import Span
from private_vectors.text.tags import as_words, split_run, tag_view, tag_words

VOCAB = frozenset(["john", "smith", "maria", "garcia", "throw", "back", "thursday", "live", "concert", "he", "la"])


def _words(body: str) -> list[str]:
    return [body[a:b] for a, b in tag_words(body, VOCAB)]


def test_a_tag_is_cut_at_case_changes_underscores_digits_and_joined_words() -> None:
    assert _words("JohnSmith") == ["John", "Smith"]
    assert _words("JSmith") == ["J", "Smith"]
    assert _words("john_smith") == ["john", "smith"]
    assert _words("johnsmith") == ["john", "smith"]
    assert _words("JOHNSMITH") == ["JOHN", "SMITH"]
    assert _words("mariagarcia2024") == ["maria", "garcia", "2024"]
    assert _words("NorbuÞórhallsson") == ["Norbu", "Þórhallsson"]
    assert _words("throwbackthursday") == ["throw", "back", "thursday"]
    # a word, a run no words spell, and a capitalised word stay whole
    assert _words("concert") == ["concert"]
    assert _words("norbuthorhallsson") == ["norbuthorhallsson"]
    assert split_run("Hela", VOCAB) == ["Hela"]


def test_the_view_maps_spans_back_to_the_whole_tag() -> None:
    text = "Go #JohnSmith! mail a@b.example or see x.com/#frag and #live"
    view = tag_view(text, VOCAB)
    assert view.text == "Go # John Smith! mail a@b.example or see x.com/#frag and #live"
    assert view.tags == ((3, 13),)
    start = view.text.index("Smith")
    assert view.original(start, start + 5) == (3, 13)  # a name inside the tag replaces the tag
    mail = view.text.index("mail")
    assert text[slice(*view.original(mail, mail + 4))] == "mail"
    assert tag_view("no tags here", VOCAB).text == "no tags here"


def test_rules_weigh_a_tag_by_its_words() -> None:
    text = "So proud of the team #MaryRuiz #teamwork"
    assert as_words(text, 21, 30) == "Mary Ruiz" and as_words(text, 22, 30) == "Mary Ruiz"
    assert as_words("Expression of HeLa cells", 14, 18) == "HeLa"  # not a tag: as written
    context = RuleContext(StageSettings())
    tag = Span(21, 30, "PERSON", 0.7, "tagger")
    # a name in a tag is read as its words (no heading), and two words are a full name, not a lone guess
    assert MixedCaps().apply(text, [tag], context) == [tag]
    assert NameShape().apply(text, [tag], context) == [tag]
    assert ContextFree().apply(text, [tag], context) == [tag]
    gene = Span(14, 18, "PERSON", 0.7, "tagger")
    assert NameShape().apply("Expression of HeLa cells", [gene], context) == []



def test_the_name_list_reads_a_tags_words_too() -> None:
    from private_vectors.text.recognizers.names import NameDetector

    texts = ["Thoughts with the family this week #AdewaleCoyotl", "#AgnieszkaRibeiro wins again",
             "#GazaUnderAttack #ThrowbackThursday today", "Adewale Coyotl and #AdewaleCoyotl"]
    found = [[t[s.start:s.end] for s in spans] for t, spans in zip(texts, NameDetector().spans(texts), strict=True)]
    # an unknown full name and a known first name with a surname, each replacing its whole tag
    assert found[0] == ["#AdewaleCoyotl"] and found[1] == ["#AgnieszkaRibeiro"]
    assert found[2] == []  # English words joined are no name
    assert found[3] == ["Adewale Coyotl", "#AdewaleCoyotl"]
    assert NameDetector().get_config()["version"] == "7"


def test_a_place_code_in_a_short_message_is_a_place() -> None:
    context = RuleContext(StageSettings())
    post = "RT @UberFacts : In the UK you are legally required to stop your car"
    uk = Span(post.index("UK"), post.index("UK") + 2, "LOCATION", 0.8, "tagger")
    assert NameShape().apply(post, [uk], context) == [uk]
    assert NameShape(off=["place-codes"]).apply(post, [uk], context) == []
    study = "Samples from the UK were pooled." + " Outcomes were recorded at each visit." * 17
    assert NameShape().apply(study, [Span(17, 19, "LOCATION", 0.8, "tagger")], context) == []  # an acronym there
    gene = "PCNA levels rose in the cells."
    assert NameShape().apply(gene, [Span(0, 4, "LOCATION", 0.8, "tagger")], context) == []  # no place code


def test_a_place_code_is_no_ordinary_word_in_a_short_message() -> None:
    context = RuleContext(StageSettings(), ordinary=frozenset(["us", "uk", "cells"]))  # the batch's lower-case words
    post = "Weak US starts data bolster the currency"
    us = Span(post.index("US"), post.index("US") + 2, "LOCATION", 0.85, "presidio")
    assert OrdinaryWords().apply(post, [us], context) == [us]
    assert OrdinaryWords(off=["place-codes"]).apply(post, [us], context) == []
    assert OrdinaryWords().get_config() == {"name": "ordinary-words", "version": "2"}
    assert OrdinaryWords().apply("Us again", [Span(0, 2, "LOCATION", 0.85, "presidio")], context) == []  # no capitals
    assert OrdinaryWords().apply("Cells again", [Span(0, 5, "LOCATION", 0.85, "presidio")], context) == []  # no code
    study = "Cohorts in the US were pooled." + " Outcomes were recorded at each visit." * 17
    assert OrdinaryWords().apply(study, [Span(15, 17, "LOCATION", 0.85, "presidio")], context) == []  # a long text


def test_a_place_written_as_a_tokenised_post_writes_it_stays_in_a_short_message() -> None:
    context = RuleContext(StageSettings())
    post = "#plan Land of Talk - Minneapolis ( First Avenue ) Wed"
    dash = Span(post.index("- Minneapolis"), post.index("- Minneapolis") + 13, "LOCATION", 0.8, "tagger")
    city = Span(post.index("Minneapolis"), post.index("Minneapolis") + 11, "LOCATION", 0.8, "tagger")
    assert NameShape().apply(post, [dash], context) == [city]  # kept without the dash
    assert NameShape(off=["tokenised-places"]).apply(post, [dash], context) == []
    saint = "a show at St . Mary tonight"
    span = Span(saint.index("St"), saint.index("Mary") + 4, "LOCATION", 0.8, "tagger")
    assert NameShape().apply(saint, [span], context) == [span]
    assert NameShape().apply(saint, [Span(span.start, span.end, "PERSON", 0.8, "tagger")], context) == []  # places only
    study = "Samples from St . Mary were pooled." + " Outcomes were recorded at each visit." * 17
    assert NameShape().apply(study, [Span(13, 22, "LOCATION", 0.8, "tagger")], context) == []  # a long text
    assert NameShape().apply("drive on I- 95 now", [Span(9, 14, "LOCATION", 0.8, "tagger")], context) == []  # digits
    assert NameShape().get_config() == {"name": "name-shape", "version": "4"}
