"""The stages a document goes through, in order: text stage → encoder → erasure → mechanism →
store geometry.

:func:`build_pipeline` loads the encoder (its dimension is known first), resolves the options once
(:func:`~private_vectors.options.resolve_options`) and builds every stage from the resolved values;
:class:`Pipeline` runs the stages and reads the resolved options, never deriving or overwriting
them. ``PrivateEmbedding`` is a thin adapter over one pipeline::

    pipe = build_pipeline(EmbeddingOptions(text_concept="PII", eps=10), Keying(None), resolve_random_state(None))
    stored_text = pipe.sanitize_documents(["Maria Lopez flew to Madrid."])
    vectors = pipe.embed_sanitized(stored_text)
"""

from __future__ import annotations

import copy
import hashlib
import json
import secrets
import threading
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ._progress import advance, counts_documents
from ._stages import Stages, build_sanitizer, noise_concept, query_mechanism
from ._validation import as_float_matrix, check_stage_output, check_texts
from ._version import __version__
from .config import CONFIG_VERSION, DRIFT_FIELDS, KEY_ENV, canonical
from .encoders import load_encoder
from .errors import ConfigMismatchError, InvalidParameterError, InvalidTypeError, PrivacyWarning
from .keying import Keying, keyed_context_v2
from .keystream import keyed_perturb
from .mechanisms import Mechanism
from .mechanisms.factory import build_mechanism, carries_own_parameters
from .options import SPHERICAL, EmbeddingOptions, resolve_options
from .random import keyed_stream
from .retrieval import (
    augment_bound,
    build_query_transform,
    geometry_documents,
    geometry_queries,
)
from .sealed.datakey import SealBinding

__all__ = ["ENCODE_CHUNK", "Pipeline", "Stages", "build_pipeline"]

ENCODE_CHUNK = 64
"""Documents encoded per encoder call: the step of an add's progress bar (:mod:`._progress`)."""


def build_pipeline(options: EmbeddingOptions, keying: Keying, random: Any) -> Pipeline:
    """Every stage for ``options`` as the user wrote them.

    The encoder is loaded first (its dimension fixes ``unit``); a mechanism that carries its own
    parameters (an instance, a CAPE/TextCrafter folder or name) is built next, because its ε and
    noise shape decide defaults; then :func:`~private_vectors.options.resolve_options` resolves
    every default once, and the remaining stages are built from the resolved values.

    Args:
        options: the validated arguments, as written.
        keying: the key holder (keyed noise and the text stage's key).
        random: a resolved random source (:func:`~private_vectors.random.resolve_random_state`).
    """
    if options.query == "keyed" and not keying.keyed:
        raise InvalidParameterError("key", f"a secret (parameter or env {KEY_ENV}) for query='keyed'", None)
    encoder = load_encoder(options.model)
    dim = int(encoder.dim)
    ref: Any = None
    mechanism: Any = None
    if carries_own_parameters(options.mechanism):  # ε only when given: a learned folder keeps its own
        ref, mechanism = build_mechanism(options.mechanism, eps=options.eps, eps_given=options.eps_given,
                                         unit=None, dim=dim, concept=None, random_state=random,
                                         model_id=encoder.model_id)
    resolved = resolve_options(options, dim=dim, mechanism=mechanism, keyed=keying.keyed)
    erasure = None
    if resolved.erase is not None:
        from .fitted.attribute import load_attribute

        erasure = load_attribute(resolved.erase, encoder)
    concept, recorded = noise_concept(resolved, encoder)
    if mechanism is None:
        ref, mechanism = build_mechanism(resolved.mechanism, eps=resolved.eps, eps_given=True, unit=resolved.unit,
                                         dim=dim, concept=concept, random_state=random, model_id=encoder.model_id)
    subspace = concept.noise_subspace() if concept is not None and hasattr(concept, "noise_subspace") else None
    bound = None
    if resolved.store_geometry == "augment":
        bound = resolved.geometry_bound or augment_bound(mechanism, dim)
    stages = Stages(
        sanitizer=build_sanitizer(resolved, keying), encoder=encoder, erasure=erasure, noise_concept=concept,
        mechanism=mechanism, mechanism_ref=ref,
        query_mechanism=query_mechanism(resolved, ref, mechanism, concept, dim, random, encoder.model_id),
        query_transform=build_query_transform(resolved.query_transform, mechanism, subspace=subspace),
        geometry_bound=bound, recorded_concept=recorded)
    return Pipeline(options=resolved, stages=stages, keying=keying, random=random,
                    seal=SealBinding(resolved.seal or None, options.seal))


