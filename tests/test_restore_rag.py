"""The restore steps for LangChain and LlamaIndex, and the RAG example with a fake LLM that
only sees surrogates while the key holder gets names back in the context and the answer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import _zygote
from private_vectors import PrivateEmbedding
from private_vectors.restore import RESTORE_KEY, RestoreError, prepare_with_restore
from test_restore import KEY

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "integrations"))


@pytest.fixture(scope="module")
def ef() -> PrivateEmbedding:
    emb = PrivateEmbedding(model="fake", concept="PII", sanitize="surrogate", key=KEY, eps=10)
    emb.get_config()
    return emb


@pytest.fixture(scope="module")
def docs(ef):
    from langchain_core.documents import Document

    texts = ["Amelia Okafor flew to Lagos on Monday.", "Call James Brown about the Berlin office."]
    stored, _, records = prepare_with_restore(ef, texts, ["a", "b"])
    return texts, [Document(page_content=s, metadata={RESTORE_KEY: r}, id=i)
                   for i, s, r in zip(["a", "b"], stored, records, strict=True)]


def test_langchain_restore_step_and_transformer(ef, docs):
    from langchain_core.documents import Document

    from private_vectors.integrations.restoring import RestoreTransformer, restore_step

    texts, stored = docs
    assert [d.page_content for d in restore_step(ef).invoke(stored)] == texts
    assert [d.page_content for d in RestoreTransformer(ef).transform_documents(stored)] == texts
    plain = Document(page_content="no record", id="z")
    with pytest.raises(RestoreError):
        restore_step(ef).invoke([plain])
    assert restore_step(ef, missing="keep").invoke([plain])[0].page_content == "no record"
    assert KEY not in repr(RestoreTransformer(ef))


def test_llamaindex_postprocessor(ef, docs):
    from llama_index.core.schema import NodeWithScore, TextNode

    from private_vectors.integrations.restoring import RestorePostprocessor

    texts, stored = docs
    nodes = [NodeWithScore(node=TextNode(id_=d.id, text=d.page_content, metadata=dict(d.metadata)), score=1.0)
             for d in stored]
    out = RestorePostprocessor(ef).postprocess_nodes(nodes)
    assert [n.node.text for n in out] == texts and [n.score for n in out] == [1.0, 1.0]


def test_answer_step(ef, docs):
    from private_vectors.integrations.restoring import answer_step

    _texts, stored = docs
    person = stored[0].page_content.split(" flew")[0]
    answer = f"{person} went there; {person.split()[-1]}'s trip was short."
    assert answer_step(ef).invoke({"answer": answer, "context": stored}) == \
        "Amelia Okafor went there; Okafor's trip was short."


def test_rag_example_restores_context_and_answer(tmp_path):
    res = _zygote.run([str(ROOT / "integrations" / "langchain_restore_rag.py"), "--model", "fake",  # a new process (tests/_zygote.py)
                       "--eps", "40", "--path", str(tmp_path / "store")], timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    first = out.split("Q: Where did Maria Lopez book a flight to?", 1)[1].split("\nQ:", 1)[0]
    seen = "\n".join(line for line in first.splitlines() if "model s" in line)
    assert "Maria" not in seen and "Lopez" not in seen and "Madrid" not in seen  # the model saw surrogates only
    assert "restored:   Maria Lopez, born 1984-03-12, booked a flight to Madrid for Monday." in first
    assert "A: Maria Lopez flies to Madrid on Monday; Ms Lopez's booking is confirmed." in first
    second = out.split("Q: Who was prescribed inhaled steroids for asthma?", 1)[1]
    assert "Novak" not in "\n".join(line for line in second.splitlines() if "model s" in line)
    assert "A: Dr. Chen treated Peter Novak's asthma; Novak now uses inhaled steroids." in second
