"""Presets, composable concepts, cue/shape identifiers, normalisation and the propagation rule."""

from __future__ import annotations

import unicodedata

import pytest

from private_vectors.errors import ConfigMismatchError, InvalidParameterError
from private_vectors.text import Sanitizer, Span
from private_vectors.text.normalise import normalise
from private_vectors.text.presets import PRESETS
from private_vectors.text.recognizers.identifiers import IdentifierDetector
from private_vectors.text.stage_config import SANITIZER_VERSION


def _found(detector, text):
    return {(text[s.start:s.end], s.label) for s in detector.spans([text])[0]}


def test_identifier_rules_need_a_cue_or_a_shape():
    det = IdentifierDetector(entities=["HANDLE", "ID_NUMBER", "DATE_OF_BIRTH", "AGE", "POSTCODE", "DATE_TIME"])
    assert ("18403/91", "ID_NUMBER") in _found(det, "an application (no. 18403/91) against Turkey")
    assert ("D1234567", "ID_NUMBER") in _found(det, "driver's licence number D1234567")
    assert ("@amelia_okafor", "HANDLE") in _found(det, "follow @amelia_okafor, mail a@b.com")
    assert ("3 May 1961", "DATE_OF_BIRTH") in _found(det, "she was born on 3 May 1961 in Lagos")
    assert ("45-year-old", "AGE") in _found(det, "a 45-year-old man")
    assert ("SW1A 1AA", "POSTCODE") in _found(det, "London SW1A 1AA")
    # numbers without an identifier word are no identifiers: table columns, scores, odds
    assert _found(det, "scores 12 14 16, odds 3.5 to 1, Protocol No. 11") == set()
    assert ("b.com", "HANDLE") not in _found(det, "a@b.com")


def test_presets_say_what_they_cover():
    assert {"PII", "PHI", "quasi"} <= set(PRESETS)
    for p in PRESETS.values():
        assert p.labels and p.source
    assert "DATE_TIME" in PRESETS["PHI"].labels and "DATE_TIME" not in PRESETS["PII"].labels
    assert set(PRESETS["PII"].labels) <= set(PRESETS["PHI"].labels)


def test_pii_replaces_urls_handles_ids_dob_and_ages():
    s = Sanitizer("PII")
    out = s.apply(["Amelia Okafor (born 3 May 1961, aged 62) posts as @amelia_okafor at "
                   "https://example.org/amelia; passport number X1234567."])[0]
    for leaked in ("1961", "62", "@amelia", "example.org", "X1234567", "Okafor"):
        assert leaked not in out, out


def test_concepts_compose_in_one_pass():
    s = Sanitizer(["PII", "medical"])
    kinds = [d.get_config()["type"] for d in s.detectors]
    assert kinds.count("presidio") == 1 and kinds.count("regex") == 1
    out = s.apply(["Amelia Okafor was diagnosed with asthma and diabetes."])[0]
    assert "Okafor" not in out and "asthma" not in out and "diabetes" not in out
    cfg = s.get_config()
    assert cfg["concept"] == ["PII", "medical"]
    assert Sanitizer.from_config(cfg).apply(["She has asthma."]) == s.apply(["She has asthma."])
    with pytest.raises(InvalidParameterError, match="concept"):
        Sanitizer([])


def test_normalised_detection_replaces_original_characters():
    zw, soft = "\u200b", "\u00ad"
    s = Sanitizer("PII")
    texts = [f"I met Ame{zw}lia Oka{soft}for yesterday.", "I met Ａｍｅｌｉａ Ｏｋａｆｏｒ yesterday.",
             "I met Amelia\nOkafor yesterday.", "I met <AMELIA_OKAFOR> yesterday."]
    for t in texts:  # each text alone: detection, not the second pass, must find the name
        spans = s.spans([t])[0]
        a, b = 6 + t[6:].startswith("<"), t.index(" yesterday") - t[6:].startswith("<")
        assert any(x.start <= a and x.end >= b for x in spans), (t, spans)
    n = normalise(f"Oka{zw}for")
    assert n.text == "Okafor" and n.span_back(Span(0, 6, "PERSON", 1.0, "x")) == Span(0, 7, "PERSON", 1.0, "x")


