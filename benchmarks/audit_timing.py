"""Time ``private-vectors audit`` on a 5,000-document store, full and ``--quick``, and compare
the quick run's name recovery with the full run's.

The store: the entity corpus (``private_vectors.eval.entity.make_entity_corpus``, seed 0,
5,000 documents about 500 Zipf-distributed FakeNameGenerator people) written into a Chroma
folder through ``add_documents`` with ``PrivateEmbedding(concept="PII", eps=10,
sanitize=<policy>)`` and the packaged all-MiniLM-L6-v2 (built once per policy, kept under
``--work``). Each audit runs in this process with default settings (attackers mlc, nn, prior;
clean baseline; self-retrieval proxy), seed 0. The machine's 1-minute load average is recorded
before and after each run: the figures are wall-clock times on a shared machine.

    .venv/bin/python benchmarks/audit_timing.py --data ../shared/data --policy none redact \
        --out benchmarks/results/audit_timing.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build_store(folder: Path, data: Path, policy: str, n_docs: int) -> dict[str, str]:
    """The corpus as {id: text}; writes the store into ``folder`` unless it exists."""
    from private_vectors.eval.entity import make_entity_corpus

    corpus = make_entity_corpus(data / "pii", n_identities=n_docs // 10, n_docs=n_docs, seed=0)
    raw = {d.id: d.text for d in corpus.documents}
    if not folder.exists():
        import chromadb

        from private_vectors import PrivateEmbedding
        from private_vectors.integrations.chroma import add_documents

        ef = PrivateEmbedding(concept="PII", eps=10, sanitize=None if policy == "none" else policy)
        client = chromadb.PersistentClient(path=str(folder))
        col = client.create_collection("docs", embedding_function=ef, configuration={"hnsw": {"space": ef.space}})
        ids = list(raw)
        for s in range(0, len(ids), 500):
            add_documents(col, ids=ids[s:s + 500], documents=[raw[i] for i in ids[s:s + 500]])
    return raw


def one(store: Path, raw: dict[str, str], quick: bool, out: Path) -> dict:
    from private_vectors.eval.audit import audit

    load0 = os.getloadavg()[0]
    t0, c0 = time.time(), time.process_time()
    rep = audit(store, raw, quick=quick, out=out, progress=False)
    secs, cpu = time.time() - t0, time.process_time() - c0
    a = rep["attack"]
    return {"quick": quick, "seconds": round(secs, 1), "cpu_seconds": round(cpu, 1), "load_before": round(load0, 2),
            "load_after": round(os.getloadavg()[0], 2), "steps": rep["seconds"], "strongest": a["strongest"],
            "name_recovery": a["name_recovery"], "name_recovery_prior": a["name_recovery_prior"],
            "names_recoverable": a["names_recoverable"], "token_recovery": a["token_recovery"],
            "headline": rep["headline"], "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--policy", nargs="+", default=["none", "redact"])
    ap.add_argument("--n-docs", type=int, default=5000)
    ap.add_argument("--work", default="/tmp/pv-audit-timing", help="stores and audit outputs (not committed)")
    ap.add_argument("--out", default="benchmarks/results/audit_timing.md")
    args = ap.parse_args(argv)
    work = Path(args.work)
    rows = []
    for policy in args.policy:
        store = work / f"store-{policy}-{args.n_docs}"
        t0 = time.time()
        raw = build_store(store, Path(args.data), policy, args.n_docs)
        print(f"{policy}: store ready in {time.time() - t0:.0f} s", file=sys.stderr)
        for quick in (False, True):
            r = one(store, raw, quick, work / f"audit-{policy}{'-quick' if quick else ''}")
            r["policy"] = policy
            rows.append(r)
            print(json.dumps(r), file=sys.stderr)
            Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")  # after every run
            Path(args.out).write_text(markdown(rows, args, argv))
    return 0


def markdown(rows: list[dict], args: argparse.Namespace, argv: list[str] | None) -> str:
    cmd = "benchmarks/audit_timing.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = ["# `private-vectors audit` timing, 5,000-document store", "",
             f"Command: `.venv/bin/python {cmd}`", "",
             f"{args.n_docs} entity-corpus documents (seed 0), Chroma store written with "
             "`PrivateEmbedding(concept=\"PII\", eps=10, sanitize=<policy>)`, packaged all-MiniLM-L6-v2, "
             f"{os.cpu_count()} CPU cores shared with other jobs (load average = the machine's 1-minute load "
             "before / after the run). Default settings: attackers mlc, nn, prior; clean baseline; "
             "self-retrieval proxy; seed 0.", "",
             "CPU time = the process's CPU seconds, all threads: on a machine of its own, wall time is about "
             "CPU time / cores or more.", "",
             "| store | run | wall time | CPU time | load before / after | strongest | name recovery | prior | "
             "names recoverable | token recovery |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cpu = f"{r['cpu_seconds'] / 60:.1f} min" if r.get("cpu_seconds") is not None else "n/a"
        lines.append(f"| {r['policy']} | {'--quick' if r['quick'] else 'full'} | {r['seconds'] / 60:.1f} min | {cpu} | "
                     f"{r['load_before']} / {r['load_after']} | {r['strongest']} | "
                     f"{100 * r['name_recovery']:.1f} % | {100 * r['name_recovery_prior']:.1f} % | "
                     f"{r['names_recoverable']} | {100 * r['token_recovery']:.1f} % |")
    lines += ["", "Quick vs full name recovery (target: within ±5 points):", ""]
    for policy in dict.fromkeys(r["policy"] for r in rows):
        full = next((r for r in rows if r["policy"] == policy and not r["quick"]), None)
        quick = next((r for r in rows if r["policy"] == policy and r["quick"]), None)
        if full and quick:
            d = 100 * (quick["name_recovery"] - full["name_recovery"])
            lines.append(f"- {policy}: {d:+.1f} points")
    lines += ["", "Step times (seconds) per run:", ""]
    for r in rows:
        lines.append(f"- {r['policy']} {'quick' if r['quick'] else 'full'}: {json.dumps(r['steps'])}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
