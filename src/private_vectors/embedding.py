"""``PrivateEmbedding``: the embedding function a store is given; a thin adapter over a
:class:`~private_vectors.pipeline.Pipeline` built from the validated ``EmbeddingOptions``. It speaks
Chroma's ``EmbeddingFunction`` protocol (registered as ``"private_vectors"``) and LangChain's
``Embeddings``; the stages live in the pipeline, the defaults in
:func:`~private_vectors.options.resolve_options`, the key in :mod:`private_vectors.keys`.

ε is per ``unit`` of distance, 1/√n on unit-norm n-dimensional vectors by default ("ε per RMS
coordinate"): at n = 384 the Laplace noise norm n·unit/ε is ≈ 1.96 at ε = 10, ≈ 0.49 at ε = 40.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._build_cache import remember_live
from ._protocols import LANGCHAIN_BASES
from ._rebuild import built_for
from ._validation import check_texts, text_list
from .config import (
    CHROMA_NAME,
    KEY_ENV,
    check_config_compatible,
    rebuild_arguments,
    validate_config,
)
from .errors import InvalidParameterError, InvalidTypeError, PrivacyWarning
from .guard import RAW_TEXT_MESSAGE, on_protected_path, store_on_stack
from .keying import Keying
from .keys import MIN_KEY_BYTES, SecretKey
from .options import DEFAULT_EPS, EmbeddingOptions, concept_parts
from .pipeline import Pipeline, build_pipeline
from .random import resolve_random_state
from .retrieval import SPACES

__all__ = ["CHROMA_NAME", "KEY_ENV", "PrivateEmbedding", "rebuild"]


def rebuild(config: dict[str, Any], where: str, *, use_cache: bool = True, seal: Any = None) -> PrivateEmbedding:
    """A new PrivateEmbedding from a stored config (:func:`private_vectors._rebuild.built_for`): a
    fresh adapter, with its own key holder bound to ``config``, over an equal build's loaded stages."""
    built, shared = built_for(PrivateEmbedding, config, where, use_cache=use_cache, seal=seal)
    if not shared:
        return built
    clone = object.__new__(PrivateEmbedding)  # (copy.copy would pickle through __reduce__)
    clone.__dict__.update(built.__dict__)
    clone.pipeline = built.pipeline.copy_for(config, where)
    clone.store_space, clone._raw_text_warned = None, False
    return clone


