"""The ``private-vectors`` command line.

Sub-commands live in small functions registered in :data:`COMMANDS`; each module that
adds one keeps its own parser-building function next to its implementation.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from . import __version__
from .errors import PrivateVectorsError

Register = Callable[[argparse._SubParsersAction], None]

EXTRAS = {"chromadb": "chroma", "langchain_chroma": "langchain", "langchain_core": "langchain", "faiss": "faiss",
          "llama_index": "llamaindex", "matplotlib": "bench", "presidio_anonymizer": "bench", "sklearn": "bench",
          "concept_erasure": "fit"}
"""Optional import → the extra that installs it (named when a command needs a missing one)."""


def _register_info(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="versions, default model, available mechanisms")
    p.set_defaults(func=_cmd_info)


def _cmd_info(args: argparse.Namespace) -> int:
    import numpy
    import torch

    from .encoders import DEFAULT_MODEL, default_model_path

    try:
        model_path = str(default_model_path())
    except PrivateVectorsError as exc:
        model_path = f"unavailable: {exc}"
    info = {
        "private_vectors": __version__,
        "torch": torch.__version__,
        "cuda": torch.cuda.is_available(),
        "numpy": numpy.__version__,
        "default_model": DEFAULT_MODEL,
        "default_model_path": model_path,
        "mechanisms": ["laplace", "mahalanobis", "purkayastha", "gaussian", "none"],
    }
    print(json.dumps(info, indent=2))
    return 0


def _registrations() -> list[Register]:
    regs: list[Register] = [_register_info]
    from .demo import register as register_demo

    regs.append(register_demo)
    from .fitted.cli import register as register_concept

    regs.append(register_concept)
    from .eval.cli import register as register_bench

    regs.append(register_bench)
    from .eval.audit_cli import register as register_audit  # parser only: the audit loads when run

    regs.append(register_audit)
    return regs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="private-vectors", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"private-vectors {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in _registrations():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors (2, message already on stderr), --help/--version (0)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.func(args) or 0)
    except PrivateVectorsError as exc:
        print(f"private-vectors: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"private-vectors: error: {args.command} needs {exc.name}, which is not installed: "
              f"pip install 'private-vectors[{extra}]'", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
