"""The learned tagger as a recognizer of the text stage: detector="model", its config, and the
rules that read a span's source (case checks leave the case-blind tagger's spans alone; the
personal-context rule weighs them as any model guess)."""

from __future__ import annotations

import warnings

import pytest

from private_vectors.errors import InvalidParameterError, InvalidTypeError
from private_vectors.text.recognizers import builtin_kind
from private_vectors.text.recognizers.tagger import TaggerRecognizer, learned
from private_vectors.text.rules import RuleContext, StageSettings
from private_vectors.text.rules.context_free import ContextFree
from private_vectors.text.rules.ordinary_words import OrdinaryWords
from private_vectors.text.spans import Span


def _context(ordinary: frozenset[str] = frozenset()) -> RuleContext:
    return RuleContext(StageSettings(), ordinary=ordinary)


def test_the_tagger_is_a_registered_kind_and_its_spans_say_so() -> None:
    assert builtin_kind("tagger") is TaggerRecognizer
    assert learned(Span(0, 4, "PERSON", 0.9, "tagger")) and learned(Span(0, 4, "PERSON", 0.9, "tagger:mine"))
    assert not learned(Span(0, 4, "PERSON", 0.9, "presidio"))


def test_a_case_check_never_drops_the_taggers_lower_case_name() -> None:
    text = "maria garcia wrote to us"
    ours, spacy = Span(0, 12, "PERSON", 0.9, "tagger"), Span(0, 12, "PERSON", 0.9, "presidio")
    kept = OrdinaryWords().apply(text, [ours, spacy], _context(frozenset(["maria", "garcia"])))
    assert kept == [ours]


def test_the_taggers_guesses_pass_the_personal_context_rule_like_any_models() -> None:
    rule = ContextFree()
    # a one-word guess in a text about no one is dropped, as presidio's would be
    text = "Expression of Kras was measured in all samples."
    lone = Span(14, 18, "PERSON", 0.7, "tagger")
    assert rule.apply(text, [lone], _context()) == []
    # the tagger's full name alone is no personal context (an eponym), a name list's is
    text = "Kaplan Meier curves were compared in Kras mice."
    eponym, gene = Span(0, 12, "PERSON", 0.7, "tagger"), Span(37, 41, "PERSON", 0.7, "tagger")
    assert rule.apply(text, [eponym, gene], _context()) == [eponym]
    listed = Span(0, 12, "PERSON", 0.7, "names")
    assert rule.apply(text, [listed, gene], _context()) == [listed, gene]
    # a one-word place is no lone guess (dropping it cost news places): kept without context
    text = "Kaplan Meier curves were compared in Tromso."
    place = Span(37, 43, "LOCATION", 0.7, "tagger")
    assert rule.apply(text, [eponym, place], _context()) == [eponym, place]
    listed = Span(0, 12, "PERSON", 0.7, "names")
    assert rule.apply(text, [listed, place], _context()) == [listed, place]
    # personal context keeps every span
    text = "She moved to Tromso."
    assert rule.apply(text, [Span(13, 19, "LOCATION", 0.7, "tagger")], _context()) == \
        [Span(13, 19, "LOCATION", 0.7, "tagger")]


def test_bad_detector_settings_name_themselves() -> None:
    from private_vectors.text import Sanitizer

    with pytest.raises(InvalidParameterError, match="detector"):
        Sanitizer("PII", detector="spacy")
    with pytest.raises(InvalidTypeError, match="device"):
        Sanitizer("PII", detector="model", device=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="detector"):
        Sanitizer("medical", detector="model")
    with pytest.raises(InvalidParameterError, match="labels"):
        TaggerRecognizer(["MEDICAL"])
    with pytest.raises(InvalidTypeError, match="model"):
        TaggerRecognizer(model=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="label_map"):
        TaggerRecognizer(model="some-hub-model")


@pytest.fixture(scope="module")
def shipped() -> TaggerRecognizer:
    return TaggerRecognizer(["PERSON", "LOCATION"])