def _as_written(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _from_pipeline(name: str) -> Any:
    return property(lambda self: getattr(self.pipeline, name), doc=f"The pipeline's ``{name}`` (read-only).")


class PrivateEmbedding(*(LANGCHAIN_BASES or (object,))):  # type: ignore[misc]
    """Embed texts and perturb document vectors before storage.

    Every default is resolved by :func:`private_vectors.options.resolve_options` (one table).

    Args:
        concept: the text concept: ``"PII"`` (default preset), another built-in span concept or
            a list of them (``["PII", "medical"]``: one pass, the union of their detectors). An
            attribute or fitted concept here is deprecated: use ``erase=`` / ``noise_concept=``.
        eps: ε per ``unit`` of distance, > 0 (default 10, with a ``PrivacyWarning``).
        model: None (packaged all-MiniLM-L6-v2), a sentence-transformers name or path,
            ``"fake"``/``"fake:<dim>"``, an encoder object or a callable.
        mechanism: ``"laplace"`` (default), ``"mahalanobis"``, ``"purkayastha"``, ``"gaussian"``,
            ``"none"``, a :class:`~private_vectors.mechanisms.Mechanism`, or a CAPE/TextCrafter folder.
        query: ``"clean"`` (default; queries are not stored), ``"noised"`` or ``"keyed"``.
        query_eps: ε of the query's own noise (default ``eps``).
        query_transform: ``"auto"``, ``"none"``, ``"project"`` or ``"wiener"``.
        key: secret of at least 16 bytes (default env ``PRIVATE_VECTORS_KEY``) for keyed noise and
            keyed text; :func:`private_vectors.keys.generate` makes one. Never stored or shown.
        random_state: None (OS entropy) or a seed (tests only; never persisted).
        unit: distance unit of ε (default 1/√n; radians for Purkayastha).
        space: ``"ip"``, ``"cosine"`` or ``"l2"``.
        store_geometry: ``"auto"``, ``"normalize"``, ``"augment"`` or ``"none"``.
        sanitize: ``"redact"`` (typed placeholders), ``"surrogate"`` (keyed same-slot values;
            needs a key), None (raw text reaches the encoder), a ``Sanitizer``, or ``"auto"``.
        key_salt: the public scrypt salt of keyed noise (default random per collection).
        text_concept: the spans the text stage replaces (as ``concept``).
        erase: an attribute erased from documents and queries (``"sex"``, ``{"attribute": "sex",
            "method": "leace"}``, a folder or an ``AttributeConcept``: :mod:`private_vectors.fitted.erase`).
        noise_concept: a fitted concept that shapes Mahalanobis noise.
        seal: None (sealed when keyed; a reopened store's own), True, False or a :class:`~private_vectors.sealed.Sealing`.
        detector: the text stage's detection: ``"model"`` (default for a concept with names or places:
            the recognizers plus the learned, case-blind tagger) or ``"rules"`` (the recognizers alone).
        device: where the tagger runs (``"cpu"``, ``"cuda"``; not recorded).
    """

    eps, unit, space, store_geometry, geometry_bound, query, query_eps, query_transform, query_transform_kind = (
        _from_pipeline(n) for n in ("eps", "unit", "space", "store_geometry", "geometry_bound", "query", "query_eps",
                                    "query_transform", "query_transform_kind"))
    sanitizer, encoder, erasure, noise_concept, mechanism, dim, mechanism_out_dim, out_dim = (
        _from_pipeline(n) for n in ("sanitizer", "encoder", "erasure", "noise_concept", "mechanism", "dim",
                                    "mechanism_out_dim", "out_dim"))

    def __init__(self, *, concept: Any = None, eps: float | None = None, model: Any = None, mechanism: Any = None,
                 query: str = "clean", query_eps: float | None = None, query_transform: str = "auto",
                 key: Any = None, random_state: Any = None, unit: float | None = None, space: str | None = None,
                 store_geometry: Any = "auto", sanitize: Any = "auto", key_salt: bytes | None = None,
                 text_concept: Any = None, erase: Any = None, noise_concept: Any = None, seal: Any = None,
                 detector: str | None = None, device: str = "cpu") -> None:
        try:  # the raw key never stays in a local a traceback could show
            secret = SecretKey.resolve(key, min_bytes=1 if isinstance(key, SecretKey) else MIN_KEY_BYTES)
        finally:
            del key
        parts = concept_parts(concept, mechanism=mechanism, text_concept=text_concept, erase=erase,
                              noise_concept=noise_concept)
        self.options = EmbeddingOptions(**parts, eps=eps, model=model, mechanism=mechanism, query=query,
                                        query_eps=query_eps, query_transform=query_transform, unit=unit,
                                        space=space, store_geometry=store_geometry, sanitize=sanitize, seal=seal,
                                        detector=detector, device=device)
        if eps is None:
            warnings.warn(f"eps not given: using the default eps={DEFAULT_EPS:g} (per unit 1/sqrt(n)). Pass eps "
                          "explicitly: the protection of the stored vectors depends on it.", PrivacyWarning, stacklevel=2)
        keying = Keying(secret)
        if key_salt is not None:
            keying.fix_salt(key_salt)
        self.key_source = "none" if secret is None else secret.source
        self.pipeline: Pipeline = build_pipeline(self.options, keying, resolve_random_state(random_state))
        self.store_space: str | None = None  # set by the drop-in Chroma: the collection's own space
        self._raw_text_warned = False
        if not keying.keyed:  # (a keyed config is final once its salt is: see keying.Keying)
            remember_live(self.get_config(), self)

    concept = property(lambda self: _as_written(self.options.text_concept),
                       doc="The text concept as written (``concept=`` / ``text_concept=``; a list stays a list).")
    eps_given = property(lambda self: self.options.eps_given, doc="Whether ε was given (else the default).")

    # -- identity / config ------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """Everything needed to rebuild this function (never the key, never a seed)."""
        cfg = self.pipeline.config()
        if self.pipeline.keying.keyed:  # final once the salt is: a rebuild of it in this process reuses the stages
            remember_live(cfg, self)
        return cfg

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivateEmbedding):
            return NotImplemented
        return self.pipeline.identity() == other.pipeline.identity()

    def __hash__(self) -> int:
        return hash(self.pipeline.identity())

    def __repr__(self) -> str:
        pipe = self.__dict__.get("pipeline")
        if pipe is None:  # a half-built object (a traceback with locals shows it)
            return "PrivateEmbedding(<not constructed>)"
        text, noise = None if pipe.sanitizer is None else pipe.sanitizer.get_config(), pipe.concept_reference()
        written = self.concept if self.concept is not None else (text or {}).get("concept")
        parts = [f"concept={written.get('name') if isinstance(written, dict) else written!r}",
                 *([f"noise_concept={noise.get('name', 'fitted')!r}"] if noise is not None else []),
                 *([f"erase={pipe.erasure.name!r} ({pipe.erasure.method})"] if pipe.erasure is not None else []),
                 f"eps={pipe.eps:g}", f"model={pipe.encoder.model_id!r}", f"mechanism={pipe.mechanism.name!r}",
                 f"query={pipe.query!r}", f"query_transform={pipe.query_transform_kind!r}", f"space={pipe.space!r}",
                 f"sanitize={None if text is None else text.get('policy', 'custom')!r}",
                 "keyed" if pipe.keying.keyed else "fresh noise"]
        return f"PrivateEmbedding({', '.join(parts)})"

    def __reduce__(self) -> Any:
        """Pickle as the config (never the key, never a seed): the key is re-read from
        ``PRIVATE_VECTORS_KEY`` on load, or given with :meth:`set_key`."""
        cfg = self.get_config()
        try:
            rebuild_arguments(cfg)
        except Exception as exc:
            raise TypeError(f"this PrivateEmbedding cannot be pickled: {exc}") from None
        return (_unpickle, (cfg,))

    def set_key(self, key: Any) -> None:
        """Give the key to a function rebuilt without it; checked against the stored check value."""
        stored = self.pipeline.keying.expected
        legacy = bool(stored and stored.get("key_derivation") == "v1")
        try:
            secret = SecretKey.resolve(key, min_bytes=1 if legacy or isinstance(key, SecretKey) else MIN_KEY_BYTES)
        finally:
            del key
        if secret is None:
            raise InvalidParameterError("key", "a secret (str or bytes)", None)
        self.pipeline.use_key(secret)
        self.key_source = secret.source

    # -- Chroma's EmbeddingFunction protocol ------------------------------------------------------
    @staticmethod
    def name() -> str:
        return CHROMA_NAME

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> PrivateEmbedding:
        """Rebuild from :meth:`get_config` (the key comes from ``PRIVATE_VECTORS_KEY``)."""
        return rebuild(config, "this collection")

    validate_config = staticmethod(validate_config)

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        """Refuse a change of anything that alters what stored vectors mean."""
        check_config_compatible(old_config, new_config)

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return self.pipeline.space

    def supported_spaces(self) -> list[str]:
        return [self.pipeline.space, *[s for s in SPACES if s != self.pipeline.space]]

    def __call__(self, input: Sequence[str]) -> list[np.ndarray]:
        items = text_list(input, "input")
        if not items:  # Chroma refuses an empty result with a bare ValueError; say why instead
            raise InvalidParameterError("input", "at least one document", input)
        self._warn_if_raw_text_is_stored()  # Chroma's collection.add keeps the raw documents
        return list(self.embed_array(items))

    def embed_query(self, input: Any = None, *, text: Any = None) -> Any:
        """Embed a query: a ``str`` (LangChain: ``list[float]``) or a list of texts (Chroma: arrays)."""
        value = input if input is not None else text
        if isinstance(value, str):
            return self.embed_query_array([value])[0].tolist()
        if not isinstance(value, (list, tuple)):
            raise InvalidTypeError("text", "one query str (or, as Chroma passes them, a list of query strings)",
                                   value)
        return list(self.embed_query_array(text_list(value, "input")))

    # -- LangChain's Embeddings protocol ----------------------------------------------------------
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._warn_if_raw_text_is_stored()  # LangChain's stores keep the raw page_content
        return self.embed_array(text_list(texts, "texts")).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self._warn_if_raw_text_is_stored()  # (here: the awaiting store is on this thread's stack)
        items = text_list(texts, "texts")
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self.embed_array(items).tolist())

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.get_running_loop().run_in_executor(None, self.embed_query, text)

    # -- the library's verbs ----------------------------------------------------------------------
    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Perturbed document vectors, float32 (m, out_dim): text stage → encoder → mechanism."""
        return self.pipeline.embed_documents(texts)[1]

    def embed_query_array(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, float32 (m, out_dim); the text stage runs first."""
        return self.pipeline.embed_queries(texts)

    def sanitize_documents(self, texts: Sequence[str]) -> list[str]:
        """The documents after the text stage (unchanged copies without one)."""
        return self.pipeline.sanitize_documents(texts)

    def prepare_documents(self, texts: Sequence[str], *,
                          store_raw_text: bool = False) -> tuple[list[str] | None, np.ndarray]:
        """One pass for a store: (texts to store or None, perturbed vectors). Each text is
        sanitized once; the sanitized text is what is embedded and what may be stored (the raw
        text only with ``store_raw_text=True``; no text without a text stage)."""
        items = check_texts(texts, "texts")
        sanitized, vectors = self.pipeline.embed_documents(items)
        return self.pipeline.texts_to_store(items, sanitized, store_raw_text=store_raw_text), vectors

    def privacy_report(self, texts: Sequence[str] | None = None) -> dict[str, Any]:
        """What the stored vectors are protected by, in numbers (:func:`private_vectors.report.privacy_report`)."""
        from .report import privacy_report

        return privacy_report(self, texts)

    def privacy_report_text(self, texts: Sequence[str] | None = None) -> str:
        """A short plain-language summary (:func:`private_vectors.report.privacy_report_text`)."""
        from .report import privacy_report_text

        return privacy_report_text(self, texts)

    def _warn_if_raw_text_is_stored(self) -> None:
        """Warn once when a store's own code (a plain Chroma collection, a LangChain or LlamaIndex
        store) embeds documents it will keep as written: never on the library's protected paths
        and never for a direct call, where no store is involved."""
        if self.pipeline.sanitizer is None or self._raw_text_warned or on_protected_path():
            return
        if not store_on_stack(sys._getframe(2)):
            return
        self._raw_text_warned = True
        warnings.warn(RAW_TEXT_MESSAGE, PrivacyWarning, stacklevel=3)


def _unpickle(config: dict[str, Any]) -> PrivateEmbedding:
    return rebuild(config, "the pickled PrivateEmbedding's collection", use_cache=False)

