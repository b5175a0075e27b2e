"""The grid's data: a config's data sets loaded as :class:`~private_vectors.eval.tasks.Task` objects
(retrieval with PII sentences beside or inside its documents, STS, Pri-DDXPlus, entity retrieval)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from .cells import eps_value
from .datasets import (
    RetrievalDataset,
    SensitiveDataset,
    load_beir,
    load_ddxplus,
    load_presidio_pii,
    load_sts,
    sensitive_tokens,
)
from .tasks import LeakageSet, Task, pair_groups

__all__ = ["ENTITY_DEFAULTS", "LEAKAGE_MODES", "build_tasks", "insert_pii"]


def _leak_from_texts(name: str, texts: list[str], ids: list[str], method: str = "spacy"
                     ) -> tuple[LeakageSet, list[str]]:
    toks, used = sensitive_tokens(texts, method=method)
    return LeakageSet(name, SensitiveDataset(name, texts, toks, used)), ids


def insert_pii(ds: RetrievalDataset, pii: SensitiveDataset, *, n_leak: int | None = None, seed: int = 0
               ) -> tuple[RetrievalDataset, LeakageSet, list[str]]:
    """A topic task whose relevant documents themselves carry PII.

    Every document judged relevant (relevance > 0) to one of ``ds``'s queries, then random other
    documents up to ``n_leak`` in all (default: as many as there are PII sentences), gets one
    presidio PII sentence of ``pii`` *prepended* — all-MiniLM-L6-v2 reads only the first 256
    word pieces, and many SciFact abstracts are longer, so an appended sentence could never reach
    the encoder. Each carrier gets a different sentence (seeded order).

    Returns:
        The retrieval set with the carriers' texts replaced (queries and qrels unchanged), the
        leakage set (the carriers' full texts; tokens = their sentence's sensitive tokens) and
        the carriers' document ids, in the leakage set's order.
    """
    rng = random.Random(seed)
    relevant = sorted({d for rel in ds.qrels.values() for d, r in rel.items() if r > 0 and d in ds.corpus})
    n = len(pii) if n_leak is None else int(n_leak)
    if not len(relevant) <= n <= min(len(pii), len(ds.corpus)):
        raise ValueError(f"n_leak: expected between the {len(relevant)} relevant documents and "
                         f"min(PII sentences, documents) = {min(len(pii), len(ds.corpus))}, received {n}")
    others = sorted(set(ds.corpus) - set(relevant))
    carriers = relevant + sorted(rng.sample(others, n - len(relevant)))
    order = rng.sample(range(len(pii)), n)
    corpus = dict(ds.corpus)
    texts, tokens = [], []
    for doc, j in zip(carriers, order, strict=True):
        corpus[doc] = f"{pii.texts[j]} {ds.corpus[doc]}"
        texts.append(corpus[doc])
        tokens.append(list(pii.tokens[j]))
    leak = LeakageSet("presidio-pii-in-docs", SensitiveDataset("presidio-pii-in-docs", texts, tokens, pii.token_source))
    return RetrievalDataset(ds.name, corpus, ds.queries, ds.qrels), leak, carriers


LEAKAGE_MODES = ("pii", "pii-in-docs", "self")
"""A retrieval data set's ``"leakage"``: ``pii`` = the presidio sentences as extra documents of
the same store (distractors); ``pii-in-docs`` = the sentences inserted into the relevant
documents and others (:func:`insert_pii`); ``self`` = the documents' own NER entities."""


