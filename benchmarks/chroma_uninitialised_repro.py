"""Minimal reproduction, without private_vectors: chromadb persists uninitialised heap memory.

chromadb 1.5.9 (hnswlib fork chroma-core/hnswlib@6868102, reported upstream as
chroma-core/chroma#7688 for ``length.bin``) allocates an HNSW segment's level-0 and length
arrays with ``malloc`` and ``initPersistentIndex()`` writes all ``max_elements`` (100) of them
when a collection receives its first vector. The script re-runs itself with glibc's perturb fill
(every allocation filled with 0x5A until written) and shows that the bytes past the elements the
index holds are exactly that fill; with ``--markers`` it instead (no fill) frees strings in
threads that exit before the client is created, and reports whether they reached the files.

    python benchmarks/chroma_uninitialised_repro.py              # deterministic: 0x5A on disk
    python benchmarks/chroma_uninitialised_repro.py --markers 20 # raw strings on disk, by chance
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HEADER = struct.Struct("<iQQQQQQiIQQQdQ")  # hnswlib HEADER_FIELDS, written without padding
FILL = "glibc.malloc.perturb=165:glibc.malloc.tcache_count=0"  # malloc'd bytes read 165 ^ 0xFF = 0x5A
MARK = b"raw-document-marker"


def _free_strings_in_threads(n: int) -> None:
    def handle(i: int) -> None:
        text = (MARK.decode() + f"-{i} Maria Lopez, maria.lopez@example.org. ") * 400
        text.upper().lower()

    for i in range(n):
        t = threading.Thread(target=handle, args=(i,))
        t.start()
        t.join()


def write_and_inspect(folder: Path) -> dict[str, int]:
    import chromadb

    col = chromadb.PersistentClient(path=str(folder)).create_collection("repro")
    col.add(ids=["a", "b"], embeddings=[[0.1] * 384, [0.2] * 384])
    segment = next(p.parent for p in folder.rglob("header.bin"))
    fields = HEADER.unpack_from((segment / "header.bin").read_bytes())
    max_elements, count, size = fields[2], fields[3], fields[4]
    level0 = (segment / "data_level0.bin").read_bytes()
    length = (segment / "length.bin").read_bytes()
    tail = level0[count * size:]
    blobs = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    return {"max_elements": max_elements, "elements_in_index": count, "data_level0_bytes": len(level0),
            "never_written_bytes": len(tail), "of_which_0x5A": tail.count(0x5A),
            "length_bin_bytes": len(length), "length_0x5A": length.count(0x5A),
            "marker_hits": blobs.count(MARK)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--markers", type=int, default=0, help="free this many marker strings in exited threads first")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if not args.child:
        env = dict(os.environ)
        if not args.markers:
            env["GLIBC_TUNABLES"] = FILL
        cmd = [sys.executable, __file__, "--child", "--markers", str(args.markers)]
        return subprocess.run(cmd, env=env, check=False).returncode
    _free_strings_in_threads(args.markers)
    with tempfile.TemporaryDirectory() as tmp:
        for k, v in write_and_inspect(Path(tmp)).items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