def test_the_shipped_tagger_finds_names_and_places_in_any_case(shipped: TaggerRecognizer) -> None:
    texts = ["we met amelia okafor in reykjavik on monday", "We met Amelia Okafor in Reykjavik on Monday",
             "WE MET AMELIA OKAFOR IN REYKJAVIK ON MONDAY"]
    found = shipped.spans(texts)
    assert found[0] == found[1] == found[2]
    got = {(texts[0][s.start:s.end], s.label) for s in found[0]}
    assert ("amelia okafor", "PERSON") in got and ("reykjavik", "LOCATION") in got
    assert all(s.detector == "tagger" and s.label in ("PERSON", "LOCATION") for s in found[0])


def test_the_tagger_replaces_a_whole_tag_holding_a_name(shipped: TaggerRecognizer) -> None:
    texts = ["So proud of the team today #AmeliaOkafor #teamwork", "so proud of the team today #amelia_okafor"]
    found = shipped.spans(texts)
    assert [[(t[s.start:s.end], s.label) for s in spans] for t, spans in zip(texts, found, strict=True)] == \
        [[("#AmeliaOkafor", "PERSON")], [("#amelia_okafor", "PERSON")]]


def test_a_model_stage_records_the_detector_and_reopens(shipped: TaggerRecognizer) -> None:
    from private_vectors.text import Sanitizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stage = Sanitizer("person", detector="model")
        assert stage.detectors[-1].name == "tagger"
        assert stage.apply(["i wrote to amelia okafor today"]) == ["i wrote to <PERSON> today"]
        cfg = stage.get_config()
        assert cfg["detector"] == "model"
        assert cfg["detectors"][-1] == {**shipped.get_config(), "labels": ["PERSON"], "thresholds": {"PERSON": 0.4}}
        assert Sanitizer.from_config(cfg).get_config() == cfg
        assert Sanitizer("person").get_config() == cfg  # the tagger is the default for a concept with names
        assert "detector" not in Sanitizer("person", detector="rules").get_config()
        bad = {**cfg, "detectors": [*cfg["detectors"][:-1], {**cfg["detectors"][-1], "weights_sha256": "0" * 64}]}
        with pytest.raises(Exception, match="other weights"):
            Sanitizer.from_config(bad)


def test_the_tagger_and_another_model_do_not_confirm_each_others_guesses() -> None:
    from private_vectors.text.rules.name_shape import MixedCaps

    # "CONCLUSION Lobular" from presidio: the tagger agreeing does not make the heading a name
    text = "CONCLUSION Lobular lesions were seen"
    spacy, tagged = Span(0, 18, "PERSON", 0.85, "presidio"), Span(0, 18, "PERSON", 0.9, "tagger")
    assert MixedCaps().apply(text, [spacy, tagged], _context()) == []
    # a full name two models agree on is no personal context: the eponym's neighbour stays dropped
    text = "Kaplan Meier curves in Kras mice."
    kept = ContextFree().apply(text, [Span(0, 12, "PERSON", 0.85, "presidio"), Span(0, 12, "PERSON", 0.9, "tagger"),
                                      Span(23, 27, "PERSON", 0.85, "presidio")], _context())
    assert all(s.start == 0 for s in kept)


def test_the_taggers_probability_is_no_cue_for_a_country() -> None:
    rule = ContextFree()
    text = "Dengue fever in Vietnam was studied in 75,000 households." + " Outcomes were recorded at each visit." * 17
    sure_country = Span(16, 23, "LOCATION", 1.0, "tagger")
    # a study site, in a text of 100 words or more about no one
    assert rule.apply(text, [sure_country], _context()) == []
    text = "Is Nazemi still the representative?"
    sure_name = Span(3, 9, "PERSON", 0.95, "tagger")
    assert rule.apply(text, [sure_name], _context()) == [sure_name]


