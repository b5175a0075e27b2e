"""private_vectors: concept-aware privacy for stored text embeddings.

Rooms:
    mechanisms    noise mechanisms (Laplace, Mahalanobis, Purkayastha, Gaussian)
    encoders      text → vector adapters (sentence-transformers, callables, a fake)
    concepts      concept corpora, SPARSE masks, concept subspaces, artefacts
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
from .text import Sanitizer

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
