"""What a user meets on day one: lower-case streets, ages after names, house numbers with their
street, a name between "Call" and a phone number, ordinary lower-case words that are also names,
and a document sanitized the same alone as in a batch (the keyed second pass aside)."""

from __future__ import annotations

import pytest

from private_vectors.text import Sanitizer, Span
from private_vectors.text.recognizers.regex import RegexDetector
from private_vectors.text.rules import BUILTIN_RULES, RuleContext, StageSettings

DOCS = [
    "Ottoline Vanderpump, 34, lives at 15 Elm Street in Reykjavik.",
    "ottoline vanderpump called again about the boiler.",
    "i visited reykjavik last summer with my sister.",
    "Please call Bartholomew Quist at 555-0142 tomorrow.",
    "bartholomew quist, 52, moved to 42 harbour road, galway.",
    "Email zebulon.q@example.org if the invoice is late.",
    "The meeting with Marisol Etxeberria is moved to Friday.",
    "marisol etxeberria lives in bilbao now.",
    "Our tenant Ingrid Solberg (29) pays on time.",
    "ingrid solberg asked about the parking permit.",
    "Reykjavik is cold in January, says Hallgrim.",
    "the package for tomasz wrobel arrived in gdansk.",
    "TOMASZ WROBEL, 41, SIGNED THE LEASE AT 15 ELM STREET.",
    "Send the refund to Aiyana Redcloud, 7 Birch Lane, Bozeman.",
    "aiyana redcloud's phone is 406-555-0199.",
    "Keanu Kahale works at the Hilo office.",
    "keanu kahale will call back after lunch.",
    "My neighbour Priya Raghunathan lives at Hauptstraße 5, Berlin.",
    "priya raghunathan, 38, changed her email address.",
    "Call Ottoline Vanderpump at 555-0142.",
]


def _locations(text):
    return [text[s.start:s.end] for s in RegexDetector().spans([text])[0] if s.label == "LOCATION"]


@pytest.mark.parametrize("text, street", [
    ("I live at 15 elm street in springfield.", "15 elm street"), ("my address is 221b baker street", "221b baker street"),
    ("ship to 1600 pennsylvania avenue nw", "1600 pennsylvania avenue"), ("LIVES AT 15 ELM STREET", "15 ELM STREET"),
    ("Wir wohnen in der Bahnhofstr. 12 in Köln.", "Bahnhofstr. 12"), ("106 rúa olmos 44, belfast", "106 rúa olmos 44")])
def test_streets_in_any_case(text, street):
    assert street in _locations(text)


@pytest.mark.parametrize("text", ["we drove 20 miles down the road", "the 3 best road trips of the year",
                                  "turn left after 2 blocks on main street", "sent via email 12 times"])
def test_numbers_before_ordinary_words_are_no_street(text):
    assert _locations(text) == []


def _rule(name, text, spans, **settings):
    return BUILTIN_RULES[name]().apply(text, list(spans), RuleContext(StageSettings(**settings)))


def _span(text, value, label, detector="tagger", score=0.9):
    i = text.index(value)
    return Span(i, i + len(value), label, score, detector)


@pytest.mark.parametrize("text, age", [("maria lopez, 34, lives here", "34"), ("MARIA LOPEZ, 34, LIVES HERE", "34"),
                                       ("Olga Lavrentyeva , 28 , on Thursday", "28"), ("Ingrid Solberg (29) pays", "29")])
def test_an_age_right_after_a_name(text, age):
    name = text.split(",")[0].split(" (")[0].strip()
    out = _rule("name-age", text, [_span(text, name, "PERSON")], reported=frozenset(["PERSON", "AGE"]))
    assert [text[s.start:s.end] for s in out if s.label == "AGE"] == [age]
    assert _rule("name-age", text, [_span(text, name, "PERSON")], reported=frozenset(["PERSON"])) == \
        [_span(text, name, "PERSON")]  # a stage that does not replace ages adds none


def test_no_age_after_a_place_or_a_score():
    text = "Paris, 12, and Tim O'Gorman , 109 , took Derbyshire to 471"
    spans = [_span(text, "Paris", "LOCATION"), _span(text, "Tim O'Gorman", "PERSON")]
    assert _rule("name-age", text, spans, reported=frozenset(["AGE"])) == spans


