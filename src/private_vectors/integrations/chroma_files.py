"""Chroma's HNSW segment files: the bytes the index wrote, and the heap bytes it did not.

A local Chroma folder keeps each collection's vectors in an HNSW segment folder
(``<persist dir>/<segment id>/``: ``header.bin``, ``data_level0.bin``, ``length.bin``,
``link_lists.bin``). chromadb 1.5.9 pins its hnswlib fork at 6868102, whose
``HierarchicalNSW`` allocates the level-0 array and the length array with ``malloc`` (not
zeroed) and, when a segment is created, ``initPersistentIndex()`` writes all
``max_elements × size_data_per_element`` and ``max_elements × 4`` bytes of them. Chroma
creates a segment with room for 100 elements, so a small collection's files carry thousands
of bytes of whatever the process heap held before: raw documents the process handled can
land on disk (chroma-core/chroma#7688 reports it for ``length.bin``). Elements the index adds
later are zeroed before they are filled (``addPoint`` ``memset``s them), so the never-written
bytes are:

- ``data_level0.bin`` from ``cur_element_count × size_data_per_element`` to its end;
- ``length.bin`` from ``cur_element_count × 4`` to its end, and, in a space that does not
  normalise (``l2``, ``ip``), every entry: hnswlib stores a vector's length only for cosine
  and otherwise persists the array's uninitialised bytes for each element it adds.

:func:`scrub_collection` zeroes exactly those bytes in a collection's segment and nothing the
index reads: hnswlib reads lengths only when it normalises, and never reads level-0 slots past
its element count. The protected write paths call it after each write (see the stores guide);
:func:`loose_bytes` counts such bytes without changing anything (``private-vectors audit``).

The header layout is hnswlib's ``HEADER_FIELDS`` written field by field without padding
(``hnswalg.h`` at chroma-core/hnswlib 6868102). The package bounds chromadb below 1.6; on a
chromadb release other than those in :data:`TESTED_CHROMADB`, whose hnswlib fork may lay its
files out otherwise, the first scrub of a process is made on a copy of the collection's files
and the copy must read back the same vectors and answers before any original file is touched
(:func:`layout_verified`); if it does not, nothing is scrubbed and a
:class:`~private_vectors.errors.PrivacyWarning` says so.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import struct
import tempfile
import threading
import warnings
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PrivacyWarning

__all__ = ["HnswHeader", "LooseBytes", "folder_report", "loose_bytes", "read_header", "scrub_collection",
           "scrub_segment", "vector_segments", "writing"]

# PERSISTENCE_VERSION, offsetLevel0_, max_elements_, cur_element_count, size_data_per_element_,
# label_offset_, offsetData_, maxlevel_, enterpoint_node_, maxM_, maxM0_, M_, mult_, ef_construction_
_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_VERSION = 1
_FLOAT = 4
_BLOCK = 1 << 20
_NORMALISED = frozenset({"cosine"})
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
TESTED_CHROMADB = ("1.5.9",)
"""chromadb releases whose HNSW files the scrub is tested on (``tests/test_chroma_index_files.py``)."""
_VERIFIED: dict[str, bool] = {}  # chromadb release -> whether a scrub of a copy read back the same
_SAMPLE = 256


@dataclass(frozen=True)
class HnswHeader:
    """The fields of an hnswlib persisted header that locate what the index wrote."""

    max_elements: int
    count: int
    element_size: int

    @property
    def level0_written(self) -> int:
        """Bytes of ``data_level0.bin`` that hold elements."""
        return self.count * self.element_size


@dataclass(frozen=True)
class LooseBytes:
    """Non-zero bytes an HNSW segment holds outside what its index wrote."""

    segment: str
    data_level0: int
    length: int

    @property
    def total(self) -> int:
        return self.data_level0 + self.length


def read_header(segment: Path) -> HnswHeader | None:
    """The header of the HNSW segment folder ``segment``; None when it is not one this module
    knows (no ``header.bin``, another persistence version, or a header that does not parse)."""
    try:
        raw = (segment / "header.bin").read_bytes()
    except OSError:
        return None
    if len(raw) < _HEADER.size:
        return None
    fields = _HEADER.unpack_from(raw)
    version, _offset0, max_elements, count, element_size = fields[:5]
    if version != _VERSION or element_size <= 0 or count > max_elements:
        return None
    return HnswHeader(max_elements=max_elements, count=count, element_size=element_size)


def _regions(segment: Path, header: HnswHeader, normalised: bool) -> Iterator[tuple[Path, int]]:
    """(file, first never-written byte) for each file of the segment."""
    yield segment / "data_level0.bin", header.level0_written
    yield segment / "length.bin", header.count * _FLOAT if normalised else 0


def _zero(path: Path, start: int, *, write: bool = True) -> int:
    """Zero ``path`` from ``start`` to its end where it is not zero already; bytes changed
    (``write=False``: only count the non-zero bytes, the file untouched)."""
    if not path.is_file():
        return 0
    changed = 0
    with open(path, "r+b" if write else "rb") as fh:
        fh.seek(start)
        pos = start
        while block := fh.read(_BLOCK):
            dirty = len(block) - block.count(0)
            if dirty and write:
                fh.seek(pos)
                fh.write(bytes(len(block)))
            changed += dirty
            pos += len(block)
        fh.flush()
    return changed


def loose_bytes(segment: Path, *, normalised: bool = True) -> LooseBytes | None:
    """Count the non-zero bytes of ``segment`` outside what its index wrote.

    Args:
        segment: an HNSW segment folder.
        normalised: whether the collection's space normalises (cosine); when not, every entry
            of ``length.bin`` is outside what the index wrote. True is the cautious reading for
            an unknown space (it counts fewer bytes).

    Returns:
        The counts, or None when ``segment`` is not a known HNSW segment.
    """
    header = read_header(segment)
    if header is None:
        return None
    counts = [_zero(path, start, write=False) for path, start in _regions(segment, header, normalised)]
    return LooseBytes(segment=segment.name, data_level0=counts[0], length=counts[1])


def scrub_segment(segment: Path, *, normalised: bool) -> int:
    """Zero the bytes of ``segment`` that its index never wrote; returns the bytes changed.

    Call it only when no writer is adding to this segment (the header is read once; an element
    added between the read and the write would be zeroed). The protected paths hold
    :func:`writing` around their write and this call.
    """
    header = read_header(segment)
    if header is None:
        return 0
    return sum(_zero(path, start) for path, start in _regions(segment, header, normalised))


def vector_segments(persist_directory: str | Path, collection_id: str | None = None) -> list[Path]:
    """The HNSW segment folders of a local Chroma folder (of one collection, when given).

    Read from Chroma's ``segments`` table (read-only); folders that do not exist yet (a
    collection that holds no vector) are left out.
    """
    root = Path(persist_directory).resolve()
    db = root / "chroma.sqlite3"
    if not db.is_file():
        return []
    query = "SELECT id FROM segments WHERE scope = 'VECTOR'"
    params: tuple[str, ...] = ()
    if collection_id is not None:
        query += " AND collection = ?"
        params = (str(collection_id),)
    with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as con:
        rows = con.execute(query, params).fetchall()
    return [root / r[0] for r in rows if (root / r[0] / "header.bin").is_file()]


def _recorded_space(schema: str | None) -> str | None:
    """The embedding's HNSW space as Chroma 1.x records it in ``collections.schema_str``."""
    try:
        parsed = json.loads(schema or "{}")
    except ValueError:
        return None
    for part in ((parsed.get("keys") or {}).get("#embedding") or {}, parsed.get("defaults") or {}):
        space = (((part.get("float_list") or {}).get("vector_index") or {}).get("config") or {}).get("space")
        if space:
            return str(space)
    return None


