"""Name and place vocabularies, person-span tidying and the keyed second pass (issue 17)."""

from __future__ import annotations

import pytest

from private_vectors.errors import InvalidParameterError
from private_vectors.text import (
    FirmDetector,
    NameDetector,
    PlaceDetector,
    RegexDetector,
    Sanitizer,
    Span,
)
from private_vectors.text.recognizers.presidio import tidy_model_span

KEY = "names-test-key-0123456789"


def _texts(detector, text):
    return [(text[s.start:s.end], s.label) for s in detector.spans([text])[0]]


def test_name_detector_finds_full_names_initials_particles_and_lone_first_names():
    d = NameDetector()
    assert ("Julieta S Almeida", "PERSON") in _texts(d, "Contact: Julieta S Almeida\nPhone: 1")
    assert ("Margaret S. Stouffer", "PERSON") in _texts(d, "Margaret S. Stouffer of Guidestar is the CEO")
    assert ("Mario", "PERSON") in _texts(d, "I would like to remove my kid Mario from the will.")
    assert ("Dexter", "PERSON") in _texts(d, "Dexter lives on Ziegelgasse 19 street.")
    # the possessive is not part of the name; a name never runs over a line break
    assert _texts(d, "Irena Novak's killers were sentenced.") == [("Irena Novak", "PERSON")]
    assert ("Irena Novak", "PERSON") in _texts(d, "Irena Novak\nAddress: 5 Main Street")


def test_name_detector_leaves_common_words_and_sentence_initial_capitals():
    d = NameDetector()
    assert _texts(d, "Will you send it? May I ask something?") == []
    assert _texts(d, "the report was sent to all members") == []
    # a known first name at the start of a sentence followed by a capitalised word is not a lone name
    assert [t for t, _ in _texts(d, "Rose Garden Hotel is closed.")] != ["Rose"]


