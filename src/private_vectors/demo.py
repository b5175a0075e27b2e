"""``private-vectors demo``: the day-one job on the embedded defaults.

Encodes a few built-in sentences with the default model, perturbs them with the
chosen mechanism and prints how similarities and retrieval change.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

SENTENCES = [
    "Maria Lopez booked a flight to Madrid for Monday.",
    "The patient reported a persistent cough and mild fever.",
    "Call John Smith at 555-0199 about the invoice.",
    "Quarterly revenue grew by twelve percent.",
    "The hiking trail closes after heavy snowfall.",
]
QUERIES = ["travel plans to Spain", "symptoms of a respiratory infection", "company earnings report"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="run the day-one example on the default model")
    p.add_argument("--eps", type=float, default=10.0, help="privacy parameter (per 1/sqrt(n) of L2)")
    p.add_argument("--model", default=None, help="sentence-transformers name or path (default: packaged MiniLM)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .encoders import load_encoder
    from .mechanisms import LaplaceMechanism

    enc = load_encoder(args.model)
    docs = enc.encode(SENTENCES)
    mech = LaplaceMechanism(epsilon=args.eps, unit=1 / np.sqrt(enc.dim))
    noisy = mech.perturb(docs)
    q = enc.encode(QUERIES)
    for qi, query in enumerate(QUERIES):
        clean_top = SENTENCES[int(np.argmax(docs @ q[qi]))]
        noisy_top = SENTENCES[int(np.argmax(noisy @ q[qi]))]
        print(f"query: {query!r}\n  clean top: {clean_top}\n  noisy top: {noisy_top}")
    print(json.dumps(mech.describe(dim=enc.dim), indent=2))
    return 0
