"""``private-vectors bench``: run the harness from a config file (or ``--quick``)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

__all__ = ["find_config", "register"]

_REPO = Path(__file__).resolve().parents[3]


def find_config(name_or_path: str) -> Path:
    """A config path: an existing file, or ``benchmarks/configs/<name>.json`` (cwd, then the repo)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    for root in (Path.cwd(), _REPO):
        cand = root / "benchmarks" / "configs" / f"{name_or_path}.json"
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"benchmark config {name_or_path!r} not found (a file, or a name under "
                            "benchmarks/configs/)")


def _seeds(text: str) -> list[int]:
    """``--seeds``: ``"5"`` → [0, 1, 2, 3, 4]; ``"3,4"`` → [3, 4]."""
    try:
        if "," in text:
            return [int(x) for x in text.split(",") if x.strip()]
        return list(range(int(text)))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a comma-separated list of ints, received {text!r}") from None


def _resolve_data_root(cfg: dict[str, Any], config_path: Path, override: str | None) -> None:
    root = Path(override or cfg.get("data_root", "../shared/data"))
    if not root.is_absolute():
        for base in (Path.cwd(), *config_path.resolve().parents[2:3], _REPO):  # a config in /tmp has no parents[2]
            if (base / root).is_dir():
                root = base / root
                break
    cfg["data_root"] = str(root.resolve())


def _select_datasets(cfg: dict[str, Any], names: str) -> list[dict[str, Any]]:
    """``--datasets a,b``: the config's data set entries named a and b, in the config's order."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = [d["name"] for d in cfg.get("datasets", [])]
    unknown = [n for n in wanted if n not in known]
    if not wanted or unknown:
        raise SystemExit(f"--datasets: expected names among {known}, received {names!r}")
    return [d for d in cfg["datasets"] if d["name"] in wanted]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run the leakage/utility benchmark harness")
    p.add_argument("--quick", action="store_true", help="the small grid (benchmarks/configs/quick.json, ≤ 5 min)")
    p.add_argument("--config", default=None, help="a config file or a name under benchmarks/configs/")
    p.add_argument("--out", default=None, help="output folder (default: the benchmarks results folder, <config name>)")
    p.add_argument("--data-root", default=None, help="the shared data folder (default from the config)")
    p.add_argument("--model", default=None, help="encoder override (e.g. 'fake' for a smoke run)")
    p.add_argument("--seeds", type=_seeds, default=None,
                   help="seeds overriding the config: a count ('5' = 0..4) or a list ('3,4')")
    p.add_argument("--datasets", default=None,
                   help="comma-separated data set names: run only these entries of the config's datasets")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    from .runner import run_benchmark

    path = find_config(args.config or ("quick" if args.quick or not args.config else "full"))
    cfg = json.loads(path.read_text(encoding="utf-8"))
    _resolve_data_root(cfg, path, args.data_root)
    if args.model is not None:
        cfg["model"] = args.model
    if args.seeds is not None:
        cfg["seeds"] = args.seeds
    if args.datasets is not None:
        cfg["datasets"] = _select_datasets(cfg, args.datasets)
    out = Path(args.out) if args.out else _REPO / "benchmarks" / "results" / cfg.get("name", path.stem)
    t0 = time.time()
    lines = run_benchmark(cfg, out, progress=not args.no_progress)
    print(f"wrote {lines} and the report in {out} ({time.time() - t0:.0f} s)")
    return 0
