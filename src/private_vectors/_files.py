"""Small file-system helpers shared by the rooms that write or verify artefacts (concepts, FAISS,
the spaCy model check)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["fsync_path", "measured_figures", "sha256_file"]


def fsync_path(path: Path) -> None:
    """Flush a file (or a directory entry) to disk; best effort where the OS refuses."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. directories on some platforms
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@functools.cache
def measured_figures() -> dict[str, Any]:
    """The benchmark figures the library quotes at run time: the shipped ``data/measured.json``,
    written from the committed results by ``benchmarks/measured_figures.py`` (read it, never edit it)."""
    return json.loads(resources.files("private_vectors").joinpath("data", "measured.json").read_text("utf-8"))
