"""A learned, case-robust tagger of names, places, organisations and dates.

Token classification on the default encoder's own uncased layers (all-MiniLM-L6-v2): the
tagger shares the encoder's tokenizer, word embeddings and lower layers (frozen), reads whole documents in
strided windows and reports :class:`~private_vectors.text.spans.Span` objects. Its weights ship
in the package as ``config.json`` + ``model.safetensors``, sha256-checked at load.
:class:`HFTagger` reads a user's own Hugging Face token-classification model the same way.

    >>> from private_vectors.text_model import TaggerModel
    >>> tagger = TaggerModel()                       # doctest: +SKIP
    >>> tagger.spans(["i met maria garcia in lyon"])  # doctest: +SKIP
"""

from __future__ import annotations

from .hf import HFTagger
from .model import BUILTIN, TaggerModel, builtin_path, save_tagger, shared_tensors, tensors_sha256

__all__ = ["BUILTIN", "HFTagger", "TaggerModel", "builtin_path", "save_tagger", "shared_tensors", "tensors_sha256"]
