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

__all__ = ["TMP", "commit_pair", "finish_pair", "fsync_path", "measured_figures", "sha256_file"]

TMP = ".tmp"
"""The suffix of a file of a two-file save in progress (:func:`commit_pair`)."""


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


def commit_pair(path: Path, first: str, second: str) -> None:
    """Move the written and synced ``first`` then ``second`` temporaries (name + :data:`TMP`) of
    folder ``path`` into place and sync the folder: from the first move on, :func:`finish_pair`
    completes the save, so a crash leaves the previous pair or this one, never a mixed pair."""
    os.replace(path / (first + TMP), path / first)
    os.replace(path / (second + TMP), path / second)
    fsync_path(path)


def finish_pair(path: Path, first: str, second: str) -> None:
    """Finish or discard an interrupted :func:`commit_pair`: ``first``'s temporary still there,
    the save stopped before any move and the previous pair is intact, so the temporaries go; only
    ``second``'s, the new ``first`` is in place and its (synced) partner is complete: moved in."""
    first_tmp, second_tmp = path / (first + TMP), path / (second + TMP)
    if first_tmp.exists():
        first_tmp.unlink()
        second_tmp.unlink(missing_ok=True)
    elif second_tmp.exists():
        os.replace(second_tmp, path / second)


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
