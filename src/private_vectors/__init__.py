"""private_vectors: concept-aware privacy for stored text embeddings.

Rooms, in the order a document goes through them:
    encoders      text → vector adapters (sentence-transformers, callables, a fake)
    concepts      concept corpora, SPARSE masks, concept subspaces, artefacts
    mechanisms    noise mechanisms (Laplace, Mahalanobis, Purkayastha, Gaussian) and the
                  learned perturbations (CAPE, TextCrafter)
    embedding     ``PrivateEmbedding``: composes the stages; ``config`` holds what it persists
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
    "ConfigMismatchError",
    "InvalidParameterError",
    "InvalidTypeError",
    "ModelNotAvailableError",
    "PrivateEmbedding",
    "PrivateVectorsError",
    "Sanitizer",
    "__version__",
]
