"""GEIA-style generative inversion on the presidio PII set: the reduced grid of issue 8.

Embeds ``pii/synth_dataset_v2.json`` with the default model (all-MiniLM-L6-v2), splits it
into attacker-train and victim-test sentences, perturbs both sides with each mechanism
(the attacker knows the mechanism and ε and retrains on perturbed vectors — the SPARSE
paper's App. I setting), fits :class:`~private_vectors.eval.attacks.generative.GenerativeInversion`
and scores the victim-test vectors:

* rows: clean; Laplace ε ∈ {5, 10, 20}; concept-subspace Mahalanobis (built-in ``PII``
  concept, subspace estimator) ε ∈ {5, 10, 20}; ε per unit 1/√n of L2 (n = 384);
* columns: leakage (eq. 13, sampled probability ≥ 0.5), confidence (eq. 14), greedy leakage
  (token in the greedy reconstruction, GEIA), word-piece F1 of the reconstruction, times.

Usage:
    .venv/bin/python benchmarks/generative_attack.py --data ../shared/data --jobs 4 --mlc-reference \\
        --json /tmp/geia.jsonl --out benchmarks/results/generative_attack.md

``--jobs`` runs grid rows in parallel processes (one torch thread each); ``--rows`` runs a
subset and ``--json`` streams each finished row, so partial runs can be combined with
``--merge a.jsonl b.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EPSILONS = (5.0, 10.0, 20.0)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data", help="shared data folder")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "generative_attack.md")
    p.add_argument("--json", type=Path, default=None, help="also write the rows as JSON lines here")
    p.add_argument("--test-share", type=float, default=0.2, help="victim-test share of the sentences")
    p.add_argument("--limit", type=int, default=None, help="use only this many sentences (smoke runs)")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--jobs", type=int, default=1, help="grid rows run in this many processes at once")
    p.add_argument("--rows", type=str, default=None,
                   help="comma-separated indices of the grid rows to run (default all: 0 clean, 1-3 Laplace, "
                        "4-6 concept subspace)")
    p.add_argument("--merge", type=Path, nargs="+", default=None,
                   help="do not run: write the markdown from JSON-lines files of earlier (partial) runs")
    p.add_argument("--mlc-reference", action="store_true", help="also run the MLC attacker on clean vectors")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def _git_sha() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def attacker_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The attacker configuration used for every row (chosen on the clean row, see the results file)."""
    return {"tokenizer": "wordpiece", "embedding_size": 128, "hidden_size": 256, "num_layers": 1,
            "dropout": 0.1, "word_dropout": 0.0, "epochs": args.epochs, "batch_size": 32,
            "learning_rate": 3e-3, "validation_share": 0.1, "patience": 3, "n_samples": 10,
            "temperature": 1.0, "rule": "threshold", "threshold": 0.5, "show_progress": not args.no_progress}


def grid(encoder: Any) -> tuple[list[dict[str, Any]], str]:
    """Row specs (picklable, so rows can run in worker processes) and the concept note."""
    from private_vectors.fitted import load_concept

    concept = load_concept("PII", encoder, estimator="subspace")
    note = (f"built-in PII concept ({getattr(concept, 'source', '?')}, subspace estimator), rank "
            f"{concept.basis.shape[1]}, {concept.share:.0%} of the trace on it")
    rows: list[dict[str, Any]] = [{"mechanism": "none (clean)", "epsilon": math.inf, "kind": "none"}]
    rows += [{"mechanism": "Laplace", "epsilon": e, "kind": "laplace"} for e in EPSILONS]
    rows += [{"mechanism": "concept subspace (PII)", "epsilon": e, "kind": "subspace",
              "basis": np.asarray(concept.basis, dtype=np.float64), "share": float(concept.share)}
             for e in EPSILONS]
    return rows, note


