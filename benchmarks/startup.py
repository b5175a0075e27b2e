"""Start-up time: ``private-vectors --help`` and the first embedding of the default line.

Each measurement is a fresh Python process (after one untimed warm-up run, so the disk cache is
warm), timed from the parent: wall time from launch to exit, and the process's CPU time
(user + sys, from ``resource.getrusage(RUSAGE_CHILDREN)``). The embedding child also reports
its own phases (import, construction, first call). The median of ``--runs`` processes is
reported; the load average is recorded because the machine may be shared::

    nice -n 10 .venv/bin/python benchmarks/startup.py --runs 5 --out benchmarks/results/startup.md

Targets: ``--help`` ≤ 1 s; ``PrivateEmbedding(concept="PII", eps=10)`` plus one embedded
document ≤ 3 s.

``--base SRC`` compares the default line of another source tree (``SRC`` put on
``PYTHONPATH``, e.g. a ``git worktree`` of an earlier commit) with this one, the two sides
alternating process by process in one run (the ratio is read from the CPU times)::

    git worktree add /tmp/base main
    nice -n 10 .venv/bin/python benchmarks/startup.py --runs 5 --base /tmp/base/src
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HELP = [sys.executable, "-m", "private_vectors.cli", "--help"]
EMBED_CODE = """
import json, time
t0 = time.perf_counter()
from private_vectors import PrivateEmbedding
t1 = time.perf_counter()
pe = PrivateEmbedding(concept="PII", eps=10)
t2 = time.perf_counter()
pe(["Maria Lopez flew to Madrid on Monday."])
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "construct": t2 - t1, "embed": t3 - t2}))
"""
EMBED = [sys.executable, "-c", EMBED_CODE]


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_process(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd`` once; wall and CPU seconds, and the JSON it printed last (if any)."""
    cpu0, t0 = _cpu_children(), time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall, cpu = time.perf_counter() - t0, _cpu_children() - cpu0
    out: dict[str, Any] = {"wall": wall, "cpu": cpu}
    lines = res.stdout.strip().splitlines()
    if lines and lines[-1].startswith("{"):
        out["phases"] = json.loads(lines[-1])
    return out


def measure(cmd: list[str], runs: int) -> list[dict[str, Any]]:
    """One untimed warm-up, then ``runs`` timed fresh processes."""
    time_process(cmd)
    return [time_process(cmd) for _ in range(runs)]


def interleaved(base_src: str, runs: int, child: list[str]) -> dict[str, list[dict[str, Any]]]:
    """``child`` run with ``base_src`` and with this tree's ``src`` on ``PYTHONPATH``, alternating
    (one warm-up each)."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    sides = {"base": base_src, "this tree": here}
    cmd = {name: ["env", f"PYTHONPATH={src}", *child] for name, src in sides.items()}
    for name in sides:
        time_process(cmd[name])
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for _ in range(runs):
        for name in sides:
            rows[name].append(time_process(cmd[name]))
    return rows


def ab_report(tables: dict[str, dict[str, list[dict[str, Any]]]], base_src: str) -> str:
    """One A/B table per measurement: median CPU and wall per side, this tree's CPU over the base's."""
    n = len(next(iter(tables.values()))["base"])
    lines = [f"Interleaved against `{base_src}` ({n} processes each, alternating; phases: median wall "
             "seconds measured inside the child):", "",
             "| measurement | side | median CPU (s) | median wall (s) | CPU over the base | import | construction | "
             "first call |", "|---|---|---|---|---|---|---|---|"]
    for what, rows in tables.items():
        base = _median(rows["base"], "cpu")
        for name, side in rows.items():
            phases = [f"{_phase_median(side, p):.2f}" if all("phases" in r for r in side) else ""
                      for p in ("import", "construct", "embed")]
            lines.append(f"| {what} | {name} | {_median(side, 'cpu'):.2f} | {_median(side, 'wall'):.2f} | "
                         f"{_median(side, 'cpu') / base:.2f}x | {' | '.join(phases)} |")
    return "\n".join([*lines, ""])


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _phase_median(rows: list[dict[str, Any]], phase: str) -> float:
    return statistics.median(r["phases"][phase] for r in rows)


def _walls(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['wall']:.2f}" for r in rows)


def report(help_rows: list[dict[str, Any]], embed_rows: list[dict[str, Any]], loads: tuple[Any, Any],
           command: str) -> str:
    """The Markdown result file."""
    lines = [
        "# Start-up time",
        "",
        f"Command: `{command}`",
        "",
        f"Fresh processes after one warm-up each; median of {len(help_rows)}. Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs; load average before {loads[0]}, after {loads[1]} (a shared machine: wall "
        "times include waiting for a core, CPU times do not).",
        "",
        "| measurement | target | median wall (s) | median CPU (s) | runs (wall, s) |",
        "|---|---|---|---|---|",
        f"| `private-vectors --help` | ≤ 1 | {_median(help_rows, 'wall'):.2f} | {_median(help_rows, 'cpu'):.2f} | "
        f"{_walls(help_rows)} |",
        f"| `PrivateEmbedding(concept=\"PII\", eps=10)` + one document, whole process | ≤ 3 | "
        f"{_median(embed_rows, 'wall'):.2f} | {_median(embed_rows, 'cpu'):.2f} | "
        f"{_walls(embed_rows)} |",
        "",
        "Phases of the embedding process (median wall, s, measured inside the child): "
        f"import {_phase_median(embed_rows, 'import'):.2f}, construction {_phase_median(embed_rows, 'construct'):.2f}, "
        f"first call {_phase_median(embed_rows, 'embed'):.2f}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--base", default=None, help="another tree's src folder: its default line, interleaved")
    args = ap.parse_args()
    before = tuple(round(x, 2) for x in os.getloadavg())
    help_rows = measure(HELP, args.runs)
    embed_rows = measure(EMBED, args.runs)
    ab = ({"`--help`": interleaved(args.base, args.runs, HELP),
           "default line + one document": interleaved(args.base, args.runs, EMBED)} if args.base else None)
    after = tuple(round(x, 2) for x in os.getloadavg())
    command = "nice -n 10 .venv/bin/python benchmarks/startup.py " + " ".join(sys.argv[1:])
    text = report(help_rows, embed_rows, (before, after), command)
    if ab is not None:
        text += "\n" + ab_report(ab, args.base)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
