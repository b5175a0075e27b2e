"""LangChain retrieval pipeline over Chroma with PrivateEmbedding and a template "LLM" (no network).

    .venv/bin/python integrations/langchain_rag.py                 # default model, concept PII, eps 10
    .venv/bin/python integrations/langchain_rag.py --model fake --concept none

retriever (the drop-in ``private_vectors.langchain.Chroma``: perturbed vectors and the
sanitized text, or no text without a text stage, then the application's own id → text lookup)
→ prompt → a template LLM that
answers from the retrieved context → text. Prints what was stored, each question's retrieved
context and answer, and the privacy report.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _notes import NOTES, QUERIES


def template_llm(prompt_value) -> str:
    """A stand-in for a chat model: answers with the first retrieved passage."""
    text = prompt_value.to_string()
    context = text.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0]
    first = context.strip().splitlines()[0] if context.strip() else "nothing relevant"
    return f"According to the notes: {first}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--concept", default="PII", help="concept to hide, or 'none'")
    p.add_argument("--eps", type=float, default=10.0)
    p.add_argument("--path", default=None, help="Chroma folder (default: a temporary one)")
    args = p.parse_args(argv)

    from private_vectors import PrivateEmbedding
    from private_vectors.langchain import Chroma

    concept = None if args.concept.lower() == "none" else args.concept
    ef = PrivateEmbedding(concept=concept, eps=args.eps, model=args.model)
    with tempfile.TemporaryDirectory(prefix="pv-langchain-") as tmp:  # removed on exit
        store = Chroma(collection_name="notes", embedding_function=ef, persist_directory=args.path or tmp)
        return _run(store, ef)


def _run(store, ef) -> int:
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    # the store keeps the sanitized text when a text stage runs (concept PII: redacted), else
    # vectors and ids only: the application then answers from its own records
    records = {f"note-{i}": note for i, note in enumerate(NOTES)}
    store.add_texts(list(records.values()), ids=list(records))
    print(f"== stored {len(NOTES)} perturbed documents through {ef!r}")

    retriever = store.as_retriever(search_kwargs={"k": 2})
    prompt = PromptTemplate.from_template("Answer from the context.\n\nContext:\n{context}\n\nQuestion: {question}")

    def format_docs(docs) -> str:
        return "\n".join(d.page_content or records[d.id] for d in docs)

    chain = ({"context": retriever | format_docs, "question": RunnablePassthrough()}
             | prompt | RunnableLambda(template_llm) | StrOutputParser())
    for q in QUERIES:
        docs = retriever.invoke(q)
        print(f"\nQ: {q}")
        for d in docs:
            print(f"   retrieved: {d.page_content or records[d.id]}")
        print(f"A: {chain.invoke(q)}")

    print("\n== privacy report")
    print(json.dumps(ef.privacy_report(NOTES), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
