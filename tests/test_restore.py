"""Encrypted restore data: the key holder gets the originals back; a wrong key, an edited or a
swapped record is refused (fake encoder, generated documents)."""

from __future__ import annotations

import base64
import json

import pytest

from private_vectors import PrivateEmbedding
from private_vectors.errors import InvalidParameterError
from private_vectors.eval.synthetic import CONTACT_CITIES, CONTACT_FIRST, CONTACT_LAST
from private_vectors.eval.synthetic import contact_documents as generated_documents
from private_vectors.restore import (
    RECORD_PREFIX,
    RESTORE_KEY,
    RestoreError,
    Restorer,
    config_digest,
    prepare_with_restore,
    restore,
    restore_answer,
)

KEY = "a restore test key of enough length"
OTHER = "another key, also long enough!!!"


@pytest.fixture(scope="module")
def ef() -> PrivateEmbedding:
    emb = PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=KEY, eps=10)
    emb.get_config()  # as a store does when it records the config: the collection's salt is fixed
    return emb


@pytest.fixture(scope="module")
def written(ef):
    texts = generated_documents(120)
    ids = [f"doc-{i}" for i in range(len(texts))]
    stored, vectors, records = prepare_with_restore(ef, texts, ids)
    return texts, ids, stored, vectors, records


def test_restored_text_equals_original_for_120_documents(ef, written):
    texts, ids, stored, vectors, records = written
    assert len(vectors) == len(texts) and records is not None
    changed = sum(s != t for s, t in zip(stored, texts, strict=True))
    assert changed >= 100  # the text stage did replace values
    restorer = Restorer.for_embedding(ef)
    back = [restorer.restore_text(i, s, r) for i, s, r in zip(ids, stored, records, strict=True)]
    assert back == texts
    n_spans = sum(len(restorer.open(i, r).replacements) for i, r in zip(ids, records, strict=True))
    assert n_spans >= 3 * len(texts)


def test_no_plaintext_value_in_records(written):
    _texts, _, stored, _, records = written
    blob = "\n".join(records)
    decoded = b"".join(base64.urlsafe_b64decode(r[len(RECORD_PREFIX):]) for r in records)
    for name in CONTACT_FIRST + CONTACT_LAST + CONTACT_CITIES:
        if not any(name in s for s in stored):  # a value the stored text itself still shows is no secret
            assert name not in blob and name.encode() not in decoded
    assert "@mail" not in blob and b"@mail" not in decoded and b"415 555" not in decoded


def test_records_are_padded_to_size_classes(written):
    _, _, _, _, records = written
    sizes = {len(base64.urlsafe_b64decode(r[len(RECORD_PREFIX):])) - 12 - 16 for r in records}
    assert sizes <= {256, 512, 1024, 2048} and len(sizes) <= 2


def test_wrong_key_is_refused(ef, written):
    _, ids, stored, _, records = written
    other = PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=OTHER, eps=10)
    cfg = ef.get_config()
    wrong = Restorer(OTHER, salt=bytes.fromhex(cfg["key_salt"]), context=config_digest(cfg))
    with pytest.raises(RestoreError, match="another key"):
        wrong.restore_text(ids[0], stored[0], records[0])
    with pytest.raises(RestoreError):
        Restorer.for_embedding(other).open(ids[0], records[0])


def test_swapped_record_is_refused(ef, written):
    _, ids, stored, _, records = written
    restorer = Restorer.for_embedding(ef)
    with pytest.raises(RestoreError, match="another document"):
        restorer.restore_text(ids[0], stored[0], records[1])  # another document's record
    with pytest.raises(RestoreError):
        restorer.restore_text(ids[1], stored[0], records[0])  # the record under another id


def test_record_of_another_collection_is_refused(ef, written):
    _, ids, _stored, _, records = written
    cfg = ef.get_config()
    other_salt = Restorer(KEY, salt=b"another collection salt!", context=config_digest(cfg))
    with pytest.raises(RestoreError):
        other_salt.open(ids[0], records[0])
    other_config = Restorer(KEY, salt=bytes.fromhex(cfg["key_salt"]), context=config_digest({**cfg, "key_check": "x"}))
    with pytest.raises(RestoreError):
        other_config.open(ids[0], records[0])


@pytest.mark.parametrize("where", [len(RECORD_PREFIX) + 20, -5, -40])
def test_edited_record_is_refused(ef, written, where):
    _, ids, stored, _, records = written
    rec = records[2]
    flipped = "A" if rec[where] != "A" else "B"
    edited = rec[:where] + flipped + rec[where + 1:] if where > 0 else rec[:len(rec) + where] + flipped + \
        rec[len(rec) + where + 1:]
    with pytest.raises(RestoreError):
        Restorer.for_embedding(ef).restore_text(ids[2], stored[2], edited)


def test_truncated_or_foreign_record_is_refused(ef, written):
    _, ids, _stored, _, records = written
    restorer = Restorer.for_embedding(ef)
    for bad in (records[0][:60], "not a record", None, RECORD_PREFIX + "!!!"):
        with pytest.raises(RestoreError):
            restorer.open(ids[0], bad)


