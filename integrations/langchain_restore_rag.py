"""LangChain RAG where the model only sees surrogates and the key holder gets the real names back.

    .venv/bin/python integrations/langchain_restore_rag.py              # default model, eps 10
    .venv/bin/python integrations/langchain_restore_rag.py --model fake --eps 40

The drop-in ``private_vectors.langchain.Chroma`` stores, per note, the surrogate text, its
perturbed vector and an encrypted restore record. A question goes to the retriever (its query
is sanitized with the same key, so "Maria Lopez" finds her surrogate) and, sanitized, into
the prompt; the model answers from the surrogate context. Only then are the retrieved notes
and the answer restored (``restore_step``, ``answer_step``): the model never sees a real name.

The model is a ``FakeListLLM`` (no network) scripted with the answers a model reading the
surrogate context would write, surname-alone and possessive forms included. The key comes
from ``PRIVATE_VECTORS_KEY`` or, for this demo, a fresh random one (never printed).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
from operator import itemgetter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notes import NOTES

QUESTIONS = {  # question -> the answer a model would give, written here in real terms
    "Where did Maria Lopez book a flight to?": "Maria Lopez flies to Madrid on Monday; Ms Lopez's booking is confirmed.",
    "Who was prescribed inhaled steroids for asthma?": "Dr. Chen treated Peter Novak's asthma; Novak now uses inhaled steroids.",
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--eps", type=float, default=10.0)
    p.add_argument("--path", default=None, help="Chroma folder (default: a temporary one)")
    args = p.parse_args(argv)

    from private_vectors import PrivateEmbedding
    from private_vectors.langchain import Chroma

    key = os.environ.get("PRIVATE_VECTORS_KEY") or secrets.token_urlsafe(32)
    ef = PrivateEmbedding(concept="PII", sanitize="surrogate", key=key, eps=args.eps, model=args.model)
    del key
    with tempfile.TemporaryDirectory(prefix="pv-restore-") as tmp:  # removed on exit
        store = Chroma(collection_name="notes", embedding_function=ef, persist_directory=args.path or tmp)
        return _run(store, ef)


def scripted_llm(ef):
    """A FakeListLLM answering each question, in order, with the surrogate form of its answer
    (what a model reading the surrogate context writes; the keyed text stage gives the same
    surrogates to the answer's names as to the documents')."""
    from langchain_core.language_models.fake import FakeListLLM

    return FakeListLLM(responses=ef.pipeline.sanitize_queries(list(QUESTIONS.values())))


def build_chain(store, ef, llm):
    """retriever + sanitized question -> prompt -> model -> (restored answer, restored context)."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

    from private_vectors.integrations.restoring import answer_step, restore_step

    retriever = store.as_retriever(search_kwargs={"k": 4})
    prompt = PromptTemplate.from_template("Answer from the context.\n\nContext:\n{context}\n\nQuestion: {question}")
    to_model = ({"context": itemgetter("context") | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs)),
                 "question": itemgetter("question")} | prompt | llm | StrOutputParser())
    return (RunnableParallel(context=retriever, question=RunnableLambda(lambda q: ef.pipeline.sanitize_queries([q])[0]))
            | RunnablePassthrough.assign(answer=to_model)
            | RunnableParallel(model_answer=itemgetter("answer"), model_context=itemgetter("context"),
                               answer=answer_step(ef), context=itemgetter("context") | restore_step(ef)))


def _run(store, ef) -> int:
    ids = [f"note-{i}" for i in range(len(NOTES))]
    store.add_texts(NOTES, ids=ids)
    print(f"== stored {len(NOTES)} surrogate notes with encrypted restore records through {ef!r}")
    chain = build_chain(store, ef, scripted_llm(ef))
    for q in QUESTIONS:
        out = chain.invoke(q)
        print(f"\nQ: {q}")
        for d in out["model_context"]:
            print(f"   model saw:  {d.page_content}")
        print(f"   model said: {out['model_answer']}")
        for d in out["context"]:
            print(f"   restored:   {d.page_content}")
        print(f"A: {out['answer']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
