"""A byte scan of every file a store persisted: raw values and runs of four words of stored texts.

Each file is read as UTF-8, UTF-16 (both byte orders, both alignments), with JSON ``\\uXXXX``
escapes decoded, and every base64 run (standard or URL-safe alphabet) that is not a sealed
record is decoded and read the same way. A needle is found case-insensitively, whitespace
collapsed. Used by tests/test_sealed_paths.py.
"""

from __future__ import annotations

import base64
import contextlib
import re
from collections.abc import Iterable
from pathlib import Path

_B64 = re.compile(rb"[A-Za-z0-9+/_-]{12,}={0,2}")
_ESC = re.compile(r"(?:\\u[0-9a-fA-F]{4})+")
_RECORD = b"pvs1."
_SPACE = re.compile(r"\s+")


def _unescape(text: str) -> str:
    """``text`` with each run of JSON ``\\uXXXX`` escapes decoded (surrogate pairs joined)."""
    def one(m: re.Match[str]) -> str:
        run = m.group(0)
        units = bytes.fromhex("".join(run[i + 2:i + 6] for i in range(0, len(run), 6)))
        return units.decode("utf-16-be", errors="ignore")

    return _ESC.sub(one, text)


def _decoded_b64(data: bytes) -> list[bytes]:
    out = []
    for m in _B64.finditer(data):
        if data[max(0, m.start() - len(_RECORD)):m.start()] == _RECORD:
            continue  # a sealed record: ciphertext, opened only with the key
        run = m.group(0).rstrip(b"=")
        for alt in (b"+/", b"-_"):
            with contextlib.suppress(ValueError, TypeError):
                out.append(base64.b64decode(run + b"=" * (-len(run) % 4), altchars=alt, validate=False))
    return out


def views(data: bytes, depth: int = 0) -> list[str]:
    """The readings of ``data`` (see the module docstring), whitespace collapsed, lower case."""
    texts = [data.decode("utf-8", errors="ignore")]
    for offset in (0, 1):
        for codec in ("utf-16-le", "utf-16-be"):
            texts.append(data[offset:].decode(codec, errors="ignore"))
    texts.append(_unescape(texts[0]))
    if depth < 2:
        for chunk in _decoded_b64(data):
            texts.extend(views(chunk, depth + 1))
    return [_SPACE.sub(" ", t).lower() for t in texts]


def files(folder: Path) -> list[Path]:
    """Every regular file under ``folder`` (hidden, temporary and lock files included)."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file())


def word_runs(text: str, n: int = 4) -> list[str]:
    """Every run of ``n`` consecutive words of ``text`` (the whole text when it has fewer)."""
    words = text.split()
    if len(words) < n:
        return [" ".join(words)] if words else []
    return [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]


def scan(folders: Iterable[Path], values: Iterable[str], texts: Iterable[str] = ()) -> list[str]:
    """What of ``values`` (raw values) and of four-word runs of ``texts`` some file holds,
    as ``"<file>: <needle kind> #<n>"`` lines (never the needle itself)."""
    needles = [("value", _SPACE.sub(" ", v).lower()) for v in values if v.strip()]
    needles += [("run", r.lower()) for t in texts for r in word_runs(t)]
    found = []
    for folder in folders:
        for path in files(Path(folder)):
            seen = views(path.read_bytes())
            for n, (kind, needle) in enumerate(needles):
                if any(needle in v for v in seen):
                    found.append(f"{path.name}: {kind} #{n}")
    return found