def test_edited_document_is_refused(ef, written):
    _, ids, stored, _, records = written
    with pytest.raises(RestoreError, match="not the text"):
        Restorer.for_embedding(ef).restore_text(ids[3], stored[3] + " ", records[3])


def test_position_based_restore_is_no_global_replace(ef):
    """A surrogate written in one place is restored there only: the same string elsewhere in the
    document (there as an ordinary word the stage left alone) stays."""
    texts = ["Amelia Okafor met the team in Lagos."]
    stored, _, records = prepare_with_restore(ef, texts, ["x"])
    restorer = Restorer.for_embedding(ef)
    data = restorer.open("x", records[0])
    person = next(r for r in data.replacements if r.label == "PERSON")
    assert person.original == "Amelia Okafor" and "Okafor" not in repr(data) and "Okafor" not in repr(person)
    # a document whose text also holds the surrogate as plain text is refused (not the recorded text)
    with pytest.raises(RestoreError):
        restorer.restore_text("x", stored[0] + " " + person.written, records[0])


def test_escaped_placeholder_is_restored(written):
    texts, _, stored, _, _ = written
    assert "‹PERSON›" in stored[0] and "<PERSON>" in texts[0]


def test_langchain_documents_restore_and_drop_the_record(ef, written):
    from langchain_core.documents import Document

    texts, ids, stored, _, records = written
    docs = [Document(page_content=s, metadata={RESTORE_KEY: r, "source": "x"}, id=i)
            for i, s, r in zip(ids[:5], stored[:5], records[:5], strict=True)]
    back = restore(docs, ef)
    assert [d.page_content for d in back] == texts[:5]
    assert all(RESTORE_KEY not in d.metadata and d.metadata["source"] == "x" for d in back)
    with pytest.raises(RestoreError, match="no restore record"):
        restore([Document(page_content="x", id="y")], ef)
    assert restore([Document(page_content="x", id="y")], ef, missing="keep")[0].page_content == "x"


def test_llamaindex_nodes_restore(ef, written):
    from llama_index.core.schema import NodeWithScore, TextNode

    texts, ids, stored, _, records = written
    nodes = [NodeWithScore(node=TextNode(id_=i, text=s, metadata={RESTORE_KEY: r}), score=0.5)
             for i, s, r in zip(ids[:3], stored[:3], records[:3], strict=True)]
    back = restore(nodes, ef)
    assert [n.node.text for n in back] == texts[:3] and all(RESTORE_KEY not in n.node.metadata for n in back)


def test_answer_restore_full_surname_possessive_and_case(ef):
    texts = ["Amelia Okafor flew to Lagos with Ms Okafor's notes."]
    stored, _, records = prepare_with_restore(ef, texts, ["a"])
    restorer = Restorer.for_embedding(ef)
    data = restorer.open("a", records[0])
    full = next(r.written for r in data.replacements if r.original == "Amelia Okafor")
    city = next(r.written for r in data.replacements if r.original == "Lagos")
    surname = full.split()[-1]
    docs = [("a", stored[0], records[0])]
    answer = f"{full} went to {city}. {surname}'s trip was long; {full.upper()} agreed. {surname.lower()}"
    got = restorer.restore_answer(answer, docs)
    assert got == f"Amelia Okafor went to Lagos. Okafor's trip was long; AMELIA OKAFOR agreed. {surname.lower()}"
    assert restore_answer(answer, docs, ef) == got


def test_answer_restore_leaves_ambiguous_placeholders(ef):
    red = PrivateEmbedding(model="fake", concept="PII", sanitize="redact", key=KEY, eps=10)
    red.get_config()
    texts = ["Amelia Okafor called James Brown from Lagos.", "Maria Lopez lives in Madrid."]
    stored, _, records = prepare_with_restore(red, texts, ["p", "q"])
    assert "<PERSON>" in stored[0]
    restorer = Restorer.for_embedding(red)
    assert restorer.restore_text("p", stored[0], records[0]) == texts[0]  # position-based: exact
    docs = [("p", stored[0], records[0])]
    answer = "<PERSON> spoke to <PERSON> from <LOCATION>."
    # two people behind <PERSON>: left as is; one place behind <LOCATION>: restored
    assert restorer.restore_answer(answer, docs) == "<PERSON> spoke to <PERSON> from Lagos."


