"""The grid runner: mechanisms × ε × seeds × data sets → JSON lines.

Each line holds the configuration of one cell (data set, mechanism, ε, seed, backend), its
metrics (utility, leakage and confidence per attacker), the git commit, package versions
and timings. :mod:`private_vectors.eval.report` turns the lines into tables and plots.
"""

from __future__ import annotations

import json
import math
import platform
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
from .grid_data import ENTITY_DEFAULTS, _entity_task, _leak_from_texts, build_tasks, insert_pii  # noqa: F401 (names of the runner)
from .rows import MECHANISM_SPECS, bench_key, bench_salt, make_embedding, row_stages, sealable
from .tasks import DEFAULT_EF_SEARCH, STORE_KINDS, Task

__all__ = ["ENTITY_DEFAULTS", "MECHANISM_SPECS", "bench_key", "bench_salt", "build_attackers", "build_tasks", "cell_record",
           "doc_transform", "insert_pii", "make_embedding", "noise_norm", "row_stages", "run_benchmark", "sts_transform"]


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
    noise norm and the text stage's detector (when ``embedding`` is given), its metrics and time."""
    rec = {**meta, "dataset": task.name, "kind": task.kind, "utility_metric": task.utility_metric,
           "token_source": task.meta["token_source"], "leak_set": task.meta.get("leak_set"),
           "concept": task.meta["concept"],
           "mechanism": mechanism, "eps": "inf" if math.isinf(eps) else eps, "seed": seed,
           "backend": backend, "stages": row_stages(mechanism)}
    if embedding is not None:
        rec["noise_norm"] = noise_norm(embedding)
        options = getattr(getattr(embedding, "sanitizer", None), "options", None)
        if options is not None:
            rec["text_detector"] = getattr(options, "detector", None)
    return {**rec, **metrics, "seconds": round(seconds, 2)}