def test_names_in_capitals_with_accents_full_width_or_zero_width_are_replaced():
    s = Sanitizer("PII")
    cases = {"Oisín Randrianasolo": "The nurse asked <OISÍN_RANDRIANASOLO> to come back.",
             "Ánde Gruffydd": "The report was written by ÁNDE GRUFFYDD and reviewed by two colleagues.",
             "Tahina Chaiyaporn": "The report was written by Ｔａｈｉｎａ Ｃｈａｉｙａｐｏｒｎ and reviewed.",
             "Zintle Muthusamy": "I spoke with Z\u200bintle Muthusa\ufeffmy about the delayed shipment."}
    for name, text in cases.items():
        out = s.apply([text])[0]
        seen = unicodedata.normalize("NFKC", out).replace("\u200b", "").replace("\ufeff", "").casefold()
        assert not any(part.casefold() in seen for part in name.split()), (text, out)
    assert normalise("THE NHS AND").text == "THE NHS AND"  # a run with a function word stays in capitals
    assert normalise("by ÁNDE GRUFFYDD and").text == "by Ánde Gruffydd and"


def test_a_placeholder_shaped_name_is_no_lone_word():
    from private_vectors.text.rules import BUILTIN_RULES, RuleContext, StageSettings

    def _context_free(text, spans):
        return BUILTIN_RULES["context-free"]().apply(text, spans, RuleContext(StageSettings()))

    text = "I spoke with MADHURIMA_BARZANI about the delayed shipment yesterday."
    a = text.index("MADHURIMA")
    span = Span(a, a + len("MADHURIMA_BARZANI"), "PERSON", 0.85, "presidio")
    assert _context_free(text, [span]) == [span]
    lone = Span(a, a + len("MADHURIMA"), "PERSON", 0.85, "presidio")  # one word, no personal context
    assert _context_free(text.replace("_BARZANI", " left"), [lone]) == []


def test_second_pass_needs_strong_evidence_and_never_spreads_acronyms():
    s = Sanitizer("PII", detector="rules")  # (the tagger finds the lower-case name itself: the index is tested here)
    docs = ["RNA levels were measured by PCR in the RNA samples.",
            "Amelia Okafor met the board. Later, Okafor left.",
            "The report names Okafor again, and amelia okafor signed it."]
    spans = s.document_spans(docs)
    assert not any(docs[0][x.start:x.end] == "RNA" and x.detector == "keyed-index" for x in spans[0])
    out = s.apply(docs)
    assert "Okafor" not in out[2] and "okafor" not in out[2]  # lower case, seen capitalised elsewhere
    # which spans came from propagation is reported by the detector name
    assert {x.detector for x in spans[2]} >= {"keyed-index"}


def test_an_older_config_is_upgraded_and_a_newer_one_refused():
    s = Sanitizer("PII")
    cfg = s.get_config()
    assert cfg["version"] == SANITIZER_VERSION == 5 and cfg["ruleset"] == "0.2"
    assert Sanitizer.from_config(cfg).get_config() == cfg  # today's version rebuilds as it is
    old = dict(cfg, version=2)
    upgraded = Sanitizer.from_config(old).get_config()
    assert upgraded["upgraded_from"] == 2 and upgraded["version"] == 5 and upgraded["rules"] == cfg["rules"]
    assert Sanitizer.from_config(upgraded).get_config() == upgraded  # the record survives a reopen
    with pytest.raises(ConfigMismatchError, match="newer"):
        Sanitizer.from_config(dict(cfg, version=99))


def test_is_text_concept_accepts_presets_builtins_and_lists():
    from private_vectors.text.presets import is_text_concept

    assert is_text_concept("PII") and is_text_concept("phi") and is_text_concept(["PII", "medical"])
    assert not is_text_concept([]) and not is_text_concept("no-such-concept") and not is_text_concept(["PII", 3])


def test_medical_concept_finds_diagnoses_by_cue_and_shape():
    s = Sanitizer("medical")
    out = s.apply(["Diagnosis: acute dystonic reaction. She also has chronic pancreatitis."])[0]
    assert "dystonic" not in out and "pancreatitis" not in out
    assert s.apply(["The weather was fine and the team met at noon."]) == ["The weather was fine and the team met at noon."]


def test_a_title_with_initials_is_a_person():
    det = IdentifierDetector()
    assert ("Mr F.L.", "PERSON") in _found(det, "represented by Mr F.L., a lawyer")
    assert ("Ms A.-M. Mendiboure", "PERSON") in _found(det, "Ms A.-M. Mendiboure, Agent")
    assert not any(label == "PERSON" for _, label in _found(det, "Mr Smith and the board"))


