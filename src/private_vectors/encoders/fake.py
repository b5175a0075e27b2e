"""A deterministic keyword encoder for tests: no weights, no network.

Each lower-cased word token is hashed (BLAKE2b) to a fixed pseudo-random unit vector;
a text's embedding is the normalised sum of its tokens' vectors. Texts that share words
are similar, so retrieval, concept masks and attacks all behave meaningfully — like
LangChain's ``DeterministicFakeEmbedding``, but with lexical structure.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .._validation import check_int, check_texts
from .base import l2_normalize

__all__ = ["FakeEncoder"]

_TOKEN = re.compile(r"[\w@.+-]+", re.UNICODE)


@lru_cache(maxsize=65536)
def _token_vector(token: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    vec = np.random.default_rng(seed).standard_normal(dim)
    vec.setflags(write=False)
    return vec / np.linalg.norm(vec)


class FakeEncoder:
    """Deterministic bag-of-words hashing encoder.

    Args:
        dim: embedding dimension (default 64).
        normalize: return unit-norm rows (default True).
    """

    def __init__(self, *, dim: int = 64, normalize: bool = True) -> None:
        self.dim = check_int(dim, "dim", minimum=2)
        self.normalize = bool(normalize)
        self.model_id = f"fake-keyword-{self.dim}"

    def __repr__(self) -> str:
        return f"FakeEncoder(dim={self.dim}, normalize={self.normalize})"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        out = np.zeros((len(items), self.dim))
        for i, text in enumerate(items):
            for tok in _TOKEN.findall(text.lower()):
                tok = tok.strip(".-+")
                if tok:
                    out[i] += _token_vector(tok, self.dim)
            out[i] += 0.05 * _token_vector("<bias>", self.dim)  # never a zero vector
        if self.normalize:
            out = l2_normalize(out)
        return out.astype(np.float32)

    def get_config(self) -> dict[str, Any]:
        return {"type": "fake", "dim": self.dim, "normalize": self.normalize}
