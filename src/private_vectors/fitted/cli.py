"""``private-vectors concept …``: list concepts and (re-)fit them for a model or from user data.

Examples::

    private-vectors concept list
    private-vectors concept fit --concept PII --model all-MiniLM-L6-v2 --estimator subspace --out pii/
    private-vectors concept fit --name weekdays --tokens Monday,Tuesday,Friday --out weekdays/
    private-vectors concept fit --name pii-presidio --spans synth_dataset_v2.json --out pii2/
    private-vectors concept fit --name ddx --pairs test.json --removed-keys symptoms_mask,antecedents_mask --out ddx/
    # regenerate every shipped artefact of the default model (default estimator + the mask variant):
    private-vectors concept fit --concept all --estimator both --out src/private_vectors/data/concepts/all-MiniLM-L6-v2
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the ``concept`` command group to the CLI."""
    p = sub.add_parser("concept", help="list built-in concepts; fit a concept for a model or from your data")
    csub = p.add_subparsers(dest="concept_command", required=True)

    ls = csub.add_parser("list", help="built-in concepts and their shipped artefacts")
    ls.add_argument("--model", default=None, help="model id to look for shipped artefacts (default: packaged MiniLM)")
    ls.set_defaults(func=_cmd_list)

    f = csub.add_parser("fit", help="fit a concept (mask or subspace) and save it as an artefact folder")
    src = f.add_mutually_exclusive_group(required=True)
    src.add_argument("--concept", help="a built-in concept name, or 'all' (writes OUT/<concept>/ for each)")
    src.add_argument("--tokens", help="comma-separated concept tokens (with --sentences, or the generic corpus)")
    src.add_argument("--spans", type=Path, help="JSON / JSON-lines file of texts with labelled spans (presidio format)")
    src.add_argument("--pairs", type=Path, help="JSON / JSON-lines file of full/masked text pairs")
    src.add_argument("--spacy", type=Path, help="text file, one sentence a line; concept = spaCy entities (--labels)")
    f.add_argument("--name", help="concept name (required with --tokens/--spans/--pairs/--spacy)")
    f.add_argument("--sentences", type=Path, help="with --tokens: text file, one sentence a line")
    f.add_argument("--entity-types", help="with --spans: comma-separated entity types to keep")
    f.add_argument("--full-key", default="question_init", help="with --pairs: field of the full text")
    f.add_argument("--masked-key", default="question_mask", help="with --pairs: field of the masked text")
    f.add_argument("--removed-keys", help="with --pairs: comma-separated fields listing the removed values")
    f.add_argument("--labels", default="PERSON,GPE,LOC", help="with --spacy: comma-separated entity labels")
    f.add_argument("--model", default=None, help="sentence-transformers name or local path (default: packaged MiniLM)")
    f.add_argument("--estimator", default="subspace", choices=["subspace", "mask", "both"],
                   help="'both' saves the subspace to OUT and the mask to OUT/mask")
    f.add_argument("--out", type=Path, required=True, help="output folder")
    f.add_argument("--n-pairs", type=int, default=None, help="pairs to use (default: 2000 generated / all data)")
    f.add_argument("--rank", type=int, default=None, help="subspace rank k (default: min(64, dim // 6))")
    f.add_argument("--share", type=float, default=0.9, help="trace share on the subspace")
    f.add_argument("--method", default="class_means", choices=["class_means", "probe", "pca"], help="subspace method")
    f.add_argument("--l0-lambda", type=float, default=0.5, help="SPARSE mask L0 weight λ (per dimension fraction)")
    f.add_argument("--seed", type=int, default=0, help="seed of pair generation and mask training")
    f.set_defaults(func=_cmd_fit)


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text("utf-8").splitlines() if line.strip()]


def _concepts(args: argparse.Namespace) -> list[Any]:
    from .spec import BUILTIN_CONCEPTS, Concept, builtin_concept

    if args.concept:
        names = list(BUILTIN_CONCEPTS) if args.concept.lower() == "all" else [args.concept]
        return [builtin_concept(n) for n in names]
    if not args.name:
        raise InvalidParameterError("--name", "a concept name with --tokens/--spans/--pairs/--spacy", None)
    if args.tokens:
        sents = _lines(args.sentences) if args.sentences else None
        return [Concept.from_tokens(args.name, _split(args.tokens), sents)]
    if args.spans:
        return [Concept.from_spans(args.name, args.spans, entity_types=_split(args.entity_types) or None)]
    if args.pairs:
        return [Concept.from_pairs(args.name, args.pairs, full_key=args.full_key, masked_key=args.masked_key,
                                   removed_keys=_split(args.removed_keys) or None)]
    return [Concept.from_spacy(args.name, _lines(args.spacy), labels=_split(args.labels))]


def _cmd_fit(args: argparse.Namespace) -> int:
    from ..encoders import load_encoder
    from .artefact import fit_concept

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    enc = load_encoder(args.model)
    concepts = _concepts(args)
    many = len(concepts) > 1
    kinds = ["subspace", "mask"] if args.estimator == "both" else [args.estimator]
    report = []
    for concept in concepts:
        t0 = time.perf_counter()
        pairs = concept.pairs(args.n_pairs, random_state=args.seed)
        pos = enc.encode(pairs.positive)
        neg = enc.encode(pairs.negative)
        t_enc = time.perf_counter() - t0
        out = args.out / concept.name if many else args.out
        for i, kind in enumerate(kinds):
            rank = args.rank if args.rank is not None else min(64, max(1, enc.dim // 6))
            params: dict[str, Any] = ({"rank": rank, "share": args.share, "method": args.method}
                                      if kind == "subspace" else {"l0_lambda": args.l0_lambda})
            t1 = time.perf_counter()
            fc = fit_concept(concept, enc, kind, n_pairs=len(pairs), random_state=args.seed,
                             embeddings=(pos, neg), **params)
            folder = fc.save(out if i == 0 else out / kind)
            report.append({"concept": concept.name, "estimator": kind, "pairs": len(pairs), "out": str(folder),
                           "encode_s": round(t_enc, 1), "fit_s": round(time.perf_counter() - t1, 1),
                           "sha256": fc.content_sha256()[:16]})
    print(json.dumps(report, indent=1))
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from ..encoders import DEFAULT_MODEL
    from .artefact import shipped_artefact
    from .spec import BUILTIN_CONCEPTS, BUILTIN_DESCRIPTIONS

    model = args.model or DEFAULT_MODEL
    rows = []
    for name in BUILTIN_CONCEPTS:
        shipped = {k: str(p) for k in ("subspace", "mask") if (p := shipped_artefact(name, model, k))}
        rows.append({"concept": name, "covers": BUILTIN_DESCRIPTIONS[name], f"shipped for {model}": shipped})
    print(json.dumps(rows, indent=1))
    return 0