@pytest.mark.parametrize("text, value, joined", [
    ("Send it to 42 Baker Street, please.", "Baker Street", "42 Baker Street"),
    ("my address is 221b baker street", "baker street", "221b baker street"),
    ("Meine Adresse ist Hauptstraße 5, Berlin.", "Hauptstraße", "Hauptstraße 5"),
    ("Her flat is at 12 Kirkgate, Otley.", "Kirkgate", "12 Kirkgate"),
    ("Soccer: Japan 2 Syria 1", "Syria", "Syria"), ("in 3 London hotels", "London", "London"),
    ("Bahnhofstraße 1996 was the year", "Bahnhofstraße", "Bahnhofstraße")])
def test_house_numbers_join_their_street(text, value, joined):
    out = _rule("house-numbers", text, [_span(text, value, "LOCATION")])
    assert [text[s.start:s.end] for s in out] == [joined]


def test_lower_case_guesses_need_the_tagger_where_it_reads():
    text = "can you check the bill for march? the rose bush needs water, my name is bill"
    bill, rose = _span(text, "bill", "PERSON", "names", 0.6), _span(text, "rose bush", "PERSON", "names", 0.6)
    cued = Span(text.rindex("bill"), len(text), "PERSON", 0.75, "regex")
    tagged = _span(text, "rose bush", "PERSON", "tagger", 0.76)
    assert _rule("lower-case-guesses", text, [bill, rose, cued, tagged], tagger=True) == [rose, cued, tagged]
    assert _rule("lower-case-guesses", text, [bill, rose, cued], tagger=False) == [bill, rose, cued]
    opening = "Email zebulon@example.org today. Kenya won."
    email, kenya = _span(opening, "Email", "PERSON", "presidio", 0.85), _span(opening, "Kenya", "PERSON", "presidio", 0.85)
    assert _rule("lower-case-guesses", opening, [email, kenya], tagger=True) == [kenya]  # a country


def test_a_lower_case_name_no_vocabulary_knows_stays_without_the_tagger():
    text = "we received a short note from sefo zvobgo and a bill from mark jones"
    unknown, known = _span(text, "sefo zvobgo", "PERSON", "names", 0.6), _span(text, "mark jones", "PERSON", "names", 0.6)
    assert _rule("lower-case-guesses", text, [unknown, known], tagger=True) == [unknown]  # "mark", "jones": words
    rule = BUILTIN_RULES["lower-case-guesses"](off=("unknown-names",))
    assert rule.apply(text, [unknown, known], RuleContext(StageSettings(tagger=True))) == []
    place = _span(text, "sefo zvobgo", "LOCATION", "names", 0.6)  # names only: places keep the tagger's say
    assert _rule("lower-case-guesses", text, [place], tagger=True) == []
    assert _rule("lower-case-guesses", text + " and then" * 60, [unknown], tagger=True) == []  # 100 words or more
    german = "Das Wetter ist heute sehr schön."  # no English function word: the tagger's silence counts
    assert _rule("lower-case-guesses", german, [_span(german, "heute sehr schön", "PERSON", "names", 0.6)],
                 tagger=True) == []


def test_the_taggers_lower_case_name_takes_its_unknown_neighbour():
    text = "the landlord sent amelia okafor a reminder; ask nakamura okonkwo or John Okafor"
    amelia, nakamura = _span(text, "amelia", "PERSON", "tagger", 0.8), _span(text, "nakamura", "PERSON", "tagger", 0.8)
    john = _span(text, "John", "PERSON", "tagger", 0.8)
    out = _rule("lower-case-guesses", text, [amelia, nakamura, john], tagger=True)
    assert [text[s.start:s.end] for s in out] == ["amelia okafor", "nakamura okonkwo", "John"]  # "sent", "ask": known
    held = _span(text, "okafor", "LOCATION", "tagger", 0.7)  # another span holds the word: left to it
    assert _rule("lower-case-guesses", text, [amelia, held], tagger=True) == [amelia, held]
    rule = BUILTIN_RULES["lower-case-guesses"](off=("unknown-neighbours",))
    assert rule.apply(text, [amelia], RuleContext(StageSettings(tagger=True))) == [amelia]
    chat = "tbh amelia is here"  # the word before a name is not taken ("fyi", "hiya")
    tagged = _span(chat, "amelia", "PERSON", "tagger", 0.8)
    assert _rule("lower-case-guesses", chat, [tagged], tagger=True) == [tagged]
    long = text + " and then" * 60  # 100 words or more: not a short message
    assert _rule("lower-case-guesses", long, [amelia], tagger=True) == [amelia]


@pytest.fixture()
def model_stage():
    return Sanitizer("PII", detector="model")  # a new one per test: apply() remembers what it replaced