def test_money_needs_a_currency_next_to_the_number():
    det = IdentifierDetector(entities=["QUANTITY"])
    text = ("He was awarded EUR 4,000, then 100,000,000 TRL, 5,699.21 euros (EUR), five hundred euros, "
            "approximately 4,000,000 Swedish kronor and $5.2 million.")
    assert {v for v, _ in _found(det, text)} == {
        "EUR 4,000", "100,000,000 TRL", "5,699.21 euros (EUR)", "five hundred euros",
        "approximately 4,000,000 Swedish kronor",
        "$5.2 million"}
    # numbers without a currency are no amounts: years, article numbers, scores, counts
    assert _found(det, "In 1998, under Article 6 § 1, the score was 3 to 2 in 12 cases; NHS 123 456.") == set()


def test_institutions_need_a_qualifier_or_a_complement():
    det = IdentifierDetector(entities=["ORGANIZATION"])
    text = ("He applied to the Istanbul State Security Court; the Ministry of the Interior and the Social "
            "Insurance Authority replied, as did the Office for Veterans and Persecuted Persons.")
    assert {v for v, _ in _found(det, text)} == {
        "Istanbul State Security Court", "Ministry of the Interior", "Social Insurance Authority",
        "Office for Veterans and Persecuted Persons"}
    assert {lab for _, lab in _found(det, text)} == {"ORGANIZATION"}
    # a head alone is no name; a sentence's first word is no qualifier
    assert _found(det, "The Court held that the Ministry had erred. In Court, he said so.") == set()
    assert ("Wrocław-Śródmieście District Court", "ORGANIZATION") in _found(det, "the Wrocław-Śródmieście District Court")


def test_quantity_detector_validates_spacy_amounts():
    from private_vectors.text.recognizers.concept import QuantityDetector

    det = QuantityDetector()
    found = {v for v, _ in _found(det, "He paid 5,000 dollars and weighed 80 kg; see paragraph 12 and 3 to 2.")}
    assert {"5,000 dollars", "80 kg"} <= found
    assert not {"12", "3", "2"} & found


def test_occupations_come_from_fakers_job_titles():
    from private_vectors.text.concepts import occupations

    jobs = occupations()
    assert {"accountant", "journalist", "pharmacist", "teacher"} <= set(jobs)
    assert all(j == j.lower() and "," not in j for j in jobs)


def test_phi_covers_safe_harbors_other_identifying_characteristics():
    s = Sanitizer("PHI")
    assert {"ORGANIZATION", "NRP", "DEMOGRAPHIC", "QUANTITY", "DATE_TIME"} <= set(PRESETS["PHI"].labels)
    out = s.apply(["Amelia Okafor, a Nigerian journalist, was paid EUR 4,000 by the Lagos State Broadcasting "
                   "Corporation on 3 May 2001."])[0]
    for leaked in ("Okafor", "Nigerian", "journalist", "4,000", "Lagos State Broadcasting", "3 May"):
        assert leaked not in out, out
    pii = Sanitizer("PII").apply(["a Nigerian journalist was paid EUR 4,000 by the Lagos State Broadcasting "
                                  "Corporation"])[0]
    assert "journalist" in pii and "4,000" in pii  # PII is unchanged: organisations and amounts are PHI's


def test_a_range_of_dates_is_one_mention():
    det = IdentifierDetector(entities=["DATE_TIME"])
    found = {v for v, _ in _found(det, "held on 29 and 30 June 1992, then from 30 March 1983 to 30 September 1987")}
    assert {"29 and 30 June 1992", "30 March 1983 to 30 September 1987"} <= found
    assert _found(det, "Articles 6 and 13 of the Convention, 1998 to 2001") == set()


def test_an_acronym_defined_for_an_institution_is_the_institution():
    det = IdentifierDetector(entities=["ORGANIZATION"])
    text = "He joined the PKK (the Kurdistan Workers’ Party) in 1990. The PKK was banned."
    spans = [text[s.start:s.end] for s in det.spans([text])[0]]
    assert spans.count("PKK") == 2 and "Kurdistan Workers’ Party" in spans
    assert _found(det, "Tumor Necrosis Factor (TNF) levels rose; TNF fell.") == set()  # no institution head


@pytest.mark.parametrize(("text", "want"), [
    ("the Ministry of Defence's reply", "Ministry of Defence"),
    ("The Istanbul State Security Court", "Istanbul State Security Court"),
    ("the Chamber", None), ("The Government", None), ("the Fourth Section", None),
])
def test_organisation_model_spans_lose_the_article_and_bare_heads(text, want):
    from private_vectors.text.recognizers.presidio import tidy_model_span

    end = len(text) - len(" reply") if text.endswith(" reply") else len(text)
    got = tidy_model_span(text, Span(0, end, "ORGANIZATION", 0.85, "presidio"))
    assert (None if got is None else text[got.start:got.end]) == want