def test_name_detector_validates_parameters():
    with pytest.raises(InvalidParameterError, match="score"):
        NameDetector(score=2)
    with pytest.raises(InvalidParameterError, match="lone_first_names"):
        NameDetector(lone_first_names="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="street_score"):
        PlaceDetector(street_score=-1)


def test_place_detector_cities_countries_and_streets():
    d = PlaceDetector()
    found = _texts(d, "We moved here from Rzeszów, Poland last year.")
    assert ("Rzeszów", "LOCATION") in found and ("Poland", "LOCATION") in found
    assert ("Alexander Flat", "LOCATION") in _texts(d, "the corner of Kuusiku 7 and Alexander Flat")
    assert ("Parijsstraat", "LOCATION") in _texts(d, "She lives in the Parijsstraat now")
    assert _texts(d, "the city was quiet and the river was cold") == []


def test_street_beats_a_person_name_in_the_ensemble():
    s = Sanitizer("PII")
    text = "Please send it to the corner of Kuusiku 7 and Alexander Flat? I am away."
    labels = {text[x.start:x.end]: x.label for x in s.spans([text])[0]}
    # the whole intersection is the address (one span), and it stays a place
    assert labels.get("the corner of Kuusiku 7 and Alexander Flat") == "LOCATION"


@pytest.mark.parametrize(("text", "span", "want"), [
    ("Name:    Hana Cechova\nAddress:     R Capela 83", (9, 30), "Hana Cechova"),
    ("I want to add Esa Uppa as a beneficiary", (10, 22), "Esa Uppa"),
    ("Fletcher Turcotte's killers", (0, 19), "Fletcher Turcotte"),
    ("Mrs. Barbara Yudina Apt. 675 62314 Mellemvej 32", (5, 28), "Barbara Yudina"),
    ('Heather:"I\'m Daniel', (9, 19), "Daniel"),
])
def test_tidy_model_span_cuts_spacy_person_spans_to_a_name(text, span, want):
    got = tidy_model_span(text, Span(span[0], span[1], "PERSON", 0.85, "presidio"))
    assert got is not None and text[got.start:got.end] == want
    assert tidy_model_span(text, Span(0, 4, "LOCATION", 0.85, "presidio")) == Span(0, 4, "LOCATION", 0.85, "presidio")


def test_name_cue_initial_is_a_whole_word():
    text = "Mr. Khasbulat Shishani Suite 602"
    names = [text[s.start:s.end] for s in RegexDetector(entities=["PERSON"]).spans([text])[0]]
    assert names == ["Khasbulat Shishani"]


def test_address_tail_follows_quoted_lines_and_upper_case_towns():
    text = "> 935 69 Gordon Terrace\n> Suite 828\n> BASHALL TOWN\n> United Kingdom 89800"
    spans = RegexDetector(entities=["LOCATION"]).spans([text])[0]
    assert any(text[s.start:s.end].endswith("United Kingdom 89800") for s in spans)


def test_second_pass_replaces_capitalised_mentions_only_in_documents():
    s = Sanitizer("PII", policy="redact", key=KEY)
    docs = ["Our client Amelia Okafor called on Monday.",
            "Okafor asked to add a phone number.",
            "please add okafor to the list"]
    out = s.apply(docs)
    assert "Okafor" not in out[0] and "Okafor" not in out[1]
    assert "add" in out[1]  # the verb is never an indexed name word
    # an all-lower-case document matches in any case
    assert "okafor" not in out[2]
    # queries match case-insensitively
    assert "okafor" not in s.apply_queries(["what do the records say about okafor"])[0]


def test_document_spans_is_what_apply_replaces_and_remembers_nothing():
    s = Sanitizer("PII", policy="redact", key=KEY)
    docs = ["Our client Amelia Okafor called.", "Okafor called again."]
    spans = s.document_spans(docs)
    assert [docs[1][x.start:x.end] for x in spans[1]] == ["Okafor"]
    assert s.get_state()["entries"] == {}
    s.apply(docs)
    assert s.get_state()["entries"]


def test_vocabulary_detectors_round_trip_through_the_config():
    s = Sanitizer("PII", policy="surrogate", key=KEY)
    cfg = s.get_config()
    names = next(d for d in cfg["detectors"] if d["type"] == "names")
    assert len(names["vocabulary"]["sha256"]) == 64 and names["vocabulary"]["first_names"] > 10_000
    again = Sanitizer.from_config(cfg, key=KEY)
    assert [d["type"] for d in again.get_config()["detectors"]] == [d["type"] for d in cfg["detectors"]]
    text = ["Julieta S Almeida moved to Rzeszów."]
    assert again.apply(text) == Sanitizer("PII", policy="surrogate", key=KEY).apply(text)


def test_places_after_a_cue_and_upper_case_towns():
    d = PlaceDetector()
    assert _texts(d, "We moved here from Tjæreborg") == [("Tjæreborg", "LOCATION")]
    assert _texts(d, "Mr. Leiva flew to LEPPEN on Tuesday morning.") == [("LEPPEN", "LOCATION")]
    assert _texts(d, "I work in NASA and moved in January") == []


def test_address_tail_after_a_unit_on_the_same_line():
    text = "send it to 230 107 Igias Street Suite 503 Armenomonastiro Cyprus"
    spans = RegexDetector(entities=["LOCATION"]).spans([text])[0]
    assert any(text[s.start:s.end].endswith("Armenomonastiro Cyprus") for s in spans)


@pytest.mark.parametrize(("text", "span", "label"), [
    ("Knockdown of HMGB1 reduced it.", (13, 18), "LOCATION"),
    ("We measured RNA in cells.", (12, 15), "PERSON"),
    ("Levels of neoplasia rose.", (10, 19), "LOCATION"),
])
def test_model_spans_that_are_no_name_or_place_are_dropped(text, span, label):
    assert tidy_model_span(text, Span(span[0], span[1], label, 0.85, "presidio")) is None


def test_scientific_acronyms_are_no_lone_names_or_places():
    assert _texts(NameDetector(), "The IMA and SIV assays; Cas-9 in Candida(") == []
    assert _texts(PlaceDetector(), "Phase II of the SpA trial used VAS scores") == []


def test_firm_names_made_of_surnames_are_organisations_not_people():
    d = FirmDetector()
    assert _texts(d, "She works at Okafor, Lindqvist and Brandt since May.") == [
        ("Okafor, Lindqvist and Brandt", "ORGANIZATION")]
    assert _texts(d, "Ask Pemberton and Sons about it.") == [("Pemberton and Sons", "ORGANIZATION")]
    assert _texts(d, "Invoices from Halvorsen Ltd. arrive monthly.") == [("Halvorsen Ltd.", "ORGANIZATION")]
    # the end of an enumeration of people, a list of places, common words: no firm
    assert _texts(d, "Their kids: Ines, Tomas, Kaja and Ruben.") == []
    assert _texts(d, "We visited France, Spain and Italy.") == []
    # a title is no firm: an Oxford comma, digits, a capitalised word after the triple
    assert _texts(d, "Global Burden of Diseases, Injuries, and Risk Factors") == []
    assert _texts(d, "Rad9, Rad17 and Rad51 bind DNA") == []
    assert _texts(d, "Runs on Windows, Linux and Mac OSX") == []
    assert _texts(d, "They chose Red, Green and Blue.") == []
    # in the PII ensemble the firm outranks the model's PERSON reading of its words
    s = Sanitizer("PII")
    text = "Tomasz is from Okafor, Lindqvist and Brandt."
    labels = {text[x.start:x.end]: x.label for x in s.spans([text])[0]}
    assert labels.get("Okafor, Lindqvist and Brandt") == "ORGANIZATION"
    with pytest.raises(InvalidParameterError, match="score"):
        FirmDetector(score=2)


def test_place_cues_postcodes_field_labels_and_town_lines():
    d = PlaceDetector()
    # a place after a strong cue outranks a model's PERSON reading (score above presidio's 0.85)
    cued = [s for s in d.spans(["Mr. Obi flew to Dunmarrow on Sunday."])[0] if s.label == "LOCATION"]
    assert [(s.start, s.end) for s in cued] == [(16, 25)] and cued[0].score > 0.86
    assert _texts(d, "I'm in The middle of it") == []  # a function word after the cue is no place
    # a country's postcode belongs to it; a year does not
    assert ("Estonia 62488", "LOCATION") in _texts(d, "Suite 501\nRiisa\n\nEstonia 62488")
    assert ("Estonia", "LOCATION") in _texts(d, "He left Estonia 1991 for good.")
    # a field label is not a city
    assert _texts(d, "Mobile: 0490 39 07 81") == []
    # the town line right above a country line in an address block
    assert ("ALFRICK", "LOCATION") in _texts(d, "Przemek Kowal\n\nALFRICK\nUnited Kingdom")
    assert ("Villa de la Costa", "LOCATION") in _texts(d, "> Ana Ruiz\n> Villa de la Costa\n> Spain")


def test_name_cue_street_titles_and_real_places_that_are_first_names():
    r = RegexDetector()
    assert ("Sieda Batukayev", "PERSON") in _texts(r, "Date: 2003-08-28\nName: Sieda Batukayev\nPhone: 1")
    # capitalised function words make a title, not a street
    assert not [x for x in _texts(r, "see Guilty Pleasures: 5 Musicians Of The 70s You Hate") if x[1] == "LOCATION"]
    assert ("73111 31 Seneca Place 5", "LOCATION") in _texts(r, "send it to 73111 31 Seneca Place 5 please")
    # a lone first name stays below the model's place reading: the place list lacks "Atlanta"
    s = Sanitizer("PII")
    text = "The study enrolled patients in Atlanta and Boston."
    labels = {text[x.start:x.end]: x.label for x in s.spans([text])[0]}
    assert labels.get("Atlanta") == "LOCATION" and labels.get("Boston") == "LOCATION"


def test_subject_of_a_person_verb_and_address_block_first_line_are_names():
    d = NameDetector()
    assert ("Zorvik", "PERSON") in _texts(d, "Zorvik lives on Via Roma 17 street.")
    assert not [t for t, _ in _texts(d, "She lives on Via Roma 17 street.") if t == "She"]  # a pronoun
    assert ("Quellan Dorsetti", "PERSON") in _texts(d, "Quellan Dorsetti\nPaxata\nPSC 3294, Box 9168\nAPO AA 61487")
    # a country line below is enough; the same name again in the block is taken too
    block = "> Quellan Dorsetti\n> Vexa Partners\n> Quellan Dorsetti\n> Spain"
    assert [t for t, _ in _texts(d, block)].count("Quellan Dorsetti") == 2
    # a title above an abstract is not a letterhead
    title = "Zinc Transporter Expression\n" + "An abstract sentence with many words, " * 3 + "and 5 numbers.\nMore."
    assert _texts(d, title) == []


def test_a_field_label_ends_an_address_tail():
    r = RegexDetector()
    text = "5850 Jana Nerudy 894\nNicosia\nCyprus 78891\nMobile: 0490 39 07 81"
    locations = [t for t, lab in _texts(r, text) if lab == "LOCATION"]
    assert locations and all("Mobile" not in t for t in locations)


def test_words_the_batch_writes_in_lower_case_are_ordinary_words():
    from private_vectors.text import TokenDetector

    # a detector that takes "Cells" for a person (as spaCy small does in titles)
    s = Sanitizer(concept=None, detectors=[TokenDetector(["Cells", "Amelia Okafor"], label="PERSON",
                                                         case_sensitive=True)], key=KEY)
    out = s.apply(["Stem Cells in Repair\nAbstract.", "The cells grew fast.", "More cells died.",
                   "Amelia Okafor called.", "Ask amelia later."])
    assert out[0].startswith("Stem Cells")  # "cells" is written in lower case in two other texts
    assert "Amelia Okafor" not in out[3]  # "amelia" in one text only: still a name
    # an ordinary word never enters the keyed index, so queries keep it
    assert s.apply_queries(["what do cells do"]) == ["what do cells do"]


def test_queries_do_not_truecase_words_the_documents_write_in_lower_case():
    fresh = Sanitizer("PII", key=KEY)
    assert fresh.apply_queries(["gene therapy results"]) != ["gene therapy results"]  # "Gene" is a first name
    s = Sanitizer("PII", key=KEY)
    s.apply(["The gene was silenced in mice.", "Each gene has two copies.", "Amelia Okafor ordered a lamp."])
    assert s.apply_queries(["gene therapy results"]) == ["gene therapy results"]
    assert "okafor" not in s.apply_queries(["what did amelia okafor order"])[0]


def test_a_full_name_outside_every_vocabulary_is_a_person():
    from private_vectors.text.vocabulary import english_words

    if not english_words():
        pytest.skip("needs spaCy's English model (its vocabulary tells English words from names)")
    d = NameDetector()
    assert ("Sengdao Bunnag", "PERSON") in _texts(d, "The report was written by Sengdao Bunnag and reviewed.")
    assert ("Makoa Aitmansour", "PERSON") in _texts(d, "Makoa Aitmansour has been volunteering every weekend.")
    # English and scientific words in title case are no names, nor is a lone unknown word
    for text in ("Recent Advances in Cancer Research", "Pyruvate Dehydrogenase Complex Deficiency",
                 "Lobular Involution and Breast Cancer", "Adipocyte O2 Consumption", "We met Bunnag."):
        assert _texts(d, text) == [], text


def test_a_lower_case_unknown_name_in_plain_english_is_a_weak_person():
    from private_vectors.text.vocabulary import english_words

    if not english_words():
        pytest.skip("needs spaCy's English model (its vocabulary tells English words from names)")
    d = NameDetector()
    text = "I spoke with gevorg ogunsola about the delayed shipment yesterday."
    spans = d.spans([text])[0]
    assert [(text[s.start:s.end], s.label, s.score) for s in spans] == [("gevorg ogunsola", "PERSON", d.score)]
    # the same shape among other unknown words is jargon, and one unknown word is no name
    assert _texts(d, "We imaged kinetochore fibres by multiphoton microscopy in the mitotic spindle.") == []
    assert _texts(d, "I spoke with ogunsola about the delayed shipment yesterday.") == []


def test_an_older_config_without_the_unknown_name_rule_opens_with_it():
    from private_vectors.text.vocabulary import english_words

    if not english_words():
        pytest.skip("needs spaCy's English model (its vocabulary tells English words from names)")
    text = "The report was written by Sengdao Bunnag and reviewed by two colleagues."
    cfg = Sanitizer("PII").get_config()
    names = [d for d in cfg["detectors"] if d.get("type") == "names"]
    assert names and all(d["unknown_names"] is True for d in names)
    old = dict(cfg, version=3, detectors=[{k: v for k, v in d.items() if k != "unknown_names"} for d in cfg["detectors"]])
    upgraded = Sanitizer.from_config(old)  # an earlier version opens with today's recognizers
    assert all(getattr(d, "unknown_names", True) for d in upgraded.detectors) and upgraded.upgraded_from == 3
    assert "Bunnag" not in upgraded.apply([text])[0]
    assert "Bunnag" not in Sanitizer.from_config(cfg).apply([text])[0]
    with pytest.raises(InvalidParameterError, match="unknown_names"):
        NameDetector(unknown_names="yes")


def test_a_place_after_a_cue_takes_a_particle_only_as_a_whole_word():
    from private_vectors.text.recognizers.places import PlaceDetector

    text = "She moved to Denmark last year; he was born in Chiclana de la Frontera."
    cued = {text[s.start:s.end] for s in PlaceDetector().spans([text])[0] if s.score >= 0.88}
    assert cued == {"Denmark", "Chiclana de la Frontera"}
