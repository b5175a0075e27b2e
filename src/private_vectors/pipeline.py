"""The stages a document goes through, in order: text stage → encoder → erasure → mechanism →
store geometry.

:func:`build_pipeline` builds every stage from resolved :class:`~private_vectors.options.EmbeddingOptions`;
:class:`Pipeline` runs them. ``PrivateEmbedding`` is a thin adapter over one pipeline::

    pipe = build_pipeline(resolve_options(EmbeddingOptions(text_concept="PII", eps=10)), Keying(None),
                          resolve_random_state(None))
    stored_text = pipe.sanitize_documents(["Maria Lopez flew to Madrid."])
    vectors = pipe.embed_sanitized(stored_text)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._validation import as_float_matrix, check_positive_finite, check_texts
from ._version import __version__
from .config import CONFIG_VERSION, DRIFT_FIELDS, KEY_ENV, canonical
from .encoders import load_encoder
from .errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError, PrivacyWarning
from .keys import Keying, keyed_context_v2
from .keystream import keyed_perturb
from .mechanisms import LaplaceMechanism, Mechanism
from .mechanisms.factory import build_mechanism
from .options import SANITIZE_POLICIES, EmbeddingOptions, check_choice
from .random import keyed_stream
from .retrieval import (
    IdentityTransform,
    augment_bound,
    build_query_transform,
    geometry_documents,
    geometry_queries,
    resolve_store_geometry,
)

__all__ = ["PROGRESS_MIN_TEXTS", "Pipeline", "build_pipeline"]

PROGRESS_MIN_TEXTS = 512
"""Batches at least this long show a progress bar over detection and encoding (on a terminal)."""
_PROGRESS_CHUNK = 128


def _load_noise_concept(concept: Any, encoder: Any) -> Any:
    """A FittedConcept from a name, folder, stored reference or object, or None."""
    if concept is None:
        return None
    if hasattr(concept, "mechanism") and hasattr(concept, "reference"):
        return concept
    if not isinstance(concept, (str, os.PathLike, dict)):
        raise InvalidTypeError("noise_concept", "None, a built-in concept name, a fitted-concept folder or a "
                               "FittedConcept", concept)
    try:
        from .fitted import load_concept
    except ImportError as exc:  # pragma: no cover - concepts not available
        raise ModelNotAvailableError(f"concept {concept!r}: private_vectors.fitted is not available ({exc})") from exc
    fitted = load_concept(concept, encoder)
    if hasattr(fitted, "check_encoder"):
        fitted.check_encoder(encoder)
    return fitted


def _build_sanitizer(options: EmbeddingOptions, noise_concept: Any, keying: Keying) -> Any:
    """The text stage for resolved ``options.sanitize`` (a policy name, a stored config, a Sanitizer), or None."""
    sanitize = options.sanitize
    if sanitize is None:
        return None
    if isinstance(sanitize, str):
        check_choice(sanitize, "sanitize", SANITIZE_POLICIES)
        if sanitize == "surrogate" and not keying.keyed:
            raise InvalidParameterError(
                "key", f"a secret (key=... or env {KEY_ENV}) for sanitize='surrogate'", None,
                note="a surrogate without a key is a public substitution; use sanitize='redact' without a key")
        from .text import Sanitizer

        concept = options.text_concept
        if concept is None:
            concept = getattr(noise_concept, "name", None) or "PII"
        return Sanitizer(list(concept) if isinstance(concept, tuple) else concept, policy=sanitize,
                         key=keying.secret)
    if isinstance(sanitize, dict):  # a stored Sanitizer config
        from .text import Sanitizer

        return Sanitizer.from_config(sanitize, key=keying.secret)
    if all(callable(getattr(sanitize, m, None)) for m in ("apply", "apply_queries", "get_config")):
        return sanitize
    raise InvalidTypeError("sanitize", f"one of {SANITIZE_POLICIES}, 'auto', None or a Sanitizer", sanitize)


def build_pipeline(options: EmbeddingOptions, keying: Keying, random: Any, *, eps_given: bool = True) -> Pipeline:
    """Every stage for resolved ``options`` (see :func:`~private_vectors.options.resolve_options`).

    Args:
        options: resolved options.
        keying: the key holder (keyed noise and the text stage's key).
        random: a resolved random source (:func:`~private_vectors.random.resolve_random_state`).
        eps_given: whether the user gave ε (a learned folder otherwise keeps its own ε/radius).
    """
    if options.query == "keyed" and not keying.keyed:
        raise InvalidParameterError("key", f"a secret (parameter or env {KEY_ENV}) for query='keyed'", None)
    encoder = load_encoder(options.model)
    dim = int(encoder.dim)
    unit = options.unit if options.unit is not None else 1.0 / math.sqrt(dim)
    if math.isclose(unit, 1.0 / math.sqrt(dim), rel_tol=1e-12):
        unit = 1.0 / math.sqrt(dim)  # the default, possibly one ulp off after a store's JSON round trip
    erasure = None
    if options.erase is not None:
        from .fitted.attribute import load_attribute

        erasure = load_attribute(options.erase, encoder)
    concept = _load_noise_concept(options.noise_concept, encoder)
    eps = float(options.eps)  # type: ignore[arg-type]
    ref, mechanism = build_mechanism(options.mechanism, eps=eps, eps_given=eps_given, unit=unit,
                                     dim=dim, concept=concept, random_state=random, model_id=encoder.model_id)
    return Pipeline(options=options, keying=keying, random=random, encoder=encoder, unit=unit, erasure=erasure,
                    concept=concept, mechanism=mechanism, mechanism_ref=ref,
                    sanitizer=_build_sanitizer(options, concept, keying))


class Pipeline:
    """Runs the stages; built by :func:`build_pipeline`.

    Attributes:
        sanitizer: the text stage or None.
        encoder: the encoder.
        erasure: the attribute erasure or None.
        concept: the fitted noise concept or None.
        mechanism: the noise mechanism (its JSON-safe reference is ``mechanism_ref``).
        keying: the key state.

    Also: ``eps``, ``unit``, ``dim``, ``out_dim``; the query side (``query``, ``query_eps``,
    ``query_transform``); ``space`` and ``store_geometry``.
    """

    def __init__(self, *, options: EmbeddingOptions, keying: Keying, random: Any, encoder: Any, unit: float,
                 erasure: Any, concept: Any, mechanism: Mechanism, mechanism_ref: Any, sanitizer: Any) -> None:
        self.keying, self.random, self.encoder, self.unit = keying, random, encoder, unit
        self.erasure, self.concept, self.mechanism, self.mechanism_ref = erasure, concept, mechanism, mechanism_ref
        self.sanitizer = sanitizer
        self.dim = int(encoder.dim)
        self.eps = float(options.eps)  # type: ignore[arg-type]
        own_eps = getattr(mechanism, "epsilon", None)
        if not isinstance(mechanism_ref, str) and isinstance(own_eps, (int, float)) and own_eps > 0:
            self.eps = float(own_eps)  # instances and learned folders: the ε actually used
        self.mechanism_out_dim = int(mechanism.output_dim(self.dim))
        self.query = options.query
        self.query_eps = self.eps if options.query_eps is None else float(options.query_eps)
        self.query_transform_kind = options.query_transform
        self._query_mechanism = self._build_query_mechanism() if self.query != "clean" else None
        subspace = concept.noise_subspace() if concept is not None and hasattr(concept, "noise_subspace") else None
        self.query_transform = build_query_transform(self.query_transform_kind, mechanism, subspace=subspace)
        self.space = options.space or ("cosine" if isinstance(self.query_transform, IdentityTransform) else "ip")
        self._set_geometry(options.store_geometry)
        self._contexts: dict[str, bytes] = {}
        self._context_lock = threading.Lock()
        self._seen_salt = secrets.token_bytes(16)
        self._seen: set[bytes] = set()
        keying.set_context(self.keyed_context("v2"))

    # -- construction -----------------------------------------------------------------------------
    def _set_geometry(self, value: Any) -> None:
        bound = None
        if isinstance(value, dict):  # from a stored config: keep its M
            bound, value = value.get("M"), value.get("kind", "none")
        kind = resolve_store_geometry(value, self.space)
        if kind == "augment" and bound is None:
            bound = augment_bound(self.mechanism, self.dim)
        self.store_geometry = kind
        self.geometry_bound = None if kind != "augment" else float(check_positive_finite(bound, "store_geometry.M"))
        self.out_dim = self.mechanism_out_dim + (1 if kind == "augment" else 0)
        self._clip_warned = False

    def _build_query_mechanism(self) -> Mechanism:
        """The query's own noise: the documents' family at ``query_eps``; spherical Laplace in the
        output space of learned encoders and instances."""
        if isinstance(self.mechanism_ref, str):
            return build_mechanism(self.mechanism_ref, eps=self.query_eps, eps_given=True, unit=self.unit,
                                   dim=self.dim, concept=self.concept, random_state=self.random,
                                   model_id=self.encoder.model_id)[1]
        return LaplaceMechanism(epsilon=self.query_eps, unit=1.0 / math.sqrt(self.mechanism_out_dim),
                                dim=self.mechanism_out_dim, random_state=self.random)

    def geometry_config(self) -> dict[str, Any]:
        """The stored geometry: ``{"kind"}`` plus the augmentation bound ``M`` when there is one."""
        cfg: dict[str, Any] = {"kind": self.store_geometry}
        if self.geometry_bound is not None:
            cfg["M"] = round(self.geometry_bound, 9)
        return cfg

    def concept_reference(self) -> Any:
        return None if self.concept is None else json.loads(canonical(self.concept.reference()))

    def erasure_reference(self) -> Any:
        return None if self.erasure is None else json.loads(canonical(self.erasure.reference()))

    def config(self) -> dict[str, Any]:
        """The stored configuration: every stage's reference and the key derivation (never the key)."""
        cfg: dict[str, Any] = {
            "config_version": CONFIG_VERSION, "library_version": __version__,
            "encoder": {"config": dict(self.encoder.get_config()), "model_id": self.encoder.model_id,
                        "dim": self.dim},
            "concept": self.concept_reference(), "erasure": self.erasure_reference(),
            "mechanism": self.mechanism_ref, "eps": self.eps, "unit": self.unit, "out_dim": self.out_dim,
            "query": self.query, "query_eps": self.query_eps, "query_transform": self.query_transform_kind,
            "space": self.space, "seeded": bool(self.random.seeded),
            "sanitizer": None if self.sanitizer is None else self.sanitizer.get_config(),
        }
        if self.store_geometry != "none":  # absent = "none": configs written before it existed
            cfg["store_geometry"] = self.geometry_config()
        cfg.update(self.keying.config())  # keyed, derivation, salt, check value: never the key
        return cfg

    def drift_view(self) -> dict[str, Any]:
        """The fields that change what stored vectors mean (:data:`~private_vectors.config.DRIFT_FIELDS`),
        read without fixing a salt (no side effect on the key derivation)."""
        view = {"encoder": (self.encoder.model_id, self.dim), "mechanism": self.mechanism_ref, "eps": self.eps,
                "unit": self.unit, "concept": self.concept_reference(), "space": self.space,
                "keyed": self.keying.keyed, "erasure": self.erasure_reference(),
                "sanitizer": None if self.sanitizer is None else self.sanitizer.get_config(),
                "store_geometry": self.geometry_config()}
        assert set(view) == set(DRIFT_FIELDS), "drift_view and DRIFT_FIELDS disagree"
        return view

    def identity(self) -> bytes:
        """:meth:`drift_view` as canonical JSON bytes: equal for pipelines whose stored vectors mean the same."""
        return canonical(self.drift_view())

    def use_key(self, secret: Any) -> None:
        """Hold ``secret`` (a :class:`~private_vectors.keys.SecretKey`), bound to the stored key
        derivation when this pipeline was reopened from a store."""
        stored = self.keying.expected
        keying = Keying(secret)
        if stored is not None:
            keying.bind(stored, "this embedding's collection")
        keying.set_context(self.keyed_context("v2"))
        self.keying = keying

    def keyed_context(self, version: str | None = None) -> bytes:
        """Encoder identity ‖ mechanism config: the public context of keyed noise (no text, no key).

        v1: exact-float JSON (collections written with the first key derivation). v2: every number
        canonicalised through float32 (:func:`private_vectors.keys.keyed_context_v2`).
        """
        version = version or self.keying.version
        with self._context_lock:
            if version not in self._contexts:
                enc = {"model_id": self.encoder.model_id, "dim": self.dim,
                       "normalize": bool(getattr(self.encoder, "normalize", True))}
                concept = self.concept_reference()
                if self.erasure is not None:
                    concept = {"name": f"erasure:{self.erasure.name}", "sha256": self.erasure.content_sha256()}
                if version == "v1":
                    mech = {"mechanism": self.mechanism_ref, "eps": self.eps, "unit": self.unit, "concept": concept}
                    self._contexts[version] = canonical(enc) + b"\x00" + canonical(mech)
                else:
                    self._contexts[version] = keyed_context_v2(encoder=enc, mechanism=self.mechanism_ref,
                                                               eps=self.eps, unit=self.unit, concept=concept)
            return self._contexts[version]

    # -- text stage -------------------------------------------------------------------------------
    def sanitize_documents(self, texts: Sequence[str]) -> list[str]:
        """Documents after the text stage (unchanged copies without one)."""
        items = check_texts(texts, "texts")
        if self.sanitizer is None or not items:
            return list(items)
        return _checked_output(self.sanitizer.apply(items), items, "sanitizer.apply")

    def sanitize_queries(self, texts: Sequence[str]) -> list[str]:
        """Queries after the text stage (``Sanitizer.apply_queries``, same key as documents)."""
        items = check_texts(texts, "queries")
        if self.sanitizer is None or not items:
            return list(items)
        return _checked_output(self.sanitizer.apply_queries(items), items, "sanitizer.apply_queries")

    def texts_to_store(self, texts: Sequence[str], sanitized: Sequence[str], *,
                       store_raw_text: bool = False) -> list[str] | None:
        """What a store may keep beside the vectors: the raw ``texts`` only with
        ``store_raw_text=True``; else the ``sanitized`` texts when a text stage ran; else None."""
        if not isinstance(store_raw_text, bool):
            raise InvalidTypeError("store_raw_text", "True or False", store_raw_text)
        if store_raw_text:
            return list(texts)
        return list(sanitized) if self.sanitizer is not None else None

    def query_index_state(self) -> dict[str, Any] | None:
        """The text stage's keyed query index (HMACs, never tokens) for a store to persist, or None."""
        get_state = getattr(self.sanitizer, "get_state", None)
        state = None if get_state is None else get_state()
        return state if isinstance(state, dict) and state.get("keyed") else None

    def load_query_index_state(self, state: Any) -> bool:
        """Restore a persisted :meth:`query_index_state`; False when there is nothing to restore."""
        load_state = getattr(self.sanitizer, "load_state", None)
        if load_state is None or not state:
            return False
        load_state(state)
        return True

    # -- vectors ----------------------------------------------------------------------------------
    def encode(self, texts: Any, name: str) -> tuple[list[str], np.ndarray]:
        """Encoder → erasure, with the encoder's output checked (rows, finiteness, non-zero)."""
        items = check_texts(texts, name)
        if not items:
            return items, np.zeros((0, self.dim), dtype=np.float64)
        mat, _ = as_float_matrix(np.asarray(self.encoder.encode(items)), f"model({name})", dim=self.dim)
        if mat.shape[0] != len(items):
            raise InvalidParameterError(f"model({name})", f"{len(items)} rows", mat)
        zero = np.flatnonzero(~np.any(mat != 0, axis=1))
        if zero.size:  # a zero vector carries nothing of its text: refuse rather than store noise alone
            raise InvalidParameterError(f"model({name})", "non-zero vectors", mat,
                                        note=f"rows {zero[:5].tolist()} are all zeros")
        if self.erasure is not None:
            mat = np.asarray(self.erasure.erase(mat), dtype=np.float64)
        return items, mat

    def embed_sanitized(self, texts: Sequence[str], raw: Sequence[str] | None = None) -> np.ndarray:
        """Perturbed, stored-geometry vectors (float32) of texts that already went through the
        text stage. ``raw``: the texts before it, to tell a re-ingested text from two texts that
        sanitize alike (the repeat warning of fresh noise)."""
        self.keying.check_for_documents()
        items, X = self.encode(texts, "texts")
        if not items:
            return np.zeros((0, self.out_dim), dtype=np.float32)
        if self.keying.keyed:
            out = self.keyed_noise(self.mechanism, X, items, b"doc")
        else:
            self._warn_on_repeats(list(raw) if raw is not None else items)
            out = self.mechanism.perturb(X, rng=self.random.source())
        out = np.asarray(out, dtype=np.float64)
        if not np.all(np.isfinite(out)):
            raise InvalidParameterError("eps", "a value whose noise is finite", self.eps)
        stored, clipped = geometry_documents(out, self.store_geometry, self.geometry_bound)
        if clipped and not self._clip_warned:
            self._clip_warned = True
            warnings.warn(f"{clipped} document vector(s) longer than the augmentation bound M={self.geometry_bound:.3g}:"
                          " their rank in l2/cosine stores is approximate (exact in ip stores)", UserWarning,
                          stacklevel=2)
        return np.asarray(stored, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """(sanitized texts, stored vectors). A batch of :data:`PROGRESS_MIN_TEXTS` or more shows a
        progress bar over detection (the whole batch first: the second pass needs all of it) and
        then encoding, in chunks."""
        items = check_texts(texts, "texts")
        if len(items) < PROGRESS_MIN_TEXTS:
            sanitized = self.sanitize_documents(items)
            return sanitized, self.embed_sanitized(sanitized, raw=items)
        from tqdm.auto import tqdm

        n = len(items)
        with tqdm(total=2 * n, desc="private_vectors: detect + encode", unit="doc", leave=False) as bar:
            sanitized = self._sanitize_with_progress(items, lambda done: bar.update(round(done * n) - bar.n))
            bar.update(n - bar.n)
            parts = []
            for start in range(0, n, _PROGRESS_CHUNK):
                parts.append(self.embed_sanitized(sanitized[start:start + _PROGRESS_CHUNK],
                                                  raw=items[start:start + _PROGRESS_CHUNK]))
                bar.update(len(parts[-1]))
        return sanitized, np.vstack(parts)

    def _sanitize_with_progress(self, items: list[str], report: Any) -> list[str]:
        if self.sanitizer is None:
            return list(items)
        from .text.sanitizer import detection_progress

        with detection_progress(report):
            return self.sanitize_documents(items)

    def keyed_noise(self, mechanism: Mechanism, X: np.ndarray, items: list[str], label: bytes) -> np.ndarray:
        """Noise determined by (key, context, text): v2 one batched call, v1 one stream per vector."""
        sched = self.keying.schedule()
        self.keying.used = True
        ctx = self.keyed_context(sched.version)
        if sched.version == "v2":
            return keyed_perturb(mechanism, X, sched.noise, ctx, items, label)
        return np.vstack([np.atleast_2d(mechanism.perturb(X[i], rng=keyed_stream(sched.noise, label, ctx,
                                                                                 t.encode("utf-8"))))
                          for i, t in enumerate(items)])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (float32): text stage → encode → ``transform_query`` → the query policy's
        noise → the noise-aware query transform → store geometry."""
        items, X = self.encode(self.sanitize_queries(texts), "queries")
        if not items:
            return np.zeros((0, self.out_dim), dtype=np.float32)
        Q = np.atleast_2d(np.asarray(self.mechanism.transform_query(X), dtype=np.float64))
        qm = self._query_mechanism
        if self.query == "noised" and qm is not None:
            Q = np.atleast_2d(qm.perturb(Q, rng=self.random.source())).astype(np.float64)
        elif self.query == "keyed" and qm is not None:
            Q = np.asarray(self.keyed_noise(qm, Q, items, b"query"), dtype=np.float64)
        Q = np.asarray(self.query_transform.apply(Q), dtype=np.float64)
        return np.asarray(geometry_queries(Q, self.store_geometry), dtype=np.float32)

    def _warn_on_repeats(self, items: list[str]) -> None:
        """Fresh noise: warn when a raw text is embedded again (each copy weakens its protection)."""
        if self.random.seeded or self.mechanism.name == "none":
            return
        digests = [hashlib.blake2b(t.encode("utf-8"), key=self._seen_salt, digest_size=16).digest() for t in items]
        repeated = len(set(digests)) < len(digests) or any(d in self._seen for d in digests)
        if len(self._seen) < 100_000:
            self._seen.update(digests)
        if repeated:
            warnings.warn("a text was embedded again without a key: each call draws fresh noise, so every stored "
                          "copy weakens its protection (the average of k copies has about 1/sqrt(k) of the noise). "
                          f"Set a key (key=... or {KEY_ENV}) to make re-ingestion reproduce the vector.",
                          PrivacyWarning, stacklevel=4)


def _checked_output(out: Any, items: list[str], stage: str) -> list[str]:
    """The text stage's output, refused unless it is one str per input."""
    if not isinstance(out, list) or len(out) != len(items) or not all(isinstance(t, str) for t in out):
        raise InvalidParameterError(stage, f"a list of {len(items)} strings", out,
                                    note="the text stage failed; nothing was embedded")
    return out
