"""The ``private-vectors audit`` sub-command (parser only; the audit is imported when it runs)."""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``audit`` to the ``private-vectors`` command."""
    p = sub.add_parser("audit", help="measure how much personal data a vector store leaks",
                       description="Audit a vector store: a Chroma folder (written by private_vectors, plain "
                                   "Chroma or langchain_chroma), a LangChain FAISS folder, a LlamaIndex persist "
                                   "folder or a PrivateFaissIndex folder. Reports the personal data its stored "
                                   "text keeps and what attackers recover from its vectors (names included); a "
                                   "store written without private_vectors is then written again through it and "
                                   "the two are compared. Prints counts, not values, unless --show-values; the "
                                   "store folder is not modified.")
    p.add_argument("store", help="the store's folder")
    p.add_argument("--raw", default=None, help="your raw documents: a .jsonl/.csv/.tsv/.parquet file with an id "
                                               "and a text field (a sample of the store's ids is enough); required "
                                               "for a store written through private_vectors, else the store's own "
                                               "text is used")
    p.add_argument("--id-field", default="id")
    p.add_argument("--text-field", default="text")
    p.add_argument("--kind", default="auto", choices=["auto", "chroma", "langchain", "faiss", "langchain-faiss",
                                                      "llamaindex"])
    p.add_argument("--collection", default=None, help="Chroma collection (default: the only one, or 'langchain')")
    p.add_argument("--model", default=None,
                   help="the store's encoder when the store does not record it (a sentence-transformers name or "
                        "folder): needed for the retrieval figures and used for the copy written through "
                        "private_vectors")
    p.add_argument("--concept", default="PII", help="the text concept of the copy and of the type order (default PII)")
    p.add_argument("--eps", type=float, default=10.0, help="eps of the copy written through private_vectors "
                                                          "(default 10)")
    p.add_argument("--no-compare", action="store_true",
                   help="do not write a store made without private_vectors again through it")
    p.add_argument("--key-env", default="PRIVATE_VECTORS_KEY",
                   help="environment variable holding the store's key (default PRIVATE_VECTORS_KEY); "
                        "the key is never read from the command line")
    p.add_argument("--queries", default=None, help="queries (.jsonl: id, text) for NDCG@10")
    p.add_argument("--qrels", default=None, help="judgements (BEIR .tsv: query-id, corpus-id, score)")
    p.add_argument("--quick", action="store_true", help="faster settings: presidio, clean encoding and retrieval on samples (the attacks on the "
                        "stored vectors still use every audited document)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-docs", type=int, default=None, help="audit at most this many documents")
    p.add_argument("--attackers", default=None,
                   help="comma-separated harness attackers (default mlc,nn,prior; also mlc-enc, generative)")
    p.add_argument("--no-clean-baseline", action="store_true", help="skip the attack on clean vectors")
    p.add_argument("--show-values", action="store_true",
                   help="show the identifier values found, in the summary and the report (default: counts only)")
    p.add_argument("--cache-dir", default=None,
                   help="cache clean vectors of the raw texts here (hashed names, no text; outside the store)")
    p.add_argument("--out", default=None, help="folder for audit.json, audit.md and audit.png")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the summary")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_audit)


def _cmd_audit(args: argparse.Namespace) -> int:
    from ..keys import SecretKey
    from .audit import audit, summary_text

    key = SecretKey.resolve(None, min_bytes=1, env=args.key_env)  # a redacting SecretKey (or None)
    attackers = None if args.attackers is None else {a.strip(): {} for a in args.attackers.split(",") if a.strip()}
    concept = [c.strip() for c in args.concept.split(",")] if "," in args.concept else args.concept
    report = audit(args.store, args.raw, key=key, attackers=attackers, kind=args.kind, collection=args.collection,
                   model=args.model, concept=concept, eps=args.eps, compare=not args.no_compare,
                   queries=args.queries, qrels=args.qrels, quick=args.quick, seed=args.seed,
                   clean_baseline=not args.no_clean_baseline, show_values=args.show_values,
                   cache_dir=args.cache_dir, max_docs=args.max_docs, id_field=args.id_field,
                   text_field=args.text_field, progress=not args.no_progress, out=args.out)
    if args.json:
        print(json.dumps(report, indent=2, default=float))
    else:
        sys.stdout.write(summary_text(report))
    return 0
