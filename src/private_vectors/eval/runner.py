"""The grid runner: mechanisms × ε × seeds × data sets → JSON lines.

Each line holds the configuration of one cell (data set, mechanism, ε, seed, backend), its
metrics (utility, leakage and confidence per attacker), the git commit, package versions
and timings. :mod:`private_vectors.eval.report` turns the lines into tables and plots.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import random
import subprocess
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..encoders import load_encoder
from .attacks import MLCAttacker, NearestNeighbourAttacker, PriorAttacker
from .cache import CachingEncoder
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
from .tasks import DEFAULT_EF_SEARCH, LeakageSet, Task, pair_groups

__all__ = ["ENTITY_DEFAULTS", "MECHANISM_SPECS", "bench_key", "bench_salt", "build_attackers", "build_tasks", "cell_record", "doc_transform",
           "insert_pii", "make_embedding", "noise_norm", "row_stages", "run_benchmark", "sts_transform"]


MECHANISM_SPECS: dict[str, dict[str, Any]] = {
    "none": {"mechanism": "none"},
    "laplace": {"mechanism": "laplace"},
    "purkayastha": {"mechanism": "purkayastha"},
    "gaussian": {"mechanism": "gaussian"},
    "sparse-diagonal": {"estimator": "mask", "mechanism": "mahalanobis"},
    "concept-subspace": {"estimator": "subspace", "mechanism": "mahalanobis"},
    "concept-subspace+qt": {"estimator": "subspace", "mechanism": "mahalanobis", "query_transform": "auto"},
    "cape": {"learned": "cape"},
    "textcrafter": {"learned": "textcrafter"},
    "presidio": {"mechanism": "none", "text": "presidio"},
    "presidio+laplace": {"mechanism": "laplace", "text": "presidio"},
    # the project's own text stage, inside PrivateEmbedding (keyed with a per-seed bench key)
    "redact": {"mechanism": "none", "sanitize": "redact"},
    "redact+laplace": {"mechanism": "laplace", "sanitize": "redact"},
    "redact+concept": {"estimator": "subspace", "mechanism": "mahalanobis", "sanitize": "redact"},
    "surrogate": {"mechanism": "none", "sanitize": "surrogate"},
    "surrogate+laplace": {"mechanism": "laplace", "sanitize": "surrogate"},
    "surrogate+concept": {"estimator": "subspace", "mechanism": "mahalanobis", "sanitize": "surrogate"},
    # the same text stage with the learned tagger beside the recognizers (detector="model")
    "redact-model": {"mechanism": "none", "sanitize": "redact", "detector": "model"},
    "redact-model+laplace": {"mechanism": "laplace", "sanitize": "redact", "detector": "model"},
}
"""Grid rows. Concept rows fit the data set's concept with the given estimator
(``private_vectors.fitted.fit_concept``); only ``+qt`` uses the noise-aware query transform.
``cape``/``textcrafter`` load the packaged learned artefacts (``mechanisms.load_learned``) with
ε overridden (CAPE: its Laplace budget ε; TextCrafter: radius = ε/√n, the project's unit).
A ``"text"`` entry names a text stage (:data:`private_vectors.eval.text_rows.TEXT_STAGES`) that
rewrites every stored text before it is encoded: ``presidio`` is the practitioner's anchor
(presidio's default recognizers, typed placeholders). A row whose ``mechanism`` is ``"none"``
runs only at ε = ∞ (no noise).

A ``"sanitize"`` entry is the **project's** text stage: the row's PrivateEmbedding is built with
``sanitize=<policy>`` and an explicit per-seed benchmark key (:func:`bench_key`), so documents
are sanitized once on their way into the store (``prepare_documents``: the sanitized text is
embedded and stored) and queries go through the same Sanitizer (``apply_queries``, same key) as
in real use. ``redact+concept`` / ``surrogate+concept`` add the concept-subspace Mahalanobis
noise (no query transform, like ``concept-subspace``). A ``"detector"`` entry (``redact-model``
rows) builds that Sanitizer with ``detector=...`` and no time limit (the rows measure what is
found, not how fast)."""


def _check_role(role: str) -> None:
    if role not in ("victim", "aux"):
        raise ValueError(f"role: expected 'victim' or 'aux', received {role!r}")


def bench_key(seed: int, role: str = "victim") -> str:
    """The explicit key of a keyed grid row: fixed per seed and role (``"victim"``: the store's
    owner; ``"aux"``: the key-less attacker's own key, a different one). Benchmark keys only —
    public strings, never written to results (the PrivateEmbedding redacts them anyway)."""
    _check_role(role)
    return f"private-vectors bench key, {role}, seed {int(seed)} (benchmark only, not a secret)"


def bench_salt(seed: int, role: str = "victim") -> bytes:
    """The scrypt salt of a keyed grid row: public, derived from the seed and role like
    :func:`bench_key`, so a keyed row's noise is the same in every process for the same seed
    (a library user's salt stays random per collection: ``PrivateEmbedding(key_salt=None)``)."""
    _check_role(role)
    return hashlib.sha256(f"private-vectors bench salt, {role}, seed {int(seed)}".encode()).digest()[:16]


def row_stages(mechanism: str) -> dict[str, Any]:
    """The stages a grid row switches on, for the ablation table: text stage, concept
    (erasure) stage, noise mechanism, query transform. Unknown rows: noise = their name."""
    spec = MECHANISM_SPECS.get(mechanism, {"mechanism": mechanism})
    noise = spec.get("learned") or spec.get("mechanism", mechanism)
    if spec.get("estimator"):
        noise = f"{noise} ({spec['estimator']})"
    detector = f", detector={spec['detector']}" if spec.get("detector") else ""
    text = spec.get("text") or (f"{spec['sanitize']} (project, keyed{detector})" if spec.get("sanitize") else None)
    return {"text": text, "erasure": spec.get("erasure"), "noise": None if noise == "none" else noise,
            "query_transform": spec.get("query_transform")}


# --------------------------------------------------------------------------- environment
def git_sha(root: Path | None = None) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=root or Path(__file__).parent).stdout.strip()
    except Exception:
        return "unknown"


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("private-vectors", "torch", "numpy", "chromadb", "faiss-cpu", "sentence-transformers"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out


# --------------------------------------------------------------------------- data
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


# --------------------------------------------------------------------------- embeddings
_CONCEPTS: dict[tuple[str, str, str], Any] = {}


def fitted_concept(concept: str, estimator: str, encoder: Any, cfg: dict[str, Any]) -> Any:
    """Fit (once per process) ``concept`` with ``estimator`` for ``encoder``."""
    key = (concept, estimator, encoder.model_id)
    if key not in _CONCEPTS:
        from ..fitted import fit_concept

        kwargs = dict(cfg.get("concept_fit", {}).get(estimator, {}))
        kwargs.setdefault("show_progress", False)
        _CONCEPTS[key] = fit_concept(concept, encoder, estimator=estimator, **kwargs)
    return _CONCEPTS[key]


def make_embedding(mechanism: str, eps: float, seed: int, encoder: Any, concept: str,
                   cfg: dict[str, Any], *, key_role: str = "victim") -> Any:
    """The PrivateEmbedding of one grid cell (seeded: benchmark only).

    Rows with a ``"sanitize"`` entry are keyed with :func:`bench_key` under the public salt
    :func:`bench_salt` (so their keyed noise reproduces across processes; ``key_role`` "aux" builds
    the same configuration under another key, for the key-less attacker); their noise is then
    keyed per text, as in real use with a key. Other rows ignore ``key_role`` except through
    the seed: ``"aux"`` draws their noise from another seed.

    ``store_geometry="none"``: the harness stores the mechanism's own output (its store uses the
    embedding's space), so a ``+qt`` row stores exactly its base row's vectors and the committed
    results stay comparable; benchmarks/space_invariance.py measures the geometries."""
    from ..embedding import PrivateEmbedding

    spec = dict(MECHANISM_SPECS[mechanism])
    state = seed if key_role == "victim" else seed + 7919  # "aux": an independent noise stream
    if "learned" in spec:
        from ..mechanisms import load_learned

        kind = spec["learned"]
        over = {"epsilon": eps} if kind == "cape" else {"radius": eps / math.sqrt(encoder.dim)}
        # a config may point a row at other artefacts (e.g. trained on disjoint data)
        folder = cfg.get("learned_artefacts", {}).get(kind)
        mech = load_learned(Path(folder).expanduser() if folder else kind, random_state=state, **over)
        return PrivateEmbedding(eps=eps, model=encoder, mechanism=mech, query_transform="none", random_state=state,
                                store_geometry="none")
    spec.pop("text", None)  # the text stage is applied by the task (doc_transform), not here
    detector = spec.pop("detector", None)
    est = spec.pop("estimator", None)
    fitted = fitted_concept(concept, est, encoder, cfg) if est else None
    kw: dict[str, Any] = {"sanitize": None}
    if spec.get("sanitize"):
        key = bench_key(seed, key_role)
        kw = {"sanitize": spec["sanitize"], "key": key, "key_salt": bench_salt(seed, key_role)}
        if concept != "PII" or detector:  # the task's own span concept (the string path sanitizes "PII")
            from ..text import Sanitizer

            extra: dict[str, Any] = {"detector": detector, "timeout": None} if detector else {}
            kw["sanitize"] = Sanitizer(concept, policy=spec["sanitize"], key=key, **extra)
    return PrivateEmbedding(noise_concept=fitted, eps=eps if math.isfinite(eps) else 1.0, model=encoder,
                            mechanism=spec["mechanism"], query_transform=spec.get("query_transform", "none"),
                            random_state=state, store_geometry="none", **kw)


ATTACKERS = ("mlc", "mlc-enc", "nn", "prior", "generative")
"""Attacker names a config may list. ``mlc-enc`` is the MLC with label embeddings from the
public encoder (:class:`~private_vectors.eval.attacks.MLCAttacker` with ``token_encoder``);
``generative`` the GEIA-style decoder (costly: give it a reduced grid)."""


def build_attackers(cfg: dict[str, Any], encoder: Any = None) -> dict[str, tuple[Callable[[int], Any], dict[str, Any]]]:
    """Attacker factories (seed → fresh attacker) and where each runs.

    Each entry of ``cfg["attackers"]`` holds the attacker's parameters plus two optional
    restrictions, ``"mechanisms"`` and ``"epsilons"`` (lists): the attacker runs only on those
    grid cells (how the costly generative attacker gets its reduced grid).
    """
    from .attacks import GenerativeInversion

    acfg = cfg.get("attackers", {"mlc": {}, "nn": {}})
    unknown = sorted(set(acfg) - set(ATTACKERS))
    if unknown:
        raise ValueError(f"attackers: expected names among {list(ATTACKERS)}, received {unknown}")
    out: dict[str, tuple[Callable[[int], Any], dict[str, Any]]] = {}
    for name in ATTACKERS:
        if name not in acfg:
            continue
        kwargs = dict(acfg[name] or {})
        where = {k: kwargs.pop(k) for k in ("mechanisms", "epsilons") if k in kwargs}
        if "epsilons" in where:
            where["epsilons"] = [eps_value(e) for e in where["epsilons"]]
        if name in ("mlc", "mlc-enc"):
            if name == "mlc-enc":
                # its label embeddings exist to rank rare tokens: keep once-seen tokens
                kwargs.setdefault("min_count", 1)
                if encoder is None:
                    raise ValueError("attackers: 'mlc-enc' needs the encoder (its label embeddings)")
                kwargs["token_encoder"] = encoder.encode
            out[name] = (_factory(MLCAttacker, kwargs, seeded=True), where)
        elif name == "generative":
            kwargs.setdefault("show_progress", False)
            out[name] = (_factory(GenerativeInversion, kwargs, seeded=True), where)
        else:
            cls = NearestNeighbourAttacker if name == "nn" else PriorAttacker
            out[name] = (_factory(cls, kwargs, seeded=False), where)
    return out


def prior_based(cfg: dict[str, Any]) -> list[str]:
    """The configured attackers that start from the token prior (so the report can count their
    leakage above it): the MLCs (output biases at the prior) and a generative attacker with
    ``prior_weight`` > 0."""
    acfg = cfg.get("attackers", {"mlc": {}, "nn": {}})
    out = [a for a in ("mlc", "mlc-enc") if a in acfg]
    if "generative" in acfg and float((acfg["generative"] or {}).get("prior_weight", 0.0)) > 0:
        out.append("generative")
    return out


def adaptive_transforms(embedding: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    """The public post-processings an attacker who knows the mechanism can apply (issue 7's
    projection and Wiener transforms, from the mechanism's Σ); empty for spherical or learned
    mechanisms, or when ``cfg["adaptive_attackers"]`` is false (default true)."""
    from ..retrieval import IdentityTransform, build_query_transform

    mech = getattr(embedding, "mechanism", None)
    # "auto" is the identity exactly when Σ offers no direction to avoid (spherical, learned)
    if not cfg.get("adaptive_attackers", True) or mech is None \
            or isinstance(build_query_transform("auto", mech), IdentityTransform):
        return {}
    return {kind: build_query_transform(kind, mech) for kind in ("project", "wiener")}


def doc_transform(mechanism: str, cfg: dict[str, Any]) -> Callable[[list[str]], list[str]] | None:
    """The text stage of a row (``MECHANISM_SPECS[...]["text"]``), built once per process."""
    name = MECHANISM_SPECS[mechanism].get("text")
    if name is None:
        return None
    from .text_rows import text_stage

    return text_stage(name, cfg.get("text_stages", {}).get(name, {}))


def _runs_on(where: dict[str, Any], mechanism: str, eps: float) -> bool:
    """Whether an attacker with restrictions ``where`` attacks the cell (mechanism, ε)."""
    if "mechanisms" in where and mechanism not in where["mechanisms"] and \
            not (mechanism.endswith("+qt") and mechanism[:-3] in where["mechanisms"]):
        return False
    return "epsilons" not in where or eps in where["epsilons"]


def _factory(cls: Any, kwargs: dict[str, Any], *, seeded: bool) -> Callable[[int], Any]:
    def make(seed: int) -> Any:
        return cls(random_state=seed, **kwargs) if seeded else cls(**kwargs)

    return make


def grid(cfg: dict[str, Any]) -> list[tuple[str, float]]:
    """(mechanism, ε) cells: ε = ∞ is the noiseless column; rows without noise ("none",
    "presidio") run only there, the others only at finite ε. ε = the config's list ∪ every data
    set's own ``"epsilons"`` (a task runs only its own list's cells: :func:`_task_runs`)."""
    eps_list = [eps_value(e) for e in cfg["epsilons"]]
    for d in cfg.get("datasets", []):  # a data set's own ε list (a denser grid) joins the union
        own = list(d.get("epsilons", [])) + [e for v in d.get("row_epsilons", {}).values() for e in v]
        eps_list += [e for e in dict.fromkeys(map(eps_value, own)) if e not in eps_list]
    cells = []
    for m in cfg["mechanisms"]:
        if m not in MECHANISM_SPECS:
            raise ValueError(f"mechanism {m!r}: expected one of {sorted(MECHANISM_SPECS)}")
        noiseless = MECHANISM_SPECS[m].get("mechanism") == "none"
        for e in eps_list:
            if noiseless == math.isinf(e):
                cells.append((m, e))
    return cells


def _task_runs(task: Task, eps: float, cfg_eps: set[float], mechanism: str | None = None) -> bool:
    """Whether ``task`` has the cell (``mechanism``, ``eps``): the row's own ε list on this task
    (``row_epsilons``), else the task's (else the config's), and its own rows (else all)."""
    rows = task.meta.get("mechanisms")
    if mechanism is not None and rows is not None and mechanism not in rows:
        return False
    per_row = task.meta.get("row_epsilons", {})
    if mechanism is not None and mechanism in per_row:
        return eps in per_row[mechanism]
    return eps in task.meta.get("epsilons", cfg_eps)


def sts_transform(mechanism: str, task: Task, embedding: Any) -> Callable[[Any], Any] | None:
    """The transform for an STS task's read-back vectors: a ``+qt`` row's query transform
    (both sides are stored, so both are transformed), else None."""
    if mechanism.endswith("+qt") and task.kind == "sts":
        return embedding.query_transform.apply
    return None


def noise_norm(embedding: Any) -> float | None:
    """Expected L2 norm of the noise one stored vector receives (the mechanism's ``describe``),
    shown beside ε since ε here is per unit of 1/√n; 0 without noise, None when unknown."""
    mech = getattr(embedding, "mechanism", None)
    if mech is None:
        return None
    try:
        value = mech.describe(getattr(embedding, "dim", None)).get("expected_noise_norm")
    except Exception:
        return None
    return None if value is None else float(value)


def cell_record(meta: dict[str, Any], task: Task, mechanism: str, eps: float, seed: int, backend: str,
                metrics: dict[str, Any], seconds: float, embedding: Any = None) -> dict[str, Any]:
    """One results line: the run's ``meta``, the cell's coordinates, its stages, the expected
    noise norm (when ``embedding`` is given), its metrics and time."""
    rec = {**meta, "dataset": task.name, "kind": task.kind, "utility_metric": task.utility_metric,
           "token_source": task.meta["token_source"], "leak_set": task.meta.get("leak_set"),
           "concept": task.meta["concept"],
           "mechanism": mechanism, "eps": "inf" if math.isinf(eps) else eps, "seed": seed,
           "backend": backend, "stages": row_stages(mechanism)}
    if embedding is not None:
        rec["noise_norm"] = noise_norm(embedding)
    return {**rec, **metrics, "seconds": round(seconds, 2)}


# --------------------------------------------------------------------------- the run
def run_benchmark(cfg: dict[str, Any], out_dir: str | Path, *, progress: bool = True,
                  encoder: Any = None) -> Path:
    """Run the grid of ``cfg`` and write ``results.jsonl`` (+ the report) under ``out_dir``.

    Args:
        cfg: the configuration (see ``benchmarks/configs/*.json``).
        out_dir: output folder (created).
        progress: tqdm bars.
        encoder: an encoder object overriding ``cfg["model"]`` (tests).

    Returns:
        The path of the JSON-lines file.
    """
    import torch

    t_start = time.time()
    ef_search = cfg.get("ef_search", DEFAULT_EF_SEARCH)
    if isinstance(ef_search, bool) or not isinstance(ef_search, int) or ef_search < 10:
        raise ValueError(f"ef_search: expected an int >= 10 (Chroma's HNSW search breadth), received {ef_search!r}")
    if cfg.get("torch_threads"):
        torch.set_num_threads(int(cfg["torch_threads"]))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines_path = out / "results.jsonl"
    base = encoder if encoder is not None else load_encoder(cfg.get("model"))
    enc = CachingEncoder(base, cache_dir=cfg.get("cache_dir"))
    tasks = build_tasks(cfg)
    t0 = time.time()
    for t in tqdm(tasks, desc="encode corpora", disable=not progress):
        enc.warm(t.texts())
    encode_s = time.time() - t0
    attackers = build_attackers(cfg, enc)
    # a "+qt" row stores exactly what its base row stores (same noise: only queries differ), so
    # its attack metrics are the base row's: computed once, reused (`attacks_from` in the line)
    attack_memo: dict[tuple[str, str, str, float, int], dict[str, float]] = {}
    cells = grid(cfg)
    cfg_eps = {eps_value(e) for e in cfg["epsilons"]}
    seeds = [int(s) for s in cfg.get("seeds", [0])]
    backends = cfg.get("backends", ["chroma"])
    based = prior_based(cfg)
    if any(t.kind == "entity" and t.meta.get("keyless") for t in tasks):
        based += [f"{a}{suffix}" for suffix in ("-keyless", "-docsplit") for a in based]
    meta = {"config": cfg.get("name", "custom"), "git_sha": git_sha(), "versions": package_versions(),
            "model": enc.model_id, "dim": enc.dim, "prior_based": based, "ef_search": ef_search}
    skipped: dict[str, str] = {}
    n_done = 0
    with lines_path.open("w", encoding="utf-8") as fh:
        n_cells = sum(_task_runs(t, e, cfg_eps, m) for m, e in cells for t in tasks)
        bar = tqdm(total=n_cells * len(seeds) * len(backends), desc="grid", disable=not progress)
        # seeds outermost and ε = 10 first: a run cut short still has every mechanism at the
        # reference ε, then the other ε values, for complete seeds
        order = sorted(cells, key=lambda c: (c[1] != 10.0, math.isinf(c[1]), c[1]))
        for seed in seeds:
            for mech, eps in order:
                for task in tasks:
                    if not _task_runs(task, eps, cfg_eps, mech):
                        continue
                    for backend in backends:
                        bar.update(1)
                        key = f"{mech}/{task.meta['concept']}"
                        if key in skipped:
                            continue
                        t1 = time.time()
                        try:
                            ef = make_embedding(mech, eps, seed, enc, task.meta["concept"], cfg)
                        except Exception as exc:  # concept package or artefact missing: say so
                            skipped[key] = f"{type(exc).__name__}: {exc}"
                            continue
                        sts_tf = sts_transform(mech, task, ef)
                        cell_att = {n: f for n, (f, w) in attackers.items() if _runs_on(w, mech, eps)}
                        memo_key = (task.name, backend, mech.removesuffix("+qt"), eps, seed)
                        reused = mech.endswith("+qt") and memo_key in attack_memo
                        aux = None
                        if task.kind == "entity" and task.meta.get("keyless") and cell_att:
                            aux = make_embedding(mech, eps, seed, enc, task.meta["concept"], cfg, key_role="aux")
                        metrics = task.run(ef, {} if reused else cell_att, seed=seed, backend=backend,
                                           sts_transform=sts_tf,
                                           attack_transforms=None if reused else adaptive_transforms(ef, cfg),
                                           doc_transform=doc_transform(mech, cfg), aux_embedding=aux,
                                           ef_search=ef_search)
                        attack_part = {k: v for k, v in metrics.items()
                                       if k.startswith(("leakage_", "confidence_", "epochs_", "view_"))
                                       or k == "attack_variants"}
                        if reused:
                            metrics.update({k: v for k, v in attack_memo[memo_key].items()
                                            if k == "attack_variants" or k.split("_", 1)[1] in cell_att})
                        elif not mech.endswith("+qt"):
                            attack_memo[memo_key] = attack_part
                        rec = cell_record(meta, task, mech, eps, seed, backend, metrics, time.time() - t1, ef)
                        if reused:
                            rec["attacks_from"] = mech.removesuffix("+qt")
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        n_done += 1
        bar.close()
    summary = {**meta, "cells_run": n_done, "skipped": skipped, "encode_seconds": round(encode_s, 1),
               "texts_encoded": enc.encoded, "total_seconds": round(time.time() - t_start, 1),
               "config_full": cfg}
    (out / "run.json").write_text(json.dumps(summary, indent=2, default=str))
    from .entity_report import write_entity_report
    from .report import write_report

    write_report(lines_path, out)
    write_entity_report(lines_path, out)
    return lines_path