def test_phi_config_round_trip():
    s = Sanitizer("PHI")
    cfg = s.get_config()
    doc = ["Amelia Okafor was paid EUR 4,000 by the Lagos State Broadcasting Corporation on 29 and 30 May 2001."]
    assert Sanitizer.from_config(cfg).apply(doc) == s.apply(doc)
    assert "<QUANTITY>" in s.apply(doc)[0]
    assert "29 and 30 May 2001" in {v for v, _ in _found(IdentifierDetector(entities=["DATE_TIME"]), doc[0])}


@pytest.mark.parametrize(("text", "want"), [
    ("under case no. 4 Ob 123/99 of the Supreme Court", {"4 Ob 123/99"}),
    ("the file (no. II SA 1234/01) was closed", {"II SA 1234/01"}),
    ("registered under the plots nos. 260, 268 and 119/5.", {"260", "268", "119/5"}),
    ("accused of membership (case no. 1996/276) and E. 1997/45", {"1996/276", "1997/45"}),
    ("the Reindeer Husbandry Act (Rennäringslagen, 1971:437)", {"1971:437"}),
    ("registration no. D-4840 in the land register", {"D-4840"}),
])
def test_phi_reference_numbers_by_cue_or_register_shape(text, want):
    det = IdentifierDetector(entities=["REFERENCE"])
    assert {v for v, label in _found(det, text) if label == "ID_NUMBER"} == want


def test_reference_numbers_skip_provisions_years_dates_and_times():
    det = IdentifierDetector(entities=["REFERENCE"])
    text = ("Article 6 § 1, Protocol No. 11, Law no. 3713 and section 7(2) of the Act; in 2004, "
            "on 12/05/2004 at 12:30, half (1/2) of 3,000 euros, Directive 95/46/EC")
    assert _found(det, text) == set()
    # PII does not take them: reference numbers without an identifier word are PHI's
    doc = ["the decision (Az. 1996/276) on plot 260"]
    pii, phi = Sanitizer("PII").apply(doc)[0], Sanitizer("PHI").apply(doc)[0]
    assert "1996/276" in pii and "260" in pii
    assert "1996/276" not in phi and "260" not in phi and "<ID_NUMBER>" in phi


@pytest.mark.parametrize(("text", "want"), [
    ("From 1960 she worked as a ballet dancer for the ensemble.", "ballet dancer"),
    ("In 1989 she was a lorry driver in Hamburg.", "lorry driver"),
    ("The applicant, who was an advocate, declared that", "advocate"),
    ("he was practising as a physician under the public scheme", "physician"),
])
def test_phi_occupation_named_after_a_cue(text, want):
    det = IdentifierDetector(entities=["OCCUPATION"])
    assert _found(det, text) == {(want, "DEMOGRAPHIC")}


def test_occupation_cue_takes_no_article_or_clause():
    det = IdentifierDetector(entities=["OCCUPATION"])
    # the cue is a general one: a party noun of one kind of document ("the applicant, a ...") is none
    assert _found(det, "In 1989 the applicant, a lorry driver, was injured.") == set()
    assert _found(det, "The report worked as the basis for the decision. He was a.") == set()
    assert _found(det, "miR-196 may serve as a marker and can be employed as a biomarker of risk.") == set()


def test_an_institution_name_keeps_its_gloss():
    text = "proceedings before the Moers District Court (Amtsgericht) against the applicant (the “Company”)"
    new = {v for v, _ in _found(IdentifierDetector(entities=["ORGANIZATION"]), text)}
    assert new == {"Moers District Court (Amtsgericht)"}
    assert _found(IdentifierDetector(entities=["ORGANIZATION"]), "the Supreme Court (see paragraph 12)") == {
        ("Supreme Court", "ORGANIZATION")}


def test_an_institution_name_takes_the_part_named_before_it():
    det = IdentifierDetector(entities=["ORGANIZATION"])
    text = "transferred to the Fourteenth Chamber of the Istanbul Assize Court; the Fourth Section of the Court"
    assert {v for v, _ in _found(det, text)} == {"Fourteenth Chamber of the Istanbul Assize Court"}


def test_an_institution_name_ends_at_its_sentence():
    text = "a letter from the Ministry of Foreign Affairs. The Government replied"
    new = {v for v, _ in _found(IdentifierDetector(entities=["ORGANIZATION"]), text)}
    assert new == {"Ministry of Foreign Affairs"}
