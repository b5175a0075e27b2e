"""The audit's attacks on a store's vectors: the harness's attackers, with a name-recovery score.

The harness's attackers (:func:`private_vectors.eval.runner.build_attackers`) are trained on part
of the (raw text → stored vector) pairs and scored on the held-out documents by
:func:`private_vectors.eval.tasks.attack` (same split, same adaptive views, same seed as the
harness's ``"self"`` leakage sets): sensitive-token recovery (SPARSE paper eq. 13, top-k rule;
tokens from spaCy's NER on the raw text, :func:`private_vectors.eval.datasets.sensitive_tokens`)
against the prior attacker, and the **name recovery rate** — the share of first names, last
names and full names (both parts) of the people spaCy finds in the raw text that are among the
attacker's top-k guesses (the measure of Morris et al. 2023, "Text Embeddings Reveal (Almost) As
Much As Text", on clinical notes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["NAME_MARGIN", "name_parts", "name_scorer"]

NAME_MARGIN = 0.10
"""The headline calls names recoverable when the strongest attacker's name recovery exceeds the
prior attacker's by more than this (10 points)."""

TRAIN_SHARE = 0.7
"""Share of the audited documents the attacker trains on (the harness's leakage split)."""

# --------------------------------------------------------------------------- names and tokens
def _nlp() -> Any:
    from .datasets import spacy_model

    nlp = spacy_model()
    if nlp is None:
        raise InvalidParameterError("spacy", "an installed spaCy English model (pip install "
                                    "'private-vectors[spacy]')", None)
    return nlp


def tokens_and_names(texts: Sequence[str]) -> tuple[list[list[str]], list[list[tuple[str, str]]]]:
    """One spaCy pass: each text's sensitive tokens (exactly
    :func:`private_vectors.eval.datasets.sensitive_tokens` with ``method="spacy"``) and its people's
    (first, last) names (:func:`name_parts`)."""
    from .datasets import SPACY_LABELS, distinct_tokens, filter_sensitive_tokens, span_tokens

    tokens, names = [], []
    for doc in _nlp().pipe(list(texts), batch_size=64):
        raw = [w for ent in doc.ents if ent.label_ in SPACY_LABELS for w in span_tokens(ent.text)]
        tokens.append(distinct_tokens(filter_sensitive_tokens(raw)))
        names.append(name_parts([ent.text for ent in doc.ents if ent.label_ == "PERSON"]))
    return tokens, names


def name_parts(people: Sequence[str]) -> list[tuple[str, str]]:
    """(first, last) of each distinct person mention with at least two words, normalised like
    the attackers' tokens (single-word mentions give no first/last pair and are left out)."""
    from .attacks import normalize_token
    from .datasets import filter_sensitive_tokens, span_tokens

    out: list[tuple[str, str]] = []
    for person in people:
        words = [normalize_token(w) for w in filter_sensitive_tokens(span_tokens(person))]
        words = [w for w in words if w]
        if len(words) >= 2 and (words[0], words[-1]) not in out:
            out.append((words[0], words[-1]))
    return out


def _top_k(probs: Mapping[str, float], k: int) -> set[str]:
    """The attacker's k best guesses (the leakage metric's top-k rule, :mod:`private_vectors.eval.metrics`)."""
    ranked = sorted(probs.items(), key=lambda kv: (-float(kv[1]), kv[0]))
    return {t for t, p in ranked[:k] if float(p) > 0}


