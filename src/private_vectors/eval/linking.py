"""Frequency / linking attacker: map stored, sanitized texts back to real identities.

The vector attackers (:mod:`private_vectors.eval.attacks`) read the stored *vectors*. A store that
keeps text next to them (``chroma_store`` keeps the sanitized text) offers a second route:
surrogate names are consistent (one real name → one fake name under a key), so the documents of
one person form a *pseudonym cluster* whose size follows that person's frequency, and the
attributes the text stage leaves (employer, occupation, a city it did not detect...) can be
matched against a public directory. This is the record-linkage attack on pseudonymised data
(Sweeney 2002, k-anonymity; Narayanan & Shmatikov 2008, de-anonymisation by sparse
attributes), specialised to keyed surrogates.

**Assumed knowledge** (the defender cannot rule it out):

* the stored texts of the whole collection (not the key);
* the library, hence the public surrogate pool (``data/text/surrogate_pool_v1.json``): a run of
  two or more consecutive capitalised pool names in a text is read as a (pseudonymised) full
  name, and texts sharing that run are one person's;
* a **directory** of the candidate identities with their public attributes (name, employer,
  occupation, street, city, state, ZIP, phone, e-mail, birthday) — e.g. a people-search
  site — and their **frequency distribution** (how often each appears in such records, e.g.
  from auxiliary data of the same source).

**Decision.** For a cluster c (size n_c) and candidate i: score = Σ_{texts of c} Σ_{directory
values of i found verbatim in the text} log(N / df(value)) (df = candidates sharing the value)
+ ``prior_weight`` · (n_c log λ_i − λ_i), the Poisson log-likelihood of the cluster size with
λ_i = n_texts · p_i (frequency-rank matching). Clusters are assigned to distinct candidates
(Hungarian assignment, ``scipy.optimize.linear_sum_assignment``). A text without a pseudonym
(redaction, or a name the pool does not hold) is linked on its own: attribute score +
``prior_weight`` · log p_i. With no stored text at all, every text gets the most frequent
candidate — the attacker's no-information baseline (:meth:`LinkingAttacker.prior_accuracy`).

Score: share of texts whose real identity (hence real name) is recovered.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["DIRECTORY_FIELDS", "LinkingAttacker", "directory_record", "pool_names", "zipf_frequencies"]

DIRECTORY_FIELDS = ("name", "company", "occupation", "street", "city", "state", "zipcode", "phone", "email",
                    "birthday")
"""Directory fields the attacker matches verbatim in stored text (age and country are left out:
short numbers and one country shared by most candidates match almost anything)."""

_WORD = re.compile(r"[^\W\d_][\w'’.-]*")


def pool_names() -> frozenset[str]:
    """First and last names of the library's public surrogate pool (what the attacker knows),
    through the library's own verified loader (:func:`private_vectors.text.surrogates.load_pool`)."""
    from ..text.surrogates import load_pool

    pool = load_pool()
    return frozenset(pool.first) | frozenset(pool.last)


