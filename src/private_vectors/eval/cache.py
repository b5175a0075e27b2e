"""An encoder wrapper that pays the encoder cost once per text.

The harness applies every mechanism to the same clean embeddings. Passing a
:class:`CachingEncoder` as ``model=`` to :class:`~private_vectors.PrivateEmbedding` keeps the
real store path (texts → PrivateEmbedding → Chroma/FAISS) while each distinct text is encoded
once per model; with ``cache_dir`` the embeddings also persist across runs as ``.npy`` files
keyed by a hash of the model id and the texts.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_texts

__all__ = ["CachingEncoder"]


class CachingEncoder:
    """Memoise ``encoder.encode`` per text (same protocol as the wrapped encoder).

    Args:
        encoder: any :class:`~private_vectors.encoders.Encoder`.
        cache_dir: optional folder for ``.npy`` caches written by :meth:`warm`.
        batch_size: texts per call to the wrapped encoder.
    """

    def __init__(self, encoder: Any, *, cache_dir: str | Path | None = None, batch_size: int = 256) -> None:
        self.base = encoder
        self.model_id = encoder.model_id
        self.dim = int(encoder.dim)
        self.normalize = bool(getattr(encoder, "normalize", True))
        self.cache_dir = None if cache_dir is None else Path(cache_dir).expanduser()
        self.batch_size = batch_size
        self._memo: dict[str, np.ndarray] = {}
        self.encoded = 0  # texts actually sent to the wrapped encoder

    def __repr__(self) -> str:
        return f"CachingEncoder({self.base!r}, cached={len(self._memo)})"

    def _file(self, texts: Sequence[str]) -> Path | None:
        if self.cache_dir is None:
            return None
        h = hashlib.sha256(self.model_id.encode())
        h.update(str(self.dim).encode())
        for t in texts:
            h.update(hashlib.sha256(t.encode("utf-8")).digest())
        return self.cache_dir / f"{h.hexdigest()[:24]}.npy"

    def warm(self, texts: Sequence[str]) -> None:
        """Encode ``texts`` (unique, in order) once, from the disk cache when present."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if not todo:
            return
        path = self._file(todo)
        if path is not None and path.exists():
            X = np.load(path)
        else:
            X = self._encode_raw(todo)
            if path is not None:
                _save_atomic(path, X)
        for t, x in zip(todo, X, strict=True):
            self._memo[t] = x

    def _encode_raw(self, texts: list[str]) -> np.ndarray:
        out = [np.asarray(self.base.encode(texts[i:i + self.batch_size]), dtype=np.float32)
               for i in range(0, len(texts), self.batch_size)]
        self.encoded += len(texts)
        return np.concatenate(out, axis=0) if out else np.zeros((0, self.dim), np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        missing = list(dict.fromkeys(t for t in items if t not in self._memo))
        if missing:
            for t, x in zip(missing, self._encode_raw(missing), strict=True):
                self._memo[t] = x
        if not items:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._memo[t] for t in items]).astype(np.float32)

    def get_config(self) -> dict[str, Any]:
        return dict(self.base.get_config())


def _save_atomic(path: Path, X: np.ndarray) -> None:
    """Write ``X`` to ``path`` through a temporary file and a rename, so a benchmark run in
    another process never loads a half-written cache file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, X)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
