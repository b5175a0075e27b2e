"""``private-vectors audit`` on stores written without the library: a plain ``langchain_chroma``
store with planted names and phone numbers is counted against what was planted, and compared with
the same documents written through private_vectors; a LangChain FAISS folder (its pickle read
without running it) and a LlamaIndex persist folder are read.

The default run audits 40 documents with a small MLC attacker (about 30 s of presidio, spaCy and
the copy's text stage on 2 cores); ``-m slow`` audits 200 documents with the default MLC attacker
(about 4 minutes)."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_chroma")
pytest.importorskip("presidio_analyzer")

from langchain_core.embeddings import Embeddings

from private_vectors.encoders import load_encoder
from private_vectors.eval.audit import audit, summary_text

NAMES_CSV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pii" / "FakeNameGenerator.com_3000.csv"
SIZES = [pytest.param((40, {"mlc": {"epochs": 4, "hidden": [64]}, "prior": {}}), id="40-docs"),
         pytest.param((200, {"mlc": {}, "prior": {}}), id="200-docs", marks=pytest.mark.slow)]
TEMPLATES = ["{name} met the planning committee on Tuesday to discuss the harbour budget.",
             "Yesterday {name} signed the lease; call {phone} about the keys.",
             "The report prepared by {name} describes the water quality survey in detail.",
             "According to the nurse, {name} was admitted after a fall; reach the family on {phone}."]


class FakeEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over the library's fake encoder (what --model fake loads)."""

    def __init__(self) -> None:
        self.encoder = load_encoder("fake")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encoder.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encoder.encode([text])[0].tolist()


@pytest.fixture(scope="module", params=SIZES)
def planted(request: pytest.FixtureRequest) -> dict[str, Any]:
    from private_vectors.eval.synthetic import people_corpus

    if not NAMES_CSV.is_file():
        pytest.skip(f"needs {NAMES_CSV.name} (benchmarks/README.md: Set-up); not present")
    n, attackers = request.param
    people = people_corpus(NAMES_CSV, n).people
    ids, texts, metas, phones = [], [], [], []
    for i, (first, last) in enumerate(people):
        phone = f"+44 20 7946 0{i:03d}" if i % 2 else None  # Ofcom's numbers reserved for drama
        texts.append(TEMPLATES[i % 4].format(name=f"{first} {last}", phone=phone))
        metas.append({"author": f"{first} {last}"})
        ids.append(f"doc-{i}")
        if phone:
            phones.append(phone)
    return {"ids": ids, "texts": texts, "metas": metas, "people": people, "phones": phones, "n": n,
            "attackers": attackers}


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory: pytest.TempPathFactory, planted: dict[str, Any]) -> Path:
    from langchain_chroma import Chroma

    folder = tmp_path_factory.mktemp("plain") / "lc"
    Chroma(collection_name="notes", embedding_function=FakeEmbeddings(), persist_directory=str(folder)).add_texts(
        planted["texts"], metadatas=planted["metas"], ids=planted["ids"])
    return folder


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def report(plain_store: Path, planted: dict[str, Any]) -> dict[str, Any]:
    before = _hashes(plain_store)
    rep = audit(plain_store, kind="langchain", model="fake", attackers=planted["attackers"], quick=True,
                show_values=True, progress=False)
    assert _hashes(plain_store) == before  # audited from a copy
    return rep


def test_counts_match_the_planted_values(report: dict[str, Any], planted: dict[str, Any]) -> None:
    r = report["residual_pii"]
    assert report["store"]["protected"] is False and report["store"]["raw"] == "the store's text"
    n = planted["n"]
    assert report["coverage"]["audited"] == n
    kept = r["values_left_by_type"]
    phones, names = set(planted["phones"]), {f"{f} {s}" for f, s in planted["people"]}
    assert set(kept["PHONE_NUMBER"]) <= phones and r["raw_values_left_by_type"]["PHONE_NUMBER"] == len(phones)
    person = r["raw_values_left_by_type"]["PERSON"]
    # presidio (spaCy small) finds most planted names (163 of 200 at the slow size), never more than one per document
    assert 0.7 * n <= person <= n
    parts = names | {p for f, s in planted["people"] for p in (f, s)}
    assert all(v in parts for v in kept["PERSON"]), [v for v in kept["PERSON"] if v not in parts][:5]
    assert r["raw_identifiers_left"] == sum(n for t, n in r["raw_values_left_by_type"].items()
                                            if t not in ("DATE_TIME", "LOCATION", "NRP", "URL"))


