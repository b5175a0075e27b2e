"""private_vectors: concept-aware privacy for stored text embeddings.

Rooms, in the order a document goes through them:
    encoders      text → vector adapters (sentence-transformers, callables, a fake)
    concepts      concept corpora, SPARSE masks, concept subspaces, artefacts
    mechanisms    noise mechanisms (Laplace, Mahalanobis, Purkayastha, Gaussian) and the
                  learned perturbations (CAPE, TextCrafter)
    options       ``EmbeddingOptions`` (frozen, validated) and ``resolve_options`` (every default)
    pipeline      ``Pipeline``: text stage → encoder → erasure → mechanism → store geometry
    embedding     ``PrivateEmbedding``: the thin Chroma/LangChain adapter over a pipeline;
                  ``config`` holds what it persists, ``report`` what it reports, ``guard``
                  the raw-text warning
    integrations  Chroma, LangChain and FAISS adapters
    attacks       inversion attacks against stored vectors
    metrics       leakage, confidence, NDCG, correlation (pure functions)
    bench         the benchmark harness
    cli           the ``private-vectors`` command
"""

from ._version import __version__
from .embedding import PrivateEmbedding
from .errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    ModelNotAvailableError,
    PrivateVectorsError,
)
from .integrations.chroma import register_if_available as _register_with_chroma
from .text import Sanitizer

_register_with_chroma()  # registers PrivateEmbedding with Chroma when chromadb is installed

__all__ = [
    "ArtefactError",
    "Chroma",
    "ConfigMismatchError",
    "InvalidParameterError",
    "InvalidTypeError",
    "ModelNotAvailableError",
    "PrivateEmbedding",
    "PrivateVectorsError",
    "Sanitizer",
    "__version__",
]


def __getattr__(name: str) -> object:
    """Lazy names: ``Chroma`` (the drop-in LangChain store; imports langchain-chroma on first use)."""
    if name == "Chroma":
        from .langchain import Chroma

        return Chroma
    raise AttributeError(f"module 'private_vectors' has no attribute {name!r}")