def _option(name: str, doc: str) -> Any:
    return property(lambda self: getattr(self.options, name), doc=doc)


def _stage(name: str, doc: str) -> Any:
    return property(lambda self: getattr(self.stages, name), doc=doc)


class Pipeline:
    """Runs the stages (:class:`Stages`) with the resolved options; built by :func:`build_pipeline`.

    The resolved options (``eps``, ``unit``, ``space``, ``store_geometry``, ``query``,
    ``query_eps``, ``query_transform_kind``) and the stages (``sanitizer``, ``encoder``,
    ``erasure``, ``noise_concept``, ``mechanism``, ``query_transform``, ``geometry_bound``) are
    read-only properties; ``keying`` is the key state, ``seal`` the sealing state
    (:class:`~private_vectors.sealed.datakey.SealBinding`).
    """

    eps = _option("eps", "ε per ``unit`` of distance of the documents' noise.")
    unit = _option("unit", "The distance unit of ε (1/√n by default).")
    space = _option("space", "The similarity space the store ranks in.")
    store_geometry = _option("store_geometry", "How stored vectors are shaped: normalize, augment or none.")
    query = _option("query", "The query policy: clean, noised or keyed.")
    query_eps = _option("query_eps", "ε of the queries' own noise.")
    query_transform_kind = _option("query_transform", "The query transform asked for (auto, none, ...).")
    sanitizer = _stage("sanitizer", "The text stage, or None.")
    encoder = _stage("encoder", "The encoder.")
    erasure = _stage("erasure", "The attribute erasure, or None.")
    noise_concept = _stage("noise_concept", "The noise concept the mechanism uses, or None.")
    mechanism = _stage("mechanism", "The documents' noise mechanism.")
    mechanism_ref = _stage("mechanism_ref", "The mechanism's JSON-safe reference (in the config).")
    query_transform = _stage("query_transform", "The noise-aware query transform.")
    geometry_bound = _stage("geometry_bound", "The augmentation bound M, or None.")

    def __init__(self, *, options: EmbeddingOptions, stages: Stages, keying: Keying, random: Any,
                 seal: SealBinding | None = None) -> None:
        self.options, self.stages, self.keying, self.random = options, stages, keying, random
        self.seal = seal if seal is not None else SealBinding(None, False)
        self._contexts: dict[str, bytes] = {}
        self._context_lock = threading.Lock()
        self._seen_salt = secrets.token_bytes(16)
        self._seen: set[bytes] = set()
        self._clip_warned = False
        keying.set_context(self.keyed_context("v2"))

    @property
    def dim(self) -> int:
        """The encoder's dimension."""
        return int(self.stages.encoder.dim)

    @property
    def mechanism_out_dim(self) -> int:
        """The mechanism's output dimension."""
        return int(self.stages.mechanism.output_dim(self.dim))

    @property
    def out_dim(self) -> int:
        """The stored vectors' dimension (one more with ``store_geometry="augment"``)."""
        return self.mechanism_out_dim + (1 if self.store_geometry == "augment" else 0)

    # -- configuration ----------------------------------------------------------------------------
    def geometry_config(self) -> dict[str, Any]:
        """The stored geometry: ``{"kind"}`` plus the augmentation bound ``M`` when there is one."""
        cfg: dict[str, Any] = {"kind": self.store_geometry}
        if self.geometry_bound is not None:
            cfg["M"] = round(self.geometry_bound, 9)
        return cfg

    def concept_reference(self) -> Any:
        """The noise concept's reference as the configuration records it (None without one)."""
        if self.noise_concept is not None:
            return json.loads(canonical(self.noise_concept.reference()))
        return self.stages.recorded_concept

    def erasure_reference(self) -> Any:
        return None if self.erasure is None else json.loads(canonical(self.erasure.reference()))

    def config(self) -> dict[str, Any]:
        """The stored configuration: every stage's reference, the key derivation and the sealing
        (a wrapped data key; never a key)."""
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
        cfg["seal"] = self.seal.config(self.keying)  # False, or the settings and the wrapped data key
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

    def bind(self, stored: dict[str, Any], where: str) -> None:
        """Bind to the store whose configuration is ``stored``: check the key and adopt its key
        derivation (:meth:`~private_vectors.keying.Keying.bind`). A store written before 0.2
        records a noise concept beside spherical noise: it is adopted as a recorded reference,
        so re-ingested documents get the noise they got then (:attr:`Stages.recorded_concept`).

        Raises:
            ConfigMismatchError: another key, or documents already embedded under another context.
        """
        recorded = stored.get("concept") if isinstance(stored, dict) else None
        if (isinstance(recorded, dict) and self.concept_reference() is None and self.mechanism_ref in SPHERICAL
                and stored.get("mechanism") == self.mechanism_ref):
            if self.keying.used:
                raise ConfigMismatchError(f"{where}: this PrivateEmbedding already embedded documents for another "
                                          "collection; use one PrivateEmbedding per collection")
            self.stages = replace(self.stages, recorded_concept=recorded)
            self._contexts = {}  # (a copy of this pipeline keeps its own)
            self.keying.set_context(self.keyed_context("v2"))
        self.keying.bind(stored, where)
        self.seal.bind(stored, where)  # adopts the store's sealing and data key (or refuses another choice)

    def copy_for(self, stored: dict[str, Any], where: str) -> Pipeline:
        """A pipeline over the same stages with its own key holder, bound to the store ``stored``
        (a rebuild of an equal configuration reuses the loaded stages)."""
        clone = copy.copy(self)
        clone.keying, clone.seal = Keying(self.keying.secret), self.seal.fresh()
        clone._contexts, clone._clip_warned = dict(self._contexts), False
        clone.keying.set_context(clone.keyed_context("v2"))
        clone.bind(stored, where)
        return clone

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
        canonicalised through float32 (:func:`private_vectors.keying.keyed_context_v2`).
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
        return check_stage_output(self.sanitizer.apply(items), items, "sanitizer.apply")

    def sanitize_queries(self, texts: Sequence[str]) -> list[str]:
        """Queries after the text stage (``Sanitizer.apply_queries``, same key as documents)."""
        items = check_texts(texts, "queries")
        if self.sanitizer is None or not items:
            return list(items)
        return check_stage_output(self.sanitizer.apply_queries(items), items, "sanitizer.apply_queries")

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
    def encode(self, texts: Any, name: str, *, count: bool = False) -> tuple[list[str], np.ndarray]:
        """Encoder → erasure, with the encoder's output checked (rows, finiteness, non-zero).
        ``count``: documents of an add, encoded :data:`ENCODE_CHUNK` at a time and counted on its
        progress bar."""
        items = check_texts(texts, name)
        if not items:
            return items, np.zeros((0, self.dim), dtype=np.float64)
        mat, _ = as_float_matrix(self._encoder_rows(items, count), f"model({name})", dim=self.dim)
        if mat.shape[0] != len(items):
            raise InvalidParameterError(f"model({name})", f"{len(items)} rows", mat)
        zero = np.flatnonzero(~np.any(mat != 0, axis=1))
        if zero.size:  # a zero vector carries nothing of its text: refuse rather than store noise alone
            raise InvalidParameterError(f"model({name})", "non-zero vectors", mat,
                                        note=f"rows {zero[:5].tolist()} are all zeros")
        if self.erasure is not None:
            mat = np.asarray(self.erasure.erase(mat), dtype=np.float64)
        return items, mat

    def _encoder_rows(self, items: list[str], count: bool) -> np.ndarray:
        """The encoder's rows for ``items``, in chunks counted on the add's bar when ``count``."""
        if not count or len(items) <= ENCODE_CHUNK:
            rows = np.asarray(self.encoder.encode(items))
            if count:
                advance(len(items))
            return rows
        parts = []
        for start in range(0, len(items), ENCODE_CHUNK):
            parts.append(np.atleast_2d(np.asarray(self.encoder.encode(items[start:start + ENCODE_CHUNK]))))
            advance(len(parts[-1]))
        return np.vstack(parts)

    def embed_sanitized(self, texts: Sequence[str], raw: Sequence[str] | None = None, *, exact: bool = False) -> Any:
        """Perturbed, stored-geometry vectors (float32) of texts that already went through the
        text stage. ``raw``: the texts before it, to tell a re-ingested text from two texts that
        sanitize alike (the repeat warning of fresh noise). ``exact=True``: (those vectors, the
        vectors they perturbed, after erasure and before noise: float32 of the encoder's
        dimension, what a sealed record keeps), from the same pass."""
        self.keying.check_for_documents()
        items, X = self.encode(texts, "texts", count=True)
        if not items:
            empty = np.zeros((0, self.out_dim), dtype=np.float32)
            return (empty, np.zeros((0, self.dim), dtype=np.float32)) if exact else empty
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
        stored = np.asarray(stored, dtype=np.float32)
        return (stored, np.asarray(X, dtype=np.float32)) if exact else stored

    @counts_documents("texts")
    def embed_documents(self, texts: Sequence[str], *, exact: bool = False) -> Any:
        """(sanitized texts, stored vectors), and with ``exact=True`` the exact vectors too
        (:meth:`embed_sanitized`): one add, with a progress bar when it runs long (detection
        reads the whole batch first: its second pass needs all of it)."""
        items = check_texts(texts, "texts")
        sanitized = self.sanitize_documents(items)
        got = self.embed_sanitized(sanitized, raw=items, exact=exact)
        return (sanitized, *got) if exact else (sanitized, got)

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

    def embed_queries(self, texts: Sequence[str], *, exact: bool = False) -> Any:
        """Query vectors (float32): text stage → encode → ``transform_query`` → the query policy's
        noise → the noise-aware query transform → store geometry. ``exact=True``: (those vectors,
        the clean query vectors after erasure, in the exact vectors' space, for re-ranking a
        sealed store's candidates), from the same pass."""
        items, X = self.encode(self.sanitize_queries(texts), "queries")
        clean = np.asarray(X, dtype=np.float32)
        if not items:
            empty = np.zeros((0, self.out_dim), dtype=np.float32)
            return (empty, clean) if exact else empty
        Q = np.atleast_2d(np.asarray(self.mechanism.transform_query(X), dtype=np.float64))
        qm = self.stages.query_mechanism
        if self.query == "noised" and qm is not None:
            Q = np.atleast_2d(qm.perturb(Q, rng=self.random.source())).astype(np.float64)
        elif self.query == "keyed" and qm is not None:
            Q = np.asarray(self.keyed_noise(qm, Q, items, b"query"), dtype=np.float64)
        Q = np.asarray(self.query_transform.apply(Q), dtype=np.float64)
        out = np.asarray(geometry_queries(Q, self.store_geometry), dtype=np.float32)
        return (out, clean) if exact else out

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