def test_the_copy_through_the_library_keeps_none_of_them(report: dict[str, Any], planted: dict[str, Any]) -> None:
    after = report["after"]["residual_pii"]
    left = after["raw_values_left_by_type"]
    n = planted["n"]
    assert left.get("PHONE_NUMBER", 0) == 0 and left.get("PERSON", 0) <= 0.05 * n
    rows = {row["measure"].strip(): row for row in report["comparison"]}
    total = rows["identifier values kept in readable text"]
    assert total["before"] == report["residual_pii"]["raw_identifiers_left"] >= 0.7 * n + len(planted["phones"])
    assert total["after"] == after["raw_identifiers_left"] < total["before"] / 10
    assert rows["of which PERSON"]["before"] == report["residual_pii"]["raw_values_left_by_type"]["PERSON"]
    measures = [row["measure"].strip() for row in report["comparison"]]
    assert measures.index("of which PERSON") < measures.index("of which PHONE_NUMBER")  # the preset's order
    assert report["after"]["protection"]["eps"] == 10


def test_the_headline_uses_the_table_and_counts_identifiers_only(report: dict[str, Any]) -> None:
    text = summary_text(report)
    rows = {row["measure"].strip(): row for row in report["comparison"]}
    head = report["headline"]
    kept = rows["identifier values kept in readable text"]
    assert f"keeps {kept['before']} identifier values" in head and f"private_vectors, {kept['after']}." in head
    assert "DATE_TIME" not in head  # "on Tuesday", "Yesterday": counted in the table, not in the headline
    names = rows["first and last names an attacker recovers from the vectors"]
    for value in (names["before"], names["after"]):
        figure = f"{100 * value:.1f} %"
        assert figure in head and figure in text.split("## Personal data")[0]  # the table's own figure
    assert re.search(r"\+44 20 7946 0\d{3}", text)  # --show-values: values in the summary itself
    not_tested = text.split("## Not tested")[1]
    assert "{" not in not_tested and "--attackers mlc,nn,generative" in not_tested


def test_a_langchain_faiss_pickle_is_read_without_running_it(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    community = pytest.importorskip("langchain_community.vectorstores")
    from private_vectors.eval.audit_store import read_store

    texts = [f"Note {i}: Maria Lopez called about the invoice." for i in range(12)]
    community.FAISS.from_texts(texts, FakeEmbeddings(), metadatas=[{"author": "Maria Lopez"}] * 12).save_local(
        str(tmp_path / "lcf"))
    snap = read_store(tmp_path / "lcf")
    assert snap.kind == "langchain-faiss" and not snap.protected and len(snap.ids) == 12
    assert snap.texts[0].startswith("Note") and snap.metadata_texts[0] == "Maria Lopez"
    with (tmp_path / "lcf" / "index.pkl").open("wb") as fh:  # a pickle that would run code
        pickle.dump((print, {0: "x"}), fh)
    from private_vectors.errors import ArtefactError

    with pytest.raises(ArtefactError, match=r"builtins\.print"):
        read_store(tmp_path / "lcf")


def test_a_llamaindex_persist_folder_is_read(tmp_path: Path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from private_vectors.eval.audit_store import read_store

    docs = [Document(text=f"Note {i}: Tomas Berger paid.", metadata={"author": "Tomas Berger"}) for i in range(11)]
    VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8)).storage_context.persist(
        str(tmp_path / "li"))
    snap = read_store(tmp_path / "li")
    assert snap.kind == "llamaindex" and not snap.protected and len(snap.ids) == 11
    assert "Tomas Berger" in snap.texts[0] and snap.metadata_texts[0] == "Tomas Berger"
    assert snap.vectors.shape == (11, 8)


def test_a_remote_encoder_is_not_run_and_says_why(tmp_path: Path) -> None:
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.eval.audit_store import read_store

    col = chromadb.PersistentClient(path=str(tmp_path / "c")).create_collection("notes", embedding_function=None)
    col.add(ids=[f"d{i}" for i in range(12)], embeddings=[[float(i), 1.0] for i in range(12)],
            documents=[f"Maria Lopez paid invoice {i}." for i in range(12)])
    from private_vectors.eval.audit import _store_encoder

    snap = read_store(tmp_path / "c")
    assert snap.model is None and not snap.protected
    encoder, info = _store_encoder(snap, None)
    assert encoder is None and "--model" in info["why"]
    encoder, info = _store_encoder(snap, "openai:text-embedding-3-small")
    assert encoder is None and "remote" in info["why"]
    rep = audit(tmp_path / "c", model="openai:text-embedding-3-small", attackers={"prior": {}}, compare=False,
                progress=False)
    assert rep["retrieval"]["mode"] is None and "Not measured" in summary_text(rep)
    assert "remote" in summary_text(rep)
    json.dumps(rep, default=float)  # JSON-safe