def test_answer_form_that_is_also_plain_text_is_not_restored(ef):
    """A surrogate word the documents also show as plain text is ambiguous in an answer: kept."""
    from private_vectors.restore import Replacement

    restorer = Restorer.for_embedding(ef)
    a = "Saanvi Brandt flew to Aalborg."
    b = "The Brandt report was filed."  # "Brandt" here is no surrogate
    rec_a = restorer.seal("a", a, [Replacement(0, 13, "PERSON", "Saanvi Brandt", "Amelia Okafor"),
                                   Replacement(22, 29, "LOCATION", "Aalborg", "Lagos")])
    rec_b = restorer.seal("b", b, [])
    both = [("a", a, rec_a), ("b", b, rec_b)]
    answer = "Saanvi Brandt said Brandt's trip to Aalborg was long."
    assert restorer.restore_answer(answer, both) == "Amelia Okafor said Brandt's trip to Lagos was long."
    assert restorer.restore_answer(answer, both[:1]) == "Amelia Okafor said Okafor's trip to Lagos was long."
    # a surrogate word behind two different originals is ambiguous too
    c = "Ravi Brandt called."
    rec_c = restorer.seal("c", c, [Replacement(0, 11, "PERSON", "Ravi Brandt", "Ravi Shah")])
    got = restorer.restore_answer("Brandt and Saanvi Brandt", [("a", a, rec_a), ("c", c, rec_c)])
    assert got == "Brandt and Amelia Okafor"


def test_answer_restore_possessive_single_name(ef):
    from private_vectors.restore import Replacement

    restorer = Restorer.for_embedding(ef)
    a = "Later Ms Brandt's assistant wrote."
    rec = restorer.seal("a", a, [Replacement(6, 17, "PERSON", "Ms Brandt's", "Ms Okafor's")])
    assert restorer.restore_answer("Brandt wrote; Ms Brandt's notes.", [("a", a, rec)]) == \
        "Okafor wrote; Ms Okafor's notes."


def test_unkeyed_or_raw_text_has_no_records():
    unkeyed = PrivateEmbedding(model="fake", concept="PII", sanitize="redact", eps=10)
    stored, _, records = prepare_with_restore(unkeyed, ["Amelia Okafor flew."], ["a"])
    assert records is None and stored is not None
    with pytest.raises(InvalidParameterError, match="keyed text stage"):
        Restorer.for_embedding(unkeyed)


def test_restorer_shows_no_key(ef):
    restorer = Restorer.for_embedding(ef)
    assert KEY not in repr(restorer) and "redacted" in repr(restorer)
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(restorer)


def test_sanitizer_on_its_own(written):
    from private_vectors.text import Sanitizer

    s = Sanitizer("PII", policy="surrogate", key=KEY)
    restorer = Restorer.for_sanitizer(s)
    texts = generated_documents(5, seed=1)
    out, records = restorer.sanitize(texts, range(5), s)
    assert out != texts
    assert [restorer.restore_text(i, o, r) for i, o, r in zip(range(5), out, records, strict=True)] == texts
    body = json.dumps(records)
    assert "Okafor" not in body


def test_answer_single_word_value_matches_as_written_or_in_capitals(ef):
    from private_vectors.restore import Replacement

    restorer = Restorer.for_embedding(ef)
    a = "They met in Nice."
    rec = restorer.seal("a", a, [Replacement(12, 16, "LOCATION", "Nice", "Lagos")])
    got = restorer.restore_answer("Nice was nice; NICE.", [("a", a, rec)])
    assert got == "Lagos was nice; LAGOS."


def test_no_key_in_traceback_locals():
    import traceback

    secret = "a secret that must not show up 12345"
    for bad in ({"salt": b"short"}, {"salt": b"long enough salt", "context": ""}):
        try:
            Restorer(secret, **{"context": "x", **bad})
        except Exception as exc:  # every frame's locals are inspected
            frames = traceback.TracebackException.from_exception(exc, capture_locals=True).stack
            ours = [f for f in frames if "/private_vectors/" in f.filename]
            assert ours and all(secret not in str(f.locals) for f in ours)
        else:  # pragma: no cover
            raise AssertionError("bad parameters accepted")


def test_normalised_input_restores_exactly(ef):
    """Detection runs on normalised text (full-width letters, zero-width characters, names in
    capitals); the replaced characters are the original ones, and so is what comes back."""
    texts = ["Ａｍｅｌｉａ Ｏｋａｆｏｒ flew to Lagos.", "Call Ame\u200blia Oka\u200bfor today.",
             "Report by AMELIA OKAFOR, filed in Lagos.", "Wrote to <AMELIA_OKAFOR> at amelia@okafor.ng"]
    stored, _, records = prepare_with_restore(ef, texts, list("abcd"))
    restorer = Restorer.for_embedding(ef)
    assert [restorer.restore_text(i, s, r) for i, s, r in zip("abcd", stored, records, strict=True)] == texts
    assert sum(len(restorer.open(i, r).replacements) for i, r in zip("abcd", records, strict=True)) >= 4


def test_privacy_report_states_what_restore_data_reveals(ef):
    from private_vectors.restore import RESTORE_NOTE

    assert ef.privacy_report()["text_stage"]["restore_data"] == RESTORE_NOTE
    unkeyed = PrivateEmbedding(model="fake", concept="PII", sanitize="redact", eps=10)
    assert "restore_data" not in unkeyed.privacy_report()["text_stage"]