def folder_report(persist_directory: str | Path) -> dict[str, Any] | None:
    """Bytes outside what the index wrote, for every HNSW segment of a local Chroma folder.

    Returns:
        ``{"segments": n, "segments_with_heap_bytes": k, "heap_bytes": total, "collections":
        {name: bytes}}``, or None when the folder is not a Chroma folder this module reads.
        A space Chroma did not record counts as normalising (the cautious reading).
    """
    root = Path(persist_directory).resolve()
    db = root / "chroma.sqlite3"
    if not db.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as con:
            rows = con.execute("SELECT s.id, c.name, c.schema_str FROM segments s JOIN collections c "
                               "ON s.collection = c.id WHERE s.scope = 'VECTOR'").fetchall()
    except sqlite3.Error:
        return None
    out: dict[str, Any] = {"segments": 0, "segments_with_heap_bytes": 0, "heap_bytes": 0, "collections": {}}
    for segment, name, schema in rows:
        counted = loose_bytes(root / segment, normalised=(_recorded_space(schema) or "cosine") in _NORMALISED)
        if counted is None:
            continue
        out["segments"] += 1
        out["segments_with_heap_bytes"] += counted.total > 0
        out["heap_bytes"] += counted.total
        out["collections"][str(name)] = out["collections"].get(str(name), 0) + counted.total
    return out


def _local_folder(collection: Any) -> Path | None:
    """The persist directory of a collection in a local persistent client, else None (an
    in-memory client writes no file; a server's files are the server's)."""
    server = getattr(collection, "_client", None)
    settings = getattr(server, "get_settings", lambda: None)()
    if settings is None or not getattr(settings, "is_persistent", False):
        return None
    if "rust" not in str(getattr(settings, "chroma_api_impl", "")).lower():
        return None
    folder = getattr(settings, "persist_directory", None)
    return Path(folder) if folder else None