# --------------------------------------------------------------------------- the run
def run_benchmark(cfg: dict[str, Any], out_dir: str | Path, *, progress: bool = True,
                  encoder: Any = None) -> Path:
    """Run the grid of ``cfg`` and write ``results.jsonl`` (+ the report) under ``out_dir``.

    A config's ``"stores"`` (default ``["clear"]``) lists the store kinds each cell writes
    (:data:`~private_vectors.eval.tasks.STORE_KINDS`); a ``"sealed"`` cell runs for rows with the
    project's text stage on retrieval and Pri-DDXPlus tasks (Chroma), and reuses the clear cell's
    attacks when its stored vectors are the same (``attacks_from`` in its line).

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
    stores = list(cfg.get("stores", ["clear"]))
    if not stores or not set(stores) <= set(STORE_KINDS) or len(set(stores)) != len(stores):
        raise ValueError(f"stores: expected a list of distinct store kinds among {list(STORE_KINDS)}, received {stores!r}")
    stores.sort(key=STORE_KINDS.index)  # clear first: a sealed cell reuses its attacks
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
    based = prior_based(cfg)
    if any(t.kind == "entity" and t.meta.get("keyless") for t in tasks):
        based += [f"{a}{suffix}" for suffix in ("-keyless", "-docsplit") for a in based]
    meta = {"config": cfg.get("name", "custom"), "git_sha": git_sha(), "versions": package_versions(),
            "model": enc.model_id, "dim": enc.dim, "prior_based": based, "ef_search": ef_search}
    run = _GridRun(cfg, enc, build_attackers(cfg, enc), meta, ef_search)
    cells = grid(cfg)
    cfg_eps = {eps_value(e) for e in cfg["epsilons"]}
    seeds = [int(s) for s in cfg.get("seeds", [0])]
    backends = cfg.get("backends", ["chroma"])
    with lines_path.open("w", encoding="utf-8") as fh:
        n_cells = sum(_task_runs(t, e, cfg_eps, m) for m, e in cells for t in tasks)
        bar = tqdm(total=n_cells * len(seeds) * len(backends) * len(stores), desc="grid", disable=not progress)
        # seeds outermost and ε = 10 first: a run cut short still has every mechanism at the
        # reference ε, then the other ε values, for complete seeds
        order = sorted(cells, key=lambda c: (c[1] != 10.0, math.isinf(c[1]), c[1]))
        for seed in seeds:
            for mech, eps in order:
                for task in (t for t in tasks if _task_runs(t, eps, cfg_eps, mech)):
                    for backend in backends:
                        for store_kind in stores:
                            bar.update(1)
                            rec = run.cell(task, mech, eps, seed, backend, store_kind)
                            if rec is not None:
                                fh.write(json.dumps(rec) + "\n")
                                fh.flush()
        bar.close()
    summary = {**meta, "cells_run": run.done, "skipped": run.skipped, "encode_seconds": round(encode_s, 1),
               "texts_encoded": enc.encoded, "total_seconds": round(time.time() - t_start, 1),
               "config_full": cfg}
    (out / "run.json").write_text(json.dumps(summary, indent=2, default=str))
    from .entity_report import write_entity_report
    from .report import write_report

    write_report(lines_path, out)
    write_entity_report(lines_path, out)
    return lines_path


_ATTACK_KEYS = ("leakage_", "confidence_", "epochs_", "view_")


class _GridRun:
    """The cells of one grid run, with what one cell hands the next: a ``+qt`` row stores exactly
    what its base row stores (same noise: only queries differ), so its attack metrics are the base
    row's; a sealed cell stores the clear cell's vectors (same key, same keyed noise), so it reuses
    its attacks when the vectors' digests agree. Both are marked ``attacks_from`` in the line."""

    def __init__(self, cfg: dict[str, Any], enc: Any, attackers: dict[str, Any], meta: dict[str, Any],
                 ef_search: int) -> None:
        self.cfg, self.enc, self.attackers, self.meta, self.ef_search = cfg, enc, attackers, meta, ef_search
        self.attack_memo: dict[tuple[str, str, str, float, int], dict[str, Any]] = {}
        self.vector_memo: dict[tuple[str, str, str, float, int], tuple[str, dict[str, Any]]] = {}
        self.skipped: dict[str, str] = {}
        self.done = 0

    def cell(self, task: Task, mech: str, eps: float, seed: int, backend: str, store_kind: str) -> dict[str, Any] | None:
        """One results line, or None (skipped: the reason is in ``skipped``)."""
        key = f"{mech}/{task.meta['concept']}" + ("" if store_kind == "clear" else f"/{store_kind}")
        if key in self.skipped:
            return None
        if store_kind == "sealed" and not (sealable(mech) and backend == "chroma" and task.kind in ("retrieval", "ddxplus")):
            self.skipped[key] = "a sealed store needs a row with the project's text stage, Chroma and a search task"
            return None
        t1 = time.time()
        try:
            ef = make_embedding(mech, eps, seed, self.enc, task.meta["concept"], self.cfg, seal=store_kind == "sealed")
        except Exception as exc:  # concept package or artefact missing: say so
            self.skipped[key] = f"{type(exc).__name__}: {exc}"
            return None
        cell_att = {n: f for n, (f, w) in self.attackers.items() if _runs_on(w, mech, eps)}
        memo_key = (task.name, backend, mech.removesuffix("+qt"), eps, seed)
        reused = mech.endswith("+qt") and memo_key in self.attack_memo
        aux = None
        if task.kind == "entity" and task.meta.get("keyless") and cell_att:
            aux = make_embedding(mech, eps, seed, self.enc, task.meta["concept"], self.cfg, key_role="aux")
        reuse = self.vector_memo.get(memo_key) if store_kind == "sealed" and not mech.endswith("+qt") else None
        metrics = task.run(ef, {} if reused else cell_att, seed=seed, backend=backend,
                           sts_transform=sts_transform(mech, task, ef),
                           attack_transforms=None if reused else adaptive_transforms(ef, self.cfg),
                           doc_transform=doc_transform(mech, self.cfg), aux_embedding=aux, ef_search=self.ef_search,
                           store_kind=store_kind, reuse_attacks=reuse)
        attack_part = {k: v for k, v in metrics.items()
                       if (k.startswith(_ATTACK_KEYS) or k == "attack_variants") and k != "leakage_text"}
        if reused:
            metrics.update({k: v for k, v in self.attack_memo[memo_key].items()
                            if k == "attack_variants" or k.split("_", 1)[1] in cell_att})
        elif not mech.endswith("+qt") and store_kind == "clear":
            self.attack_memo[memo_key] = attack_part
            if "leak_vectors_sha256" in metrics:
                self.vector_memo[memo_key] = (metrics["leak_vectors_sha256"], attack_part)
        rec = cell_record(self.meta, task, mech, eps, seed, backend, metrics, time.time() - t1, ef)
        rec["store"] = store_kind
        if reused:
            rec["attacks_from"] = mech.removesuffix("+qt")
        elif reuse is not None and metrics.get("leak_vectors_sha256") == reuse[0]:
            rec["attacks_from"] = "clear"
        self.done += 1
        return rec