def test_where_the_tagger_reads_a_one_word_place_needs_a_second_reader_in_a_text_about_no_one() -> None:
    rule = ContextFree()
    read = RuleContext(StageSettings(tagger=True))
    short = "Oocytes of Xenopus were compared with samples from Tromso."
    text = short + " The samples were stored and measured again." * 15  # an abstract: 100 words or more
    spacy = Span(11, 18, "LOCATION", 0.85, "presidio")  # a genus spaCy takes for a place, the tagger not
    tagged, confirmed = Span(51, 57, "LOCATION", 0.8, "tagger"), Span(51, 57, "LOCATION", 0.85, "presidio")
    assert rule.apply(text, [spacy, tagged, confirmed], read) == [tagged, confirmed]
    assert rule.apply(text, [spacy, tagged], read) == []  # each alone: dropped
    assert rule.apply(short, [spacy, tagged], read) == [spacy, tagged]  # a short message keeps them
    assert rule.apply(text, [spacy, tagged], _context()) == [spacy, tagged]  # no tagger read it: kept
    assert ContextFree(off=["one-word-places"]).apply(text, [spacy, tagged], read) == [spacy, tagged]
    cued = Span(11, 18, "LOCATION", 0.88, "places")  # a place after a cue stays
    assert rule.apply(text, [cued], read) == [cued]
    personal = "My sister lives in Tromso." + " The samples were stored and measured again." * 15
    assert rule.apply(personal, [Span(19, 25, "LOCATION", 0.8, "tagger")], read) == \
        [Span(19, 25, "LOCATION", 0.8, "tagger")]


def test_a_place_the_tagger_is_unsure_of_stays_in_a_short_post_only() -> None:
    rule, read = ContextFree(), RuleContext(StageSettings(tagger=True))
    short = "Clinics in the Hlabisa subdistrict took part."
    text = short + " The samples were stored and measured again." * 15  # 100 words or more, about no one
    unsure, sure = Span(15, 34, "LOCATION", 0.45, "tagger"), Span(15, 34, "LOCATION", 0.6, "tagger")
    assert rule.apply(text, [unsure], read) == [] and rule.apply(text, [sure], read) == [sure]
    assert rule.apply(short, [unsure], read) == [unsure]  # a short post keeps it
    assert ContextFree(off=["unsure-places"]).apply(text, [unsure], read) == [unsure]
    personal = "My sister works in the Hlabisa subdistrict." + " The samples were stored and measured again." * 15
    kept = Span(23, 42, "LOCATION", 0.45, "tagger")
    assert rule.apply(personal, [kept], read) == [kept]  # personal context: kept


def test_where_the_tagger_reads_presidios_lone_name_in_a_text_about_no_one_is_dropped() -> None:
    rule, read = ContextFree(), RuleContext(StageSettings(tagger=True))
    title = "Multipoint Kras oncogene mutations in ovarian neoplasms"
    text = title + "\n" + "The samples were stored and measured again. " * 15  # 100 words or more, about no one
    lone = Span(0, 15, "PERSON", 0.85, "presidio")
    tagged = Span(0, 15, "PERSON", 0.7, "tagger")
    assert rule.apply(text, [lone], read) == []  # presidio alone: dropped
    assert rule.apply(text, [lone, tagged], read) == [lone, tagged]  # the tagger read a name there too: kept
    assert rule.apply(text, [lone], _context()) == [lone]  # no tagger read it: kept
    assert rule.apply(title, [lone], read) == [lone]  # a short text keeps it
    assert ContextFree(off=["general-names"]).apply(text, [lone], read) == [lone]
    byline = "Mishi Saran\n" + "The samples were stored and measured again. " * 15
    assert rule.apply(byline, [Span(0, 11, "PERSON", 0.85, "presidio")], read) == [Span(0, 11, "PERSON", 0.85, "presidio")]
    assert ContextFree().get_config()["version"] == "8"


def test_a_name_the_tagger_split_in_two_spans_is_no_lone_guess() -> None:
    rule, text = ContextFree(), "Please forward the signed invoice to selamawit egal before Friday."
    first, last = Span(37, 46, "PERSON", 0.76, "tagger"), Span(47, 51, "LOCATION", 0.65, "tagger")
    assert rule.apply(text, [first, last], _context()) == [first, last]
    assert rule.apply(text, [first], _context()) == []  # alone: a one-word guess, dropped
    assert ContextFree(off=["split-names"]).apply(text, [first, last], _context()) == [last]


def test_a_stage_with_the_tagger_says_so_to_its_rules() -> None:
    from private_vectors.text import Sanitizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert Sanitizer("person", detector="model")._settings.tagger
        assert Sanitizer("person")._settings.tagger  # (the default for a concept with names)
        assert not Sanitizer("person", detector="rules")._settings.tagger