class LinkingAttacker:
    """Link stored texts to directory identities by pseudonym clusters, frequency and attributes.

    Args:
        names: the capitalised tokens read as name parts (default: the surrogate pool's first
            and last names, :func:`pool_names`).
        min_run: consecutive name tokens that make a pseudonym (2: given name + surname).
        prior_weight: weight of the frequency terms against the attribute score.
        fields: directory fields matched (default :data:`DIRECTORY_FIELDS`).

    Learned state (after :meth:`fit`): ``values_`` (per candidate, its (value, weight) pairs),
    ``log_p_`` (log frequencies).
    """

    def __init__(self, *, names: frozenset[str] | None = None, min_run: int = 2, prior_weight: float = 1.0,
                 fields: Sequence[str] = DIRECTORY_FIELDS) -> None:
        if isinstance(min_run, bool) or not isinstance(min_run, int) or min_run < 1:
            raise InvalidParameterError("min_run", "an int >= 1", min_run)
        if not isinstance(prior_weight, (int, float)) or not math.isfinite(prior_weight) or prior_weight < 0:
            raise InvalidParameterError("prior_weight", "a finite number >= 0", prior_weight)
        unknown = sorted(set(fields) - set(DIRECTORY_FIELDS))
        if unknown:
            raise InvalidParameterError("fields", f"names among {list(DIRECTORY_FIELDS)}", unknown)
        self.names = names
        self.min_run = min_run
        self.prior_weight = float(prior_weight)
        self.fields = tuple(fields)

    # ------------------------------------------------------------------ fit
    def fit(self, directory: Sequence[Mapping[str, str]], frequencies: Sequence[float]) -> LinkingAttacker:
        """Learn the candidates: their directory records and frequency distribution.

        Args:
            directory: one record per candidate identity ({field: value}).
            frequencies: per candidate, its probability of being a text's subject (normalised here).
        """
        if len(directory) == 0 or len(directory) != len(frequencies):
            raise InvalidParameterError("frequencies", f"{len(directory)} values, one per directory record (>= 1)",
                                        len(frequencies))
        p = np.asarray(frequencies, dtype=np.float64)
        if not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise InvalidParameterError("frequencies", "finite non-negative numbers with a positive sum", frequencies)
        p = p / p.sum()
        self.log_p_ = np.log(np.maximum(p, 1e-300))
        df: Counter[tuple[str, str]] = Counter()
        recs = []
        for rec in directory:
            vals = {(f, str(rec.get(f) or "").strip()) for f in self.fields}
            vals = {(f, v) for f, v in vals if len(v) >= 2}
            recs.append(vals)
            df.update(vals)
        n = len(directory)
        self.values_ = [[(v, math.log(n / df[(f, v)])) for f, v in sorted(vals)] for vals in recs]
        self.names_ = self.names if self.names is not None else pool_names()
        return self

    # ------------------------------------------------------------------ predict
    def pseudonym(self, text: str) -> str | None:
        """The first run of ``min_run``+ consecutive capitalised name tokens (space-separated)."""
        run: list[str] = []
        end = -1
        for m in _WORD.finditer(text):
            tok = m.group(0).rstrip(".'’-")
            is_name = tok[:1].isupper() and tok in self.names_
            if is_name and run and text[end:m.start()] == " ":
                run.append(tok)
            else:
                if len(run) >= self.min_run:
                    return " ".join(run)
                run = [tok] if is_name else []
            end = m.start() + len(tok)
        return " ".join(run) if len(run) >= self.min_run else None

    def attribute_scores(self, texts: Sequence[str | None]) -> np.ndarray:
        """(texts, candidates): Σ weights of the candidate's directory values found verbatim."""
        self._check_fitted()
        S = np.zeros((len(texts), len(self.values_)), dtype=np.float64)
        # inverted index of word tokens → texts, then a verbatim whole-word check
        post: dict[str, set[int]] = defaultdict(set)
        for j, t in enumerate(texts):
            for w in _WORD.findall(t or ""):
                post[w.rstrip(".'’-")].add(j)
        for i, vals in enumerate(self.values_):
            for value, weight in vals:
                words = [w.rstrip(".'’-") for w in _WORD.findall(value)]
                if not words or weight <= 0:
                    continue
                cand = set.intersection(*(post.get(w, set()) for w in words))
                if not cand:
                    continue
                pat = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
                for j in cand:
                    if pat.search(texts[j] or ""):
                        S[j, i] += weight
        return S

    def predict(self, texts: Sequence[str | None]) -> list[int]:
        """The candidate index each text is linked to."""
        from scipy.optimize import linear_sum_assignment

        self._check_fitted()
        n = len(texts)
        if n == 0:
            return []
        S = self.attribute_scores(texts)
        out = [-1] * n
        clusters: dict[str, list[int]] = defaultdict(list)
        for j, t in enumerate(texts):
            ps = self.pseudonym(t) if t else None
            if ps is not None:
                clusters[ps].append(j)
        keys = list(clusters)
        if keys:
            lam = n * np.exp(self.log_p_)
            M = np.zeros((len(keys), len(self.values_)))
            for c, k in enumerate(keys):
                size = len(clusters[k])
                M[c] = S[clusters[k]].sum(0) + self.prior_weight * (size * np.log(lam) - lam)
            if len(keys) <= M.shape[1]:
                rows, cols = linear_sum_assignment(-M)
            else:  # more pseudonyms than candidates: each cluster its best candidate
                rows, cols = np.arange(len(keys)), M.argmax(1)
            for c, i in zip(rows, cols, strict=True):
                for j in clusters[keys[int(c)]]:
                    out[j] = int(i)
        single = S + self.prior_weight * self.log_p_[None, :]
        for j in range(n):
            if out[j] < 0:
                out[j] = int(single[j].argmax())
        return out

    def prior_accuracy(self, truth: Sequence[int]) -> float:
        """Share of ``truth`` equal to the most frequent candidate (the no-information guess)."""
        self._check_fitted()
        mode = int(self.log_p_.argmax())
        return float(np.mean([t == mode for t in truth])) if len(truth) else float("nan")

    def evaluate(self, texts: Sequence[str | None], truth: Sequence[int],
                 idx: Sequence[int] | None = None) -> dict[str, float]:
        """Share of texts (those of ``idx``, default all) linked to their true identity; the
        links are made with every text in view (the attacker sees the whole collection)."""
        if len(texts) != len(truth):
            raise InvalidParameterError("truth", f"{len(texts)} identity indices, one per text", len(truth))
        pred = self.predict(texts)
        sel = list(range(len(texts))) if idx is None else [int(i) for i in idx]
        hits = [pred[i] == int(truth[i]) for i in sel]
        return {"leakage": float(np.mean(hits)) if hits else float("nan"),
                "prior": self.prior_accuracy([int(truth[i]) for i in sel]),
                "pseudonym_share": float(np.mean([bool(texts[i] and self.pseudonym(texts[i] or "")) for i in sel]))
                if sel else float("nan")}

    def _check_fitted(self) -> None:
        if not hasattr(self, "values_"):
            raise InvalidParameterError("attacker", "a fitted LinkingAttacker (call fit first)", self)

    def __repr__(self) -> str:
        return f"LinkingAttacker(min_run={self.min_run}, prior_weight={self.prior_weight}, fields={list(self.fields)})"


def directory_record(identity: Any) -> dict[str, str]:
    """An :class:`~private_vectors.eval.entity.Identity` as the attacker's directory record."""
    return {"name": identity.name, "company": identity.company, "occupation": identity.occupation,
            "street": identity.street_address, "city": identity.city, "state": identity.state,
            "zipcode": identity.zipcode, "phone": identity.phone, "email": identity.email,
            "birthday": identity.birthday}


def zipf_frequencies(n: int, s: float) -> list[float]:
    """p(rank r) ∝ r^(−s), r = 1..n (the attacker's public frequency prior; Zipf 1949)."""
    w = [1.0 / (r ** s) for r in range(1, n + 1)]
    z = sum(w)
    return [x / z for x in w]