def build_mechanism(spec: dict[str, Any], dim: int, seed: int) -> Any:
    """The mechanism of one row; ε unit 1/√n of L2. The subspace row is what
    ``FittedConcept.mechanism`` builds (``MahalanobisMechanism.from_subspace``)."""
    from private_vectors.mechanisms import IdentityMechanism, LaplaceMechanism, MahalanobisMechanism

    unit = 1.0 / math.sqrt(dim)
    if spec["kind"] == "none":
        return IdentityMechanism()
    if spec["kind"] == "laplace":
        return LaplaceMechanism(epsilon=spec["epsilon"], unit=unit, random_state=seed)
    return MahalanobisMechanism.from_subspace(epsilon=spec["epsilon"], basis=spec["basis"], share=spec["share"],
                                              unit=unit, random_state=seed)


def run_row(spec: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """Perturb both splits, fit the attacker on attacker-train, score victim-test."""
    import torch

    from private_vectors.eval.attacks.generative import GenerativeInversion

    torch.set_num_threads(job["threads"])
    X, train, test = job["X"], job["train"], job["test"]
    t0, c0 = time.perf_counter(), time.process_time()
    mech = build_mechanism(spec, X.shape[1], job["seed"] + int(0 if math.isinf(spec["epsilon"]) else spec["epsilon"]))
    Xtr, Xte = mech.perturb(X[train]), mech.perturb(X[test])
    attack = GenerativeInversion(random_state=job["seed"], **job["attacker"])
    attack.fit(Xtr, job["tr_text"], job["tr_tok"])
    fit_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = attack.evaluate(Xte, job["te_tok"])
    res["word_f1"] = attack.reconstruction_f1(Xte, job["te_text"])
    example = attack.generate(Xte[:3])
    row = {"mechanism": spec["mechanism"], "epsilon": spec["epsilon"], **res, "epochs_run": len(attack.history_),
           "fit_s": fit_s, "eval_s": time.perf_counter() - t1, "cpu_s": time.process_time() - c0,
           "examples": list(zip(job["te_text"][:3], example, strict=True))}
    print(json.dumps({k: v for k, v in row.items() if k != "examples"}), flush=True)
    return row


def seen_share(train_texts: list[str], test_tokens: list[list[str]]) -> float:
    """Share of victim token instances whose WordPiece units occur as whole words in some
    attacker-train sentence: what any attacker limited to its training vocabulary could hope for."""
    from private_vectors.eval.attacks.generative import TokenVocabulary, _contains

    vocab = TokenVocabulary("wordpiece")
    train_units = [vocab.split(t) for t in train_texts]
    index: dict[str, list[int]] = {}
    for i, units in enumerate(train_units):
        for u in set(units):
            index.setdefault(u, []).append(i)
    hits = []
    for toks in test_tokens:
        for tok in toks:
            units = vocab.split(tok)
            candidates = index.get(units[0], []) if units else []
            hits.append(any(_contains(train_units[i], units, vocab) for i in candidates))
    return float(np.mean(hits)) if hits else float("nan")


ORDER = ("none (clean)", "Laplace", "concept subspace (PII)")


def _append_json(path: Path | None, row: dict[str, Any], meta: dict[str, Any]) -> None:
    """Stream each finished row (with the run's metadata) so partial runs can be merged."""
    if path is not None:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({**row, "meta": meta}, default=str) + "\n")