def name_scorer(tokens: Sequence[Sequence[str]], names: Sequence[Sequence[tuple[str, str]]]) -> Any:
    """A :func:`~private_vectors.eval.tasks.attack` scorer: first/last/full-name recovery.

    A name part counts as recovered when it is among the attacker's top-k guesses for the
    document (k = the document's distinct sensitive tokens, the leakage metric's rule); a full
    name when both parts are. Only name parts that are sensitive tokens of their document count.
    Returns ``names_first``, ``names_last``, ``names_full``, ``names_parts`` (share of first and
    last names together) and ``names_n`` (people scored); NaN rates when there are none.
    """
    from .attacks import check_token_lists

    truth = check_token_lists(list(tokens), len(tokens))

    def score(att: Any, vectors: np.ndarray, idx: np.ndarray) -> dict[str, float]:
        rows = [truth[i] for i in idx]
        probs = att._truth_probabilities(np.asarray(vectors, dtype=np.float32), rows)
        first = last = full = n = 0
        for i, row, p in zip(idx, rows, probs, strict=True):
            guesses = _top_k(p, len(set(row)))
            for f, lst in names[i]:
                if f not in row or lst not in row:
                    continue
                n += 1
                first += f in guesses
                last += lst in guesses
                full += f in guesses and lst in guesses
        rate = (lambda x: x / n) if n else (lambda x: float("nan"))
        return {"names_first": rate(first), "names_last": rate(last), "names_full": rate(full),
                "names_parts": (first + last) / (2 * n) if n else float("nan"), "names_n": float(n)}

    return score


# --------------------------------------------------------------------------- the attacks
def attack_block(V: np.ndarray, tokens: list[list[str]], names: list[list[tuple[str, str]]], texts: list[str],
                  attackers: dict[str, Any], seed: int, transforms: dict[str, Any]) -> dict[str, Any]:
    """The harness's :func:`~private_vectors.eval.tasks.attack` on one set of vectors, with the
    harness's leakage-set groups (identical texts on one side) and the name scorer."""
    from .datasets import SensitiveDataset
    from .tasks import LeakageSet, attack

    groups = LeakageSet("audit", SensitiveDataset("audit", texts, tokens, "spacy")).split_groups()
    factories = {n: f for n, (f, _) in attackers.items()}
    return attack(V, tokens, factories, seed=seed, train_share=TRAIN_SHARE, texts=texts, transforms=transforms,
                  groups=groups, scorer=name_scorer(tokens, names))


def audit_attackers(spec: Mapping[str, Any], encoder: Any) -> dict[str, Any]:
    from .runner import build_attackers

    return build_attackers({"attackers": {k: dict(v or {}) for k, v in spec.items()}}, encoder)


def _strongest(block: dict[str, Any], names: Sequence[str]) -> str | None:
    """The non-prior attacker with the highest name recovery (ties: token recovery)."""
    def key(a: str) -> tuple[float, float]:
        nv = block.get(f"names_parts_{a}", float("nan"))
        return (-1.0 if math.isnan(nv) else nv, block.get(f"leakage_{a}", 0.0))

    cands = [a for a in names if a != "prior"]
    return max(cands, key=key) if cands else None


def attack_summary(stored: dict[str, Any], clean: dict[str, Any] | None, names: Sequence[str]) -> dict[str, Any]:
    best = _strongest(stored, names)
    per = {}
    for a in names:
        row = {"token_recovery": stored.get(f"leakage_{a}"), "names_first": stored.get(f"names_first_{a}"),
               "names_last": stored.get(f"names_last_{a}"), "names_full": stored.get(f"names_full_{a}"),
               "name_recovery": stored.get(f"names_parts_{a}")}
        if clean is not None:
            row["clean"] = {"token_recovery": clean.get(f"leakage_{a}"),
                            "name_recovery": clean.get(f"names_parts_{a}"),
                            "names_full": clean.get(f"names_full_{a}")}
        if f"view_{a}" in stored:
            row["view"] = stored[f"view_{a}"]
        per[a] = row
    prior = per.get("prior", {})
    best_rate = per[best]["name_recovery"] if best else float("nan")
    prior_rate = prior.get("name_recovery", float("nan"))
    margin = best_rate - prior_rate if not (math.isnan(best_rate) or math.isnan(prior_rate)) else float("nan")
    return {"attackers": per, "strongest": best, "names_scored": stored.get(f"names_n_{best}") if best else 0,
            "name_recovery": best_rate, "name_recovery_prior": prior_rate, "name_margin": margin,
            "names_recoverable": bool(not math.isnan(margin) and margin > NAME_MARGIN),
            "token_recovery": per[best]["token_recovery"] if best else float("nan"),
            "token_recovery_prior": prior.get("token_recovery", float("nan"))}
