"""private_vectors: concept-aware privacy for stored text embeddings.

Rooms, in the order a document goes through them (docs/architecture.md draws the layers):
    text          the text stage: ``Sanitizer``, detectors, the presets a ``concept=`` names
    encoders      text → vector adapters (sentence-transformers, callables, a fake)
    fitted        what is fitted in an encoder's space: noise concepts (``noise_concept=``) and
                  attribute concepts (``erase=``), with the paired data they are fitted from
    mechanisms    noise mechanisms (Laplace, Mahalanobis, Purkayastha, Gaussian) and the
                  learned perturbations (CAPE, TextCrafter)
    options       ``EmbeddingOptions`` (validated once) and ``resolve_options`` (every default, once)
    pipeline      ``Pipeline``: text stage → encoder → erasure → mechanism → store geometry
    embedding     ``PrivateEmbedding``: the thin Chroma/LangChain adapter over a pipeline;
                  ``config`` holds what it persists, ``report`` what it reports, ``guard``
                  the raw-text warning
    integrations  Chroma, LangChain, FAISS and LlamaIndex adapters
    cli           the ``private-vectors`` command

Beside the library, never imported by it:
    eval          the evaluation harness: attacks, benchmark runner, data loaders, metrics, audit
"""

from ._lazy import lazy_attributes
from ._version import __version__
from .errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidParameterError,
    InvalidTypeError,
    ModelNotAvailableError,
    PrivateVectorsError,
)

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
    "audit",
]

# Imported on first use, so ``import private_vectors`` and the command line stay quick;
# ``Chroma`` (the drop-in LangChain store) imports langchain-chroma.
__getattr__, __dir__ = lazy_attributes(__name__, {
    "PrivateEmbedding": ".embedding",
    "Sanitizer": ".text",
    "Chroma": ".langchain",
    "audit": ".eval.audit",
})