def test_day_one_documents_keep_nothing_personal(model_stage):
    out = dict(zip(DOCS, model_stage.apply(DOCS), strict=True))
    assert out[DOCS[0]] == "<PERSON>, <AGE>, lives at <LOCATION> in <LOCATION>."
    assert out[DOCS[12]] == "<PERSON>, <AGE>, SIGNED THE LEASE AT <LOCATION>."
    assert out[DOCS[19]] == "Call <PERSON> at <PHONE_NUMBER>."
    assert "Hauptstraße" not in out[DOCS[17]] and " 5" not in out[DOCS[17]]
    for raw in ("Vanderpump", "vanderpump", "Quist", "quist", "elm", "Elm", "34", "52", "41", "38"):
        assert not any(raw in o.split() or raw + "," in o for o in out.values()), raw


def test_a_document_is_sanitized_alone_as_in_its_batch(model_stage):
    """Detection does not depend on the batch: each document's spans alone are its spans in the
    batch, but for the keyed second pass (an entity detected elsewhere in the batch is replaced
    here too, by design: the text-stage guide says so)."""
    batch = model_stage.document_spans(DOCS)
    for doc, in_batch in zip(DOCS, batch, strict=True):
        alone = model_stage.document_spans([doc])[0]
        covered = lambda spans: {i for s in spans for i in range(s.start, s.end)}  # noqa: E731
        assert covered(alone) <= covered(in_batch), doc
        extra = covered(in_batch) - covered(alone)
        keyed = covered([s for s in in_batch if s.detector == "keyed-index"])
        assert extra <= keyed, doc


@pytest.mark.parametrize("key", [None, "day-one-test-key-7Hq2Lw9Xe4"])
def test_a_llamaindex_pipeline_run_twice_emits_nothing_the_second_time(key, tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.vector_stores import SimpleVectorStore

    from private_vectors import PrivateEmbedding
    from private_vectors.llamaindex import PrivateIngestionPipeline, PrivateLlamaEmbedding

    def pipeline():
        ef = PrivateEmbedding(concept="PII", model="fake", eps=20, key=key)
        return PrivateIngestionPipeline(transformations=[SentenceSplitter(), PrivateLlamaEmbedding(embedding=ef)],
                                        docstore=SimpleDocumentStore(), vector_store=SimpleVectorStore())

    def documents():
        return [Document(text=t, id_=f"doc-{i}", metadata={"author": DOCS[(i + 3) % len(DOCS)].split(",")[0]})
                for i, t in enumerate(DOCS)]

    first = pipeline()
    assert len(first.run(documents=documents())) == len(DOCS)
    assert first.run(documents=documents()) == []  # the same pipeline again
    first.persist(str(tmp_path))
    again = pipeline()
    again.load(str(tmp_path))
    assert again.run(documents=documents()) == []  # a new process reading what the first one stored


@pytest.mark.parametrize("text, value, extent", [
    ("the view from the Empire State Building tonight", "Empire State", "Empire State Building"),
    ("Saturday 8pm Hotel Elegante with Steve", "Elegante", "Hotel Elegante"),
    ("Potbelly in Chicago , IL http://bit.ly/x", "Chicago", "Chicago , IL"),
    ("funds secured by Belgrade airport , Tanjug said", "Belgrade", "Belgrade"),  # a lower-case type: no name part
    ("in Paris, OK, we met", "Paris", "Paris, OK"),
    ("finals tonight at Harrison High School 5pm", "Harrison", "Harrison High School"),  # part institutions
    ("16 cops blocking Ecuadorian Embassy entrance", "Ecuadorian", "Ecuadorian Embassy")])
def test_a_place_takes_its_type_word_and_state_code(text, value, extent):
    out = _rule("place-extent", text, [_span(text, value, "LOCATION")])
    assert [text[s.start:s.end] for s in out] == [extent]


def test_an_institution_type_is_a_part_of_its_own():
    from private_vectors.text.rules.place_extent import PlaceExtent

    text = "finals tonight at Harrison High School 5pm"
    span = _span(text, "Harrison", "LOCATION")
    assert PlaceExtent(off=["institutions"]).apply(text, [span], RuleContext(StageSettings())) == [span]
    assert PlaceExtent().get_config() == {"name": "place-extent", "version": "2"}


def test_a_venue_before_a_time_is_a_place():
    for text, venue in (("Betta be at Elements tonight BOGO drinks", "Elements"),
                        ("We will be @ Glover Park on Saturday", "Glover Park")):
        assert venue in _locations(text)
    assert _locations("arrived at 5 tonight, at Monday tomorrow") == []