def merge(paths: list[Path]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows and metadata from JSON-lines files written by earlier runs (the last row per grid cell wins)."""
    cells: dict[tuple[str, float], dict[str, Any]] = {}
    meta: dict[str, Any] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                row["epsilon"] = float(row["epsilon"])
                row_meta = row.pop("meta", None) or {}
                commands = meta.get("commands", [])
                if row_meta.get("command") and row_meta["command"] not in commands:
                    commands = [*commands, row_meta["command"]]
                meta = {**meta, **row_meta, "commands": commands}
                row.setdefault("examples", [])
                cells[(row["mechanism"], row["epsilon"])] = row
    rows = sorted(cells.values(), key=lambda r: (ORDER.index(r["mechanism"]), r["epsilon"]))
    return rows, meta


def _mlc_reference(args: argparse.Namespace, X: np.ndarray, train: np.ndarray, test: np.ndarray,
                   tr_tok: list[list[str]], te_tok: list[list[str]], meta: dict[str, Any]) -> None:
    """The MLC attacker on the same clean split, for scale (optional)."""
    if not args.mlc_reference:
        return
    from private_vectors.eval.attacks import MLCAttacker

    t0 = time.perf_counter()
    mlc = MLCAttacker(random_state=args.seed).fit(X[train], tr_tok)
    meta["mlc_clean"] = {**mlc.evaluate(X[test], te_tok), "time_s": time.perf_counter() - t0}


def run(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    import torch

    from private_vectors.encoders import load_encoder
    from private_vectors.eval.datasets import load_presidio_pii

    torch.set_num_threads(args.threads)
    t_start, c_start = time.perf_counter(), time.process_time()
    data = load_presidio_pii(args.data / "pii" / "synth_dataset_v2.json")
    if args.limit:
        data = data.subset(args.limit, seed=args.seed)
    order = np.random.default_rng(args.seed).permutation(len(data))
    n_test = round(args.test_share * len(data))
    test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
    encoder = load_encoder(None)
    t0 = time.perf_counter()
    X = encoder.encode(data.texts)
    embed_s = time.perf_counter() - t0
    tr_text = [data.texts[i] for i in train]
    tr_tok, te_tok = [data.tokens[i] for i in train], [data.tokens[i] for i in test]
    te_text = [data.texts[i] for i in test]
    specs, note = grid(encoder)
    job = {"X": X, "train": train, "test": test, "tr_text": tr_text, "tr_tok": tr_tok, "te_text": te_text,
           "te_tok": te_tok, "seed": args.seed, "threads": args.threads, "attacker": attacker_kwargs(args)}
    meta = {"n_train": len(train), "n_test": len(test), "embed_s": embed_s, "git": _git_sha(),
            "seen_share": seen_share(tr_text, te_tok), "attacker": attacker_kwargs(args), "concept": note,
            "torch": torch.__version__, "python": platform.python_version(), "threads": args.threads,
            "jobs": args.jobs, "n_token_instances": sum(len(t) for t in te_tok)}
    if args.rows:
        specs = [specs[int(i)] for i in args.rows.split(",")]
    meta["command"] = ".venv/bin/python benchmarks/generative_attack.py " + " ".join(args.argv)
    rows = []
    if args.jobs > 1:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
            futures = [pool.submit(run_row, spec, job) for spec in specs]
            _mlc_reference(args, X, train, test, tr_tok, te_tok, meta)  # in the parent, meanwhile
            for future in as_completed(futures):
                rows.append(future.result())
                _append_json(args.json, rows[-1], meta)
    else:
        _mlc_reference(args, X, train, test, tr_tok, te_tok, meta)
        for spec in specs:
            rows.append(run_row(spec, job))
            _append_json(args.json, rows[-1], meta)
    rows.sort(key=lambda r: (ORDER.index(r["mechanism"]), r["epsilon"]))
    meta["wall_s"] = time.perf_counter() - t_start
    meta["cpu_s"] = time.process_time() - c_start + sum(r["cpu_s"] for r in rows) * (args.jobs > 1)
    return rows, meta


def _timing(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    row_cpu = sum(r["cpu_s"] for r in rows) / 60
    if "wall_s" in meta:
        return (f"Whole run: {meta['wall_s'] / 60:.1f} min wall, {meta['cpu_s'] / 60:.1f} min CPU "
                f"(grid rows {row_cpu:.1f} min CPU; embedding {meta['embed_s']:.0f} s wall).")
    return (f"Rows merged from partial runs that ran at the same time; grid rows {row_cpu:.1f} min CPU in total "
            f"(each row's wall and CPU seconds in the table; embedding {meta['embed_s']:.0f} s wall per run).")


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any], command: str) -> str:
    eps = lambda e: "∞" if math.isinf(e) else f"{e:g}"  # noqa: E731
    lines = [
        "# Generative (GEIA-style) inversion on presidio PII — reduced grid",
        "",
        f"Command (from the project root): `{command}`",
        "",
        f"git {meta['git']}, torch {meta['torch']}, Python {meta['python']}, torch threads {meta['threads']}, "
        f"{meta['jobs']} process(es), on the shared 2-core CPU (other agents' jobs running at the same time). "
        + _timing(rows, meta),
        "",
        f"Data: {meta['n_train']} attacker-train / {meta['n_test']} victim-test sentences "
        f"({meta['n_token_instances']} sensitive token instances in the victim set: the word tokens of the "
        "presidio entity spans). Vectors: all-MiniLM-L6-v2, unit norm, n = 384; ε per unit 1/√384 of L2. "
        "Each row perturbs both splits with the mechanism and retrains the attacker on the perturbed "
        "attacker-train vectors.",
        "",
        "| mechanism | ε | leakage | confidence | greedy leakage | word-piece F1 | epochs | fit s | eval s | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['mechanism']} | {eps(r['epsilon'])} | {r['leakage']:.3f} | {r['confidence']:.3f} | "
                     f"{r['greedy_leakage']:.3f} | {r['word_f1']:.3f} | {r['epochs_run']} | {r['fit_s']:.0f} | "
                     f"{r['eval_s']:.0f} | {r['cpu_s']:.0f} |")
    a = meta["attacker"]
    lines += [
        "",
        "Columns: *leakage* = share of victim sensitive token instances whose probability is ≥ 0.5 (SPARSE eq. 13), "
        f"the probability being the share of {a['n_samples']} decoder samples (temperature {a['temperature']}) that "
        "contain the token as whole word(s); *confidence* = mean of that probability (eq. 14); *greedy leakage* = "
        "share of instances present in the greedy reconstruction (GEIA's criterion); *word-piece F1* = bag-of-"
        "WordPiece F1 between greedy reconstruction and true sentence (how well the whole sentence is inverted).",
        "",
        f"Ceiling: {meta['seen_share']:.3f} of the victim token instances occur at all in the attacker-train "
        "sentences; most presidio entities (names, street addresses, card numbers) occur once, so an attacker "
        "that learns from the attacker-train split alone can recover little beyond that share.",
    ]
    if "mlc_clean" in meta:
        m = meta["mlc_clean"]
        lines += ["", f"Reference, same split, clean vectors: MLC attacker (512-256-128 MLP) leakage "
                  f"{m['leakage']:.3f}, confidence {m['confidence']:.3f} ({m['time_s']:.0f} s)."]
    lines += ["", "Attacker: " + ", ".join(f"{k}={v}" for k, v in a.items() if k != "show_progress")]
    lines += ["", f"Concept rows: {meta['concept']}."]
    lines += ["", "Examples (victim sentence → greedy reconstruction):", ""]
    for r in rows:
        if r["examples"] and (r["mechanism"].startswith("none") or r["epsilon"] == 10.0):
            lines.append(f"- {r['mechanism']}, ε = {eps(r['epsilon'])}:")
            lines += [f"  - `{t[:90]}` → `{g[:90]}`" for t, g in r["examples"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.merge:
        rows, meta = merge(args.merge)
        command = "`, then `".join([*meta.get("commands", []), " ".join(
            [".venv/bin/python benchmarks/generative_attack.py", *args.argv])])
    else:
        if args.json is not None and args.json.exists():
            args.json.unlink()
        rows, meta = run(args)
        command = meta["command"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(rows, meta, command.strip()), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