def _space(collection: Any) -> str | None:
    try:
        config = collection.configuration_json or {}
    except AttributeError:
        return None
    hnsw = config.get("hnsw") or {}
    space = hnsw.get("space")
    if space is None:
        space = (getattr(collection, "metadata", None) or {}).get("hnsw:space")
    return str(space) if space else None


@contextmanager
def writing(collection: Any) -> Iterator[None]:
    """Hold the process's write lock of ``collection``'s local folder (a no-op elsewhere).

    The protected paths write and scrub under it, so one of their scrubs never runs while
    another of their writes to the same folder is adding elements.
    """
    folder = _local_folder(collection)
    if folder is None:
        yield
        return
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(str(folder.resolve()), threading.Lock())
    with lock:
        yield


def scrub_collection(collection: Any) -> int:
    """Zero the never-written bytes of ``collection``'s HNSW segment files; bytes changed.

    Does nothing (returns 0) for a collection that is not in a local persistent folder or has
    no segment file yet. Run it when no other writer is adding to the collection: the protected
    paths call it under :func:`writing` right after their write. Reopening, adding and querying
    are unaffected (tested): only bytes the index never reads are changed.
    """
    folder = _local_folder(collection)
    if folder is None:
        return 0
    normalised = (_space(collection) or "cosine") in _NORMALISED
    segments = vector_segments(folder, collection.id)
    if not segments or not layout_verified(collection, segments, normalised=normalised):
        return 0
    return sum(scrub_segment(seg, normalised=normalised) for seg in segments)


def _chromadb_release() -> str:
    from importlib.metadata import version

    return version("chromadb")


def layout_verified(collection: Any, segments: list[Path], *, normalised: bool) -> bool:
    """Whether the scrub may touch files of the installed chromadb release: one of
    :data:`TESTED_CHROMADB`, or once per process and release, a scrub of a copy of
    ``collection``'s files read back the same stored vectors and nearest neighbours."""
    release = _chromadb_release()
    if release in TESTED_CHROMADB:
        return True
    with _LOCKS_GUARD:
        known = _VERIFIED.get(release)
    if known is None:
        known = _scrub_of_a_copy_reads_back(collection, segments, normalised=normalised)
        with _LOCKS_GUARD:
            _VERIFIED[release] = known
        if not known:
            warnings.warn(f"chromadb {release}: a scrub of a copy of the index files did not read back the same, so "
                          "the HNSW files are not scrubbed (they may hold heap bytes: raw text the process handled); "
                          f"the scrub is tested on chromadb {', '.join(TESTED_CHROMADB)}", PrivacyWarning, stacklevel=4)
    return known


def _copy(segments: list[Path], dest: Path, *, scrub: bool, normalised: bool) -> Path:
    """``segments``' folder database and the segments themselves, copied to ``dest`` (scrubbed)."""
    dest.mkdir()
    for db in segments[0].parent.glob("chroma.sqlite3*"):
        shutil.copy2(db, dest / db.name)
    for seg in segments:
        shutil.copytree(seg, dest / seg.name)
        if scrub:
            scrub_segment(dest / seg.name, normalised=normalised)
    return dest


def _scrub_of_a_copy_reads_back(collection: Any, segments: list[Path], *, normalised: bool) -> bool:
    """Whether a scrubbed copy of the folder's database and ``segments`` returns what an
    unscrubbed copy returns: up to :data:`_SAMPLE` stored vectors and their nearest neighbours
    (the live collection is not read)."""
    import chromadb
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="pv-scrub-check-") as tmp:
        opened = [chromadb.PersistentClient(path=str(_copy(segments, Path(tmp) / kind, scrub=kind == "scrubbed",
                                                            normalised=normalised)),
                                            tenant=collection.tenant, database=collection.database
                                            ).get_collection(collection.name, embedding_function=None)
                  for kind in ("plain", "scrubbed")]
        try:
            plain = opened[0].get(limit=_SAMPLE, include=["embeddings"])
            scrubbed = opened[1].get(ids=list(plain["ids"]), include=["embeddings"])
            same = dict(zip(scrubbed["ids"], map(np.asarray, scrubbed["embeddings"]), strict=True))
            if any(not np.array_equal(same.get(i), np.asarray(v)) for i, v in zip(plain["ids"], plain["embeddings"],
                                                                                strict=True)):
                return False
            probe = [np.asarray(v).tolist() for v in list(plain["embeddings"])[:8]]
            k = min(5, len(plain["ids"]))
            answers = [c.query(query_embeddings=probe, n_results=k, include=[])["ids"] for c in opened] if probe else []
            return not answers or answers[0] == answers[1]
        except Exception:  # a copy Chroma cannot read back: not a layout this scrub knows
            return False