def test_an_initial_before_lower_case_words_is_a_species_not_a_name() -> None:
    from private_vectors.text.rules.name_shape import MixedCaps, species_shaped

    assert species_shaped("C. elegans") and species_shaped("E. coli") and species_shaped("S. aureus")
    assert not species_shaped("C. Elliott") and not species_shaped("c. elliott") and not species_shaped("A. Okafor")
    text = "Neurons of C. elegans were imaged; c. elliott and C. Elliott wrote it."
    species = Span(11, 21, "PERSON", 0.8, "tagger")
    lower, upper = Span(35, 45, "PERSON", 0.8, "tagger"), Span(50, 60, "PERSON", 0.8, "tagger")
    assert [text[s.start:s.end] for s in (species, lower, upper)] == ["C. elegans", "c. elliott", "C. Elliott"]
    assert MixedCaps().apply(text, [species, lower, upper], _context()) == [lower, upper]
    assert MixedCaps(off=["species"]).apply(text, [species, lower, upper], _context()) == [species, lower, upper]


def test_another_tagger_folder_enters_through_the_registry_as_the_shipped_one_does() -> None:
    """A weight folder written by scripts/train_tagger.py, registered as a TaggerRecognizer and
    named in recognizers=, gives the stage detector="model" gives with the same weights (here the
    shipped folder by its path), its spans treated as the tagger's by the case checks; it replaces
    the shipped tagger rather than running beside it."""
    from private_vectors.text import Sanitizer, registry
    from private_vectors.text_model import builtin_path

    name = registry.add_recognizer(TaggerRecognizer(["PERSON"], model=builtin_path()), replace=True)
    try:
        assert name == f"tagger:{builtin_path().name}" and learned(Span(0, 1, "PERSON", 1.0, name))
        texts = ["i wrote to amelia okafor today", "Cox regression and Kaplan-Meier curves in 300 patients."]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = Sanitizer("person", detector="model", timeout=None)
            registered = Sanitizer("person", recognizers=[name], timeout=None)
        assert registered._settings.tagger
        names = [d.name for d in registered.detectors]  # the folder's tagger takes the shipped one's place
        assert name in names and "tagger" not in names and registered.options.detector == "rules"
        assert registered.apply(texts) == model.apply(texts)
        assert registered.apply(texts[:1]) == ["i wrote to <PERSON> today"]
    finally:
        registry.remove_recognizer(name)


def test_a_tagger_folder_that_is_not_there_is_refused_naming_model(tmp_path) -> None:
    for missing in (tmp_path / "no-such-tagger", str(tmp_path / "no-such-tagger"), "./no-such-tagger"):
        with pytest.raises(InvalidParameterError, match="model"):
            TaggerRecognizer(model=missing)


def test_a_label_can_have_its_own_threshold_and_the_model_stage_gives_places_one() -> None:
    from private_vectors.text.stage_config import MODEL_THRESHOLDS, model_recognizer

    class Found:  # the model's spans, as its decoder returns them
        def spans(self, texts: list[str]) -> list[list[Span]]:
            return [[Span(0, 5, "LOCATION", 0.42, "m"), Span(6, 11, "PERSON", 0.42, "m"),
                     Span(12, 17, "LOCATION", 0.38, "m")] for _ in texts]

    rec = TaggerRecognizer(["PERSON", "LOCATION"], thresholds={"LOCATION": 0.4})
    rec._loaded = Found()
    assert [(s.start, s.label) for s in rec.spans(["Leeds Maria Tromo"])[0]] == [(0, "LOCATION")]
    assert rec._lowest() == 0.4 and TaggerRecognizer.from_config(rec.get_config()).thresholds == {"LOCATION": 0.4}
    assert "thresholds" not in TaggerRecognizer(["PERSON"]).get_config()
    with pytest.raises(InvalidParameterError, match="thresholds"):
        TaggerRecognizer(thresholds={"LOCATION": 1.5})
    assert dict(MODEL_THRESHOLDS) == {"LOCATION": 0.4, "PERSON": 0.4}
    assert model_recognizer("PII").thresholds == {"LOCATION": 0.4, "PERSON": 0.4}  # type: ignore[attr-defined]
    assert model_recognizer("person").thresholds == {"PERSON": 0.4}  # type: ignore[attr-defined]