def build_tasks(cfg: dict[str, Any]) -> list[Task]:
    """Load and subsample the configured data sets (paths under ``cfg["data_root"]``).

    A data set entry may carry its own ``"epsilons"`` (e.g. a denser grid where the target
    utility sits at the edge); its cells are then that list only (ε = 10, the reference, should
    be in it). It may also carry ``"mechanisms"``, a subset of the config's rows it runs, and
    ``"row_epsilons"`` ({row: [ε, ...]}): those rows run exactly their own list there, the others
    the data set's (or the config's) list. Each task records its leakage set's name (``meta["leak_set"]``; ``leak_set`` in
    the results line, since ``leakage_<name>`` keys name attackers): data sets that share one
    (SciFact + PII and NFCorpus + PII) count as one data set.
    """
    root = Path(cfg["data_root"])
    seed = int(cfg.get("data_seed", 0))
    ner = cfg.get("token_method", "spacy")  # real NER; "fallback" only when a config says so
    pii_cfg = cfg.get("pii", {})
    pii = load_presidio_pii(root / pii_cfg.get("path", "pii/synth_dataset_v2.json")).subset(pii_cfg.get("n"), seed)
    tasks = []
    for d in cfg["datasets"]:
        kind, name = d["kind"], d["name"]
        concept = d.get("concept", "PII")
        if kind == "retrieval":
            ds = load_beir(root / d["path"], name=name).subset(n_queries=d.get("n_queries"),
                                                                n_docs=d.get("n_docs"), seed=seed)
            mode = d.get("leakage", "pii")
            if mode not in LEAKAGE_MODES:
                raise ValueError(f"datasets[{name}].leakage: expected one of {list(LEAKAGE_MODES)}, received {mode!r}")
            if mode == "pii":
                t = Task(name, kind, "ndcg@10", retrieval=ds, leakage=LeakageSet("presidio-pii", pii))
            elif mode == "pii-in-docs":
                ds, leak, lids = insert_pii(ds, pii, n_leak=d.get("n_leak"), seed=seed)
                t = Task(name, kind, "ndcg@10", retrieval=ds, leakage=leak, leakage_in_store=False,
                         meta={"leak_ids": lids})
            else:  # the documents themselves, tokens from spaCy or the fallback
                ids = list(ds.corpus)[: d.get("n_leak", 1000)]
                leak, lids = _leak_from_texts(name, [ds.corpus[i] for i in ids], ids, ner)
                t = Task(name, kind, "ndcg@10", retrieval=ds, leakage=leak, leakage_in_store=False,
                         meta={"leak_ids": lids})
        elif kind == "sts":
            ds_sts = load_sts(name, root / "sts").subset(d.get("n_pairs"), seed)
            uniq = list(dict.fromkeys(ds_sts.sentences1 + ds_sts.sentences2))
            leak, _ = _leak_from_texts(name, uniq, [], ner)
            # paraphrase partners stay on one side of the attacker/victim split
            leak.groups = pair_groups(ds_sts.sentences1, ds_sts.sentences2, uniq)
            t = Task(name, kind, "pearson", sts=ds_sts, leakage=leak, leakage_in_store=False)
        elif kind == "ddxplus":
            # texts deduplicated before subsetting: no vignette on both sides of the split
            data = load_ddxplus(root / d.get("path", "medical/pri-ddxplus/test.json")).deduplicate() \
                .subset(d.get("n"), seed)
            t = Task(name, kind, "ndcg@10 (masked→full)", leakage=LeakageSet(name, data), leakage_in_store=False)
            concept = d.get("concept", "medical")
        elif kind == "entity":
            t = _entity_task(root, d, seed)
        else:
            raise ValueError(f"dataset kind {kind!r}: expected retrieval, sts, ddxplus or entity")
        t.meta["concept"] = concept
        t.meta["token_source"] = t.leakage.data.token_source if t.leakage else None
        # presidio sentences (as distractors or inside documents) are one leakage set whatever the task
        t.meta["leak_set"] = "presidio-pii" if t.leakage and t.leakage.name.startswith("presidio-pii") \
            else (t.leakage.name if t.leakage else None)
        if "epsilons" in d:
            if not isinstance(d["epsilons"], list) or not d["epsilons"]:
                raise ValueError(f"datasets[{name}].epsilons: expected a non-empty list, received {d['epsilons']!r}")
            t.meta["epsilons"] = {eps_value(e) for e in d["epsilons"]}
        if "mechanisms" in d:  # rows this data set runs (a costly row can be left to a separate command)
            rows = d["mechanisms"]
            if not isinstance(rows, list) or not rows or not set(rows) <= set(cfg["mechanisms"]):
                raise ValueError(f"datasets[{name}].mechanisms: expected a non-empty list of the config's "
                                 f"mechanisms {cfg['mechanisms']}, received {rows!r}")
            t.meta["mechanisms"] = set(rows)
        if "row_epsilons" in d:  # a row's own ε list on this data set (e.g. a learned row's wide grid)
            per_row = d["row_epsilons"]
            if not isinstance(per_row, dict) or not set(per_row) <= set(cfg["mechanisms"]) or \
                    not all(isinstance(v, list) and v for v in per_row.values()):
                raise ValueError(f"datasets[{name}].row_epsilons: expected a mapping from the config's "
                                 f"mechanisms {cfg['mechanisms']} to non-empty ε lists, received {per_row!r}")
            t.meta["row_epsilons"] = {row: {eps_value(e) for e in v} for row, v in per_row.items()}
        tasks.append(t)
    return tasks


ENTITY_DEFAULTS: dict[str, Any] = {"path": "pii", "n_identities": 150, "n_docs": 500, "zipf_s": 1.0,
                                   "attribute_share": 0.7, "n_person_queries": 120, "n_city_queries": 20,
                                   "attacker_share": 0.5, "keyless": True, "document_split": True,
                                   "linking": {}, "linking_variants": {}}
"""An ``"entity"`` data set's parameters (any may be set in its config entry): the corpus
(:func:`private_vectors.eval.entity.make_entity_corpus`, seeded with ``data_seed``), the share
of documents on the attacker's side of the identity split, whether the key-less attacker and the
known-plaintext attacker on a document split (``document_split``) run,
and the :class:`~private_vectors.eval.linking.LinkingAttacker`'s parameters (None: no linking)."""


def _entity_task(root: Path, d: dict[str, Any], seed: int) -> Task:
    """The entity-retrieval task: documents about Zipf-frequent people, person and city queries;
    leakage set = the documents with their own sensitive values, split by identity."""
    from .entity import make_entity_corpus

    p = {**ENTITY_DEFAULTS, **d}
    corpus = make_entity_corpus(root / p["path"], n_identities=p["n_identities"], n_docs=p["n_docs"],
                                zipf_s=p["zipf_s"], attribute_share=p["attribute_share"],
                                n_person_queries=p["n_person_queries"], n_city_queries=p["n_city_queries"],
                                seed=seed)
    leak = LeakageSet(d["name"], corpus.sensitive(), train_share=float(p["attacker_share"]),
                      groups=[doc.identity for doc in corpus.documents])
    return Task(d["name"], "entity", "person-query ndcg@10", retrieval=corpus.retrieval(d["name"]), leakage=leak,
                leakage_in_store=False,
                meta={"leak_ids": [doc.id for doc in corpus.documents], "entity": corpus,
                      "keyless": bool(p["keyless"]), "document_split": bool(p["document_split"]),
                      "linking": p["linking"], "linking_variants": p["linking_variants"]})
