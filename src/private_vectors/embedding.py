"""``PrivateEmbedding``: one embedding function for Chroma, LangChain and FAISS that perturbs
document vectors before they are stored.

Threat model: the stored index is what an attacker steals. Documents are embedded, then
perturbed by a metric-LDP mechanism (spherical Laplace, concept-aware Mahalanobis, …) before
they leave this object. Queries are not stored: by default they stay clean (``query="clean"``)
and may go through a noise-aware query transform (post-processing; it does not change the
documents' guarantee).

ε and its unit: ε is expressed per ``unit`` of distance, with ``unit = 1/√n`` on unit-norm
n-dimensional vectors by default ("ε per RMS coordinate"). At n = 384 the Laplace noise norm
is n·unit/ε ≈ 1.96 at ε = 10 and ≈ 0.49 at ε = 40, so the paper's range 5–40 spans strong
protection to near-clean retrieval. (ε per unit of L2 would give noise of norm ≈ 38 at ε = 10.)
"""

from __future__ import annotations

import asyncio
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
from .config import _BUILD_CACHE as _BUILD_CACHE
from .config import _BUILD_LOCK as _BUILD_LOCK
from .config import _LIVE as _LIVE
from .config import (
    CHROMA_NAME,
    CONFIG_VERSION,
    DRIFT_FIELDS,
    KEY_ENV,
    cached_build,
    canonical,
    check_config_compatible,
    rebuild_arguments,
    remember_build,
    remember_live,
    validate_config,
)
from .config import _canonical as _canonical
from .config import _concept_identity as _concept_identity
from .config import _key_bytes as _key_bytes
from .config import _key_id as _key_id
from .config import check_key_matches as check_key_matches
from .encoders import load_encoder
from .errors import (
    InvalidParameterError,
    InvalidTypeError,
    ModelNotAvailableError,
    PrivacyWarning,
)
from .keys import MIN_KEY_BYTES, Keying, SecretKey, keyed_context_v2
from .keystream import keyed_perturb
from .mechanisms import LaplaceMechanism, Mechanism
from .mechanisms.factory import GAUSSIAN_DELTA as GAUSSIAN_DELTA
from .mechanisms.factory import GAUSSIAN_SENSITIVITY as GAUSSIAN_SENSITIVITY
from .mechanisms.factory import MECHANISMS, build_mechanism
from .mechanisms.factory import is_learned_folder as _is_learned_folder  # noqa: F401
from .random import keyed_stream, resolve_random_state
from .retrieval import (
    QUERY_TRANSFORMS,
    SPACES,
    STORE_GEOMETRIES,
    IdentityTransform,
    augment_bound,
    build_query_transform,
    geometry_documents,
    geometry_queries,
    resolve_store_geometry,
)

__all__ = ["CHROMA_NAME", "DEFAULT_SPACE", "KEY_ENV", "MECHANISMS", "QUERY_POLICIES", "PrivateEmbedding"]
# The `X as X` imports above keep names that moved to .config and .mechanisms.factory importable
# from here (old import paths).

QUERY_POLICIES = ("clean", "noised", "keyed")
SANITIZE_POLICIES = ("redact", "surrogate")
"""Text-stage policies ``PrivateEmbedding(sanitize=...)`` accepts by name."""
DEFAULT_EPS = 10.0
DEFAULT_SPACE = "ip"
"""Space with a noise-aware query transform (concept noise); spherical noise uses ``"cosine"``.
Measured in benchmarks/results/space.md; L2 is worst in both cases."""

try:  # optional integrations: subclass their protocols when installed
    from chromadb.api.types import Documents as _Documents
    from chromadb.api.types import EmbeddingFunction as _ChromaEF

    _CHROMA_BASES: tuple[type, ...] = (_ChromaEF[_Documents],)
except Exception:  # pragma: no cover - chromadb not installed
    _CHROMA_BASES = ()
try:
    from langchain_core.embeddings import Embeddings as _LCEmbeddings

    _LC_BASES: tuple[type, ...] = (_LCEmbeddings,)
except Exception:  # pragma: no cover - langchain not installed
    _LC_BASES = ()

_BASES = (*_CHROMA_BASES, *_LC_BASES) or (object,)


def _is_attribute(concept: Any) -> bool:
    """Whether ``concept`` names an attribute concept (erasure stage) rather than a noise concept."""
    from .concepts.attribute import BUILTIN_ATTRIBUTES, AttributeConcept, is_attribute_folder

    if isinstance(concept, AttributeConcept):
        return True
    if isinstance(concept, dict):
        return concept.get("kind") == "attribute"
    if isinstance(concept, str) and concept in BUILTIN_ATTRIBUTES:
        return True
    return is_attribute_folder(concept)


def _load_concept(concept: Any, encoder: Any) -> Any:
    """A FittedConcept from a name, folder or object (duck-typed objects pass through)."""
    if concept is None:
        return None
    if hasattr(concept, "mechanism") and hasattr(concept, "reference"):
        return concept
    if not isinstance(concept, (str, os.PathLike, dict)):  # dict: a persisted reference (hash checked)
        raise InvalidTypeError("concept", "None, a built-in concept name, a fitted-concept folder or a FittedConcept",
                               concept)
    try:
        from .concepts import load_concept
    except ImportError as exc:  # pragma: no cover - concepts not available
        raise ModelNotAvailableError(f"concept {concept!r}: private_vectors.concepts is not available ({exc})") from exc
    return load_concept(concept, encoder)


class PrivateEmbedding(*_BASES):  # type: ignore[misc]
    """Embed texts and perturb document vectors before storage.

    Usable as a Chroma ``EmbeddingFunction`` (registered as ``"private_vectors"``), a LangChain
    ``Embeddings`` and with :mod:`private_vectors.integrations.faiss`.

    Args:
        concept: what to hide: a built-in concept name (``"PII"``, ``"person"``, ``"location"``,
            ``"datetime"``, ``"demographic"``, ``"medical"``), a fitted-concept folder, a
            ``FittedConcept``, or None (no concept: spherical noise). An *attribute* concept —
            an ``AttributeConcept``, its folder, or the built-in ``"sex"`` / ``"age_band"`` —
            adds an erasure stage after the encoder for documents and queries alike; the
            mechanism then defaults to Laplace (``mechanism="none"`` for erasure only).
        eps: ε per ``unit`` of distance, finite and > 0. **Default 10** when not given, with a
            :class:`~private_vectors.errors.PrivacyWarning` (pass it explicitly: the protection
            depends on it); the privacy report records it. For a CAPE/TextCrafter
            folder: overrides the artefact's own ε when given (default: the artefact's); for a
            ``Mechanism`` instance: ignored (the instance's ε is recorded).
        model: the encoder: None (packaged all-MiniLM-L6-v2), a sentence-transformers name or
            local path, ``"fake"``/``"fake:<dim>"``, an encoder object or a callable.
        mechanism: ``"laplace"`` (default without a concept and with a built-in span concept such as
            ``"PII"``, whose text stage does the concept's work: measured safer than concept
            noise at equal utility), ``"mahalanobis"`` (default with a fitted concept),
            ``"purkayastha"``, ``"gaussian"``, ``"none"``; a :class:`~private_vectors.mechanisms.Mechanism`
            instance; or a CAPE/TextCrafter folder (config.json + model.safetensors).
        query: query policy: ``"clean"`` (default; queries are not stored), ``"noised"``
            (fresh noise at ``query_eps``) or ``"keyed"`` (noise from the key and the text).
        query_eps: ε of the query's own noise (default: ``eps``).
        query_transform: ``"auto"`` (default), ``"none"``, ``"project"`` or ``"wiener"``; see
            :mod:`private_vectors.retrieval`. Applied after the query's own noise.
        key: secret for keyed document noise (default: env ``PRIVATE_VECTORS_KEY``), str or
            bytes of at least 16 bytes. Never stored, pickled or shown: the config records the
            key derivation, its salt and a check value (see :mod:`private_vectors.keys`).
        random_state: None (secure, OS entropy per call) or an int / Generator (tests only;
            never persisted).
        unit: distance unit of ε (default 1/√n; radians for Purkayastha).
        space: collection space ``"ip"``, ``"cosine"`` or ``"l2"``. Default (measured on
            SciFact, benchmarks/results/space.md): ``"ip"`` when the query transform is
            noise-aware (concept noise: dividing by ‖z‖ would rescale scores by the random
            noise norm), ``"cosine"`` for spherical mechanisms; L2 is worst in both cases.
        store_geometry: post-processing of stored documents that makes the store's own space
            irrelevant (benchmarks/results/space_invariance.md): ``"auto"`` (default:
            ``"normalize"`` when ``space`` is cosine, ``"augment"`` when it is ip, ``"none"`` for
            l2), ``"normalize"`` (unit-norm documents: every space ranks as cosine),
            ``"augment"`` (one extra coordinate √(M² − ‖z‖²), queries 0: every space ranks as
            inner product; ``out_dim`` grows by one) or ``"none"`` (raw vectors: rank as measured
            only in a ``space`` store). Post-processing: the guarantee is unchanged.
        sanitize: the text stage, run before the encoder on documents (``Sanitizer.apply``)
            and on queries (``Sanitizer.apply_queries``, same key): ``"redact"`` (typed
            placeholders), ``"surrogate"`` (keyed same-slot replacements; needs a key),
            ``None`` (no text stage: raw text reaches the encoder), a
            :class:`~private_vectors.text.Sanitizer`, or ``"auto"`` (default): ``"redact"``
            when ``concept`` names a built-in span concept (``"PII"``, ``"person"``,
            ``"location"``, ``"datetime"``, ``"demographic"``, ``"medical"``), else None.
            A named policy detects the concept's spans (``Sanitizer(concept, policy=..., key=key)``).
        key_salt: the scrypt salt of keyed noise, bytes of at least 16 (needs a key). None
            (default): random from the OS when a store records the config, so every collection
            has its own (see :class:`~private_vectors.keys.Keying`). A salt is public (the config
            records it); fix it only to reproduce keyed vectors across processes, e.g. a
            benchmark's seeded rows. Reopening a collection adopts the stored salt as usual.
    """

    def __init__(
        self,
        *,
        concept: Any = None,
        eps: float | None = None,
        model: Any = None,
        mechanism: Any = None,
        query: str = "clean",
        query_eps: float | None = None,
        query_transform: str = "auto",
        key: Any = None,
        random_state: Any = None,
        unit: float | None = None,
        space: str | None = None,
        store_geometry: Any = "auto",
        sanitize: Any = "auto",
        key_salt: bytes | None = None,
    ) -> None:
        try:  # the raw key never stays in a local a traceback could show
            secret = SecretKey.resolve(key, min_bytes=1 if isinstance(key, SecretKey) else MIN_KEY_BYTES)
        finally:
            del key
        self._keying = Keying(secret)
        if key_salt is not None:
            self._keying.fix_salt(key_salt)
        self._key_source = "none" if secret is None else secret.source
        self._eps_given = eps is not None
        if eps is None:
            warnings.warn(f"eps not given: using the default eps={DEFAULT_EPS:g} (per unit 1/sqrt(n)). Pass eps "
                          "explicitly: the protection of the stored vectors depends on it.", PrivacyWarning,
                          stacklevel=2)
        self.eps = DEFAULT_EPS if eps is None else check_positive_finite(eps, "eps")
        self._random = resolve_random_state(random_state)
        self.query = self._check_choice(query, "query", QUERY_POLICIES)
        query_eps = None if query_eps is None else check_positive_finite(query_eps, "query_eps")
        self.query_transform_kind = self._check_choice(query_transform, "query_transform", QUERY_TRANSFORMS)
        space = None if space is None else self._check_choice(space, "space", SPACES)
        if self.query == "keyed" and secret is None:
            raise InvalidParameterError("key", f"a secret (parameter or env {KEY_ENV}) for query='keyed'", None)
        self.encoder = load_encoder(model)
        self.dim = int(self.encoder.dim)
        self.unit = 1.0 / math.sqrt(self.dim) if unit is None else check_positive_finite(unit, "unit")
        if math.isclose(self.unit, 1.0 / math.sqrt(self.dim), rel_tol=1e-12):
            # the default unit, possibly one ulp off after a store's JSON round trip (Chroma returns
            # 0.051031036307982884 as 0.05103103630798288): the exact value, as it was written
            self.unit = 1.0 / math.sqrt(self.dim)
        self.erasure: Any = None
        span_concept = concept is not None and _is_span_concept(concept)
        if concept is not None and _is_attribute(concept):
            from .concepts.attribute import load_attribute

            self.erasure = load_attribute(concept, self.encoder)
            concept = None
        self.concept = _load_concept(concept, self.encoder)
        if self.concept is not None and hasattr(self.concept, "check_encoder"):
            self.concept.check_encoder(self.encoder)
        if mechanism is None and span_concept:
            # measured (README Findings): with the text stage, concept noise leaks more than
            # spherical Laplace at equal utility on every set; the safest measured default
            mechanism = "laplace"
        self._mechanism_ref, self.mechanism = self._build_mechanism(mechanism, self.eps)
        own_eps = getattr(self.mechanism, "epsilon", None)
        if not isinstance(self._mechanism_ref, str) and isinstance(own_eps, (int, float)) and own_eps > 0:
            self.eps = float(own_eps)  # instances and learned folders: record the ε actually used
        self.out_dim = int(self.mechanism.output_dim(self.dim))
        self.query_eps = self.eps if query_eps is None else query_eps
        self._query_mechanism = self._build_query_mechanism() if self.query != "clean" else None
        subspace = self.concept.noise_subspace() if self.concept is not None and hasattr(
            self.concept, "noise_subspace") else None
        self.query_transform = build_query_transform(self.query_transform_kind, self.mechanism, subspace=subspace)
        if space is None:
            space = "cosine" if isinstance(self.query_transform, IdentityTransform) else DEFAULT_SPACE
        self.space: str = space
        self._set_store_geometry(store_geometry)
        self.store_space: str | None = None  # set by the drop-in Chroma: the collection's own space
        self._contexts: dict[str, bytes] = {}
        self._context_lock = threading.Lock()
        self._seen_salt = secrets.token_bytes(16)  # in-memory digests of texts embedded without a key
        self._seen: set[bytes] = set()
        self._keying.set_context(self.keyed_context("v2"))
        self.sanitizer = self._build_sanitizer(sanitize, concept)
        if not self._keying.keyed:  # (a keyed config is only final once its salt is: see keys.Keying)
            remember_live(self.get_config(), self)  # a rebuild of this exact config in this process returns self

    # -- construction helpers -----------------------------------------------------------------
    def _set_store_geometry(self, value: Any) -> None:
        """Resolve ``store_geometry`` (a name, or a persisted ``{"kind", "M"}`` dict)."""
        bound = None
        if isinstance(value, dict):  # from a stored config: keep its M
            bound = value.get("M")
            value = value.get("kind", "none")
        kind = resolve_store_geometry(self._check_choice(value, "store_geometry", STORE_GEOMETRIES), self.space)
        if kind == "augment" and bound is None:
            bound = augment_bound(self.mechanism, self.dim)
        self.store_geometry = kind
        self._geometry_bound = None if kind != "augment" else float(check_positive_finite(bound, "store_geometry.M"))
        self._clip_warned = False
        self.mechanism_out_dim = self.out_dim
        self.out_dim = self.mechanism_out_dim + (1 if kind == "augment" else 0)

    def _ranking_note(self) -> str:
        if self.store_geometry == "normalize":
            return "documents stored at unit norm: l2, cosine and ip stores all rank as cosine"
        if self.store_geometry == "augment":
            return ("documents stored with one extra coordinate sqrt(M^2 - |z|^2), queries with 0: l2, cosine and ip "
                    "stores all rank as inner product")
        return f"raw vectors: ranking is as measured only in a {self.space!r} store"

    def _geometry_config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"kind": self.store_geometry}
        if self._geometry_bound is not None:
            cfg["M"] = round(self._geometry_bound, 9)
        return cfg

    @staticmethod
    def _check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
        if not isinstance(value, str):
            raise InvalidTypeError(name, f"one of {tuple(choices)}", value)
        if value not in choices:
            raise InvalidParameterError(name, f"one of {tuple(choices)}", value)
        return value

    def _build_query_mechanism(self) -> Mechanism:
        """The query's own noise: the documents' mechanism family at ``query_eps``; spherical
        Laplace (unit 1/√out_dim) in the output space of learned encoders and instances."""
        if isinstance(self._mechanism_ref, str):
            return self._build_mechanism(self._mechanism_ref, self.query_eps)[1]
        return LaplaceMechanism(epsilon=self.query_eps, unit=1.0 / math.sqrt(self.out_dim), dim=self.out_dim,
                                random_state=self._random)

    def _text_key(self) -> Any:
        """The text stage's key: the same redacted SecretKey (the Sanitizer derives its surrogate
        subkey through keys.surrogate_subkey, the stretched key's HKDF subkey)."""
        return self._keying.secret

    def _build_sanitizer(self, sanitize: Any, concept: Any) -> Any:
        """The text stage for ``sanitize`` (see the class docstring), or None."""
        if isinstance(sanitize, str) and sanitize == "auto":
            sanitize = "redact" if _is_span_concept(concept) else None
        if sanitize is None:
            return None
        if isinstance(sanitize, str):
            if sanitize not in SANITIZE_POLICIES:
                raise InvalidParameterError("sanitize", f"one of {SANITIZE_POLICIES}, 'auto', None or a Sanitizer",
                                            sanitize)
            if sanitize == "surrogate" and not self._keying.keyed:
                raise InvalidParameterError(
                    "key", f"a secret (key=... or env {KEY_ENV}) for sanitize='surrogate'", None,
                    note="a surrogate without a key is a public substitution; use sanitize='redact' without a key")
            from .text import Sanitizer

            text_concept = concept if isinstance(concept, str) or concept is None else getattr(
                self.concept, "name", concept)
            return Sanitizer("PII" if text_concept is None else text_concept, policy=sanitize, key=self._text_key())
        if isinstance(sanitize, dict):  # a persisted Sanitizer config (rebuild from get_config())
            from .text import Sanitizer

            return Sanitizer.from_config(sanitize, key=self._text_key())
        if all(callable(getattr(sanitize, m, None)) for m in ("apply", "apply_queries", "get_config")):
            return sanitize
        raise InvalidTypeError("sanitize", f"one of {SANITIZE_POLICIES}, 'auto', None or a Sanitizer", sanitize)

    def _build_mechanism(self, mechanism: Any, eps: float) -> tuple[Any, Mechanism]:
        """(JSON-safe reference, mechanism instance) for ``mechanism``: see
        :func:`private_vectors.mechanisms.factory.build_mechanism`."""
        return build_mechanism(mechanism, eps=eps, eps_given=self._eps_given, unit=self.unit, dim=self.dim,
                               concept=self.concept, random_state=self._random, model_id=self.encoder.model_id)

    # -- identity / config ----------------------------------------------------------------------
    def _concept_reference(self) -> Any:
        if self.concept is None:
            return None
        ref = self.concept.reference()
        return json.loads(canonical(ref))

    def _erasure_reference(self) -> Any:
        return None if self.erasure is None else json.loads(canonical(self.erasure.reference()))

    def _encoder_config(self) -> dict[str, Any]:
        cfg = dict(self.encoder.get_config())
        return {"config": cfg, "model_id": self.encoder.model_id, "dim": self.dim}

    def keyed_context(self, version: str | None = None) -> bytes:
        """Encoder identity ‖ mechanism config: the public context of keyed noise (no text, no key).

        v1 (collections written before issue 16): exact-float JSON, as then. v2: every number
        canonicalised through float32 (:func:`private_vectors.keys.canonical_context`), so a
        store's JSON round trip of ε or the unit cannot change the noise.
        """
        version = version or self._keying.version
        with self._context_lock:
            if version not in self._contexts:
                enc = {"model_id": self.encoder.model_id, "dim": self.dim,
                       "normalize": bool(getattr(self.encoder, "normalize", True))}
                concept_ctx = self._concept_reference()
                if self.erasure is not None:  # an attribute concept: its erasure identifies the stage
                    concept_ctx = {"name": f"erasure:{self.erasure.name}", "sha256": self.erasure.content_sha256()}
                if version == "v1":
                    mech = {"mechanism": self._mechanism_ref, "eps": self.eps, "unit": self.unit,
                            "concept": concept_ctx}
                    self._contexts[version] = canonical(enc) + b"\x00" + canonical(mech)
                else:
                    self._contexts[version] = keyed_context_v2(encoder=enc, mechanism=self._mechanism_ref,
                                                               eps=self.eps, unit=self.unit,
                                                               concept=concept_ctx)
            return self._contexts[version]

    def get_config(self) -> dict[str, Any]:
        """Everything needed to rebuild this function (never the key, never a seed)."""
        cfg: dict[str, Any] = {
            "config_version": CONFIG_VERSION,
            "library_version": __version__,
            "encoder": self._encoder_config(),
            "concept": self._concept_reference(),
            "erasure": self._erasure_reference(),
            "mechanism": self._mechanism_ref,
            "eps": self.eps,
            "unit": self.unit,
            "out_dim": self.out_dim,
            "query": self.query,
            "query_eps": self.query_eps,
            "query_transform": self.query_transform_kind,
            "space": self.space,
            "seeded": bool(self._random.seeded),
            "sanitizer": None if self.sanitizer is None else self.sanitizer.get_config(),
        }
        if self.store_geometry != "none":  # absent = "none": configs written before it existed
            cfg["store_geometry"] = self._geometry_config()
        cfg.update(self._keying.config())  # keyed, derivation, salt, check value: never the key
        if self._keying.keyed:  # final once the salt is: a rebuild of it in this process returns self
            remember_live(cfg, self)
        return cfg

    @staticmethod
    def name() -> str:
        return CHROMA_NAME

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> PrivateEmbedding:
        """Rebuild from :meth:`get_config` (the key comes from ``PRIVATE_VECTORS_KEY``)."""
        return rebuild(config, "this collection")

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        validate_config(config)

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        """Refuse a change of anything that alters what stored vectors mean."""
        check_config_compatible(old_config, new_config)

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return self.space

    def supported_spaces(self) -> list[str]:
        return [self.space, *[s for s in SPACES if s != self.space]]

    def bind_to_stored(self, config: dict[str, Any], where: str) -> None:
        """Check this function's key against a stored config and adopt its key derivation
        (called on every reopen: Chroma, ``chroma_store``, ``PrivateFaissIndex.load``).

        Raises:
            ConfigMismatchError: another key, named by ``where`` (never the key).
        """
        self._keying.bind(config if isinstance(config, dict) else {}, where)

    def set_key(self, key: Any) -> None:
        """Give the key to a function rebuilt without it (e.g. unpickled in a process without
        ``PRIVATE_VECTORS_KEY``); checked against the stored check value when there is one."""
        stored = self._keying.expected
        legacy = bool(stored and stored.get("key_derivation") == "v1")
        try:
            secret = SecretKey.resolve(key, min_bytes=1 if legacy or isinstance(key, SecretKey) else MIN_KEY_BYTES)
        finally:
            del key
        if secret is None:
            raise InvalidParameterError("key", "a secret (str or bytes)", None)
        keying = Keying(secret)
        if stored is not None:
            keying.bind(stored, "this embedding's collection")
        self._keying = keying
        self._key_source = secret.source

    def __reduce__(self) -> Any:
        """Pickle as the config (never the key, never a seed): the key is re-read from
        ``PRIVATE_VECTORS_KEY`` on load, or given with :meth:`set_key`."""
        cfg = self.get_config()
        try:
            rebuild_arguments(cfg)
        except Exception as exc:
            raise TypeError(f"this PrivateEmbedding cannot be pickled: {exc}") from None
        return (_unpickle, (cfg,))

    def __repr__(self) -> str:
        if not hasattr(self, "space"):  # a half-built object (a traceback with locals shows it)
            return "PrivateEmbedding(<not constructed>)"
        concept = None if self.concept is None else getattr(self.concept, "name", "concept")
        if self.erasure is not None:
            concept = f"{self.erasure.name} (erasure: {self.erasure.method})"
        keyed = "keyed" if self._keying.keyed else "fresh noise"
        sanitizer = getattr(self, "sanitizer", None)
        text = None if sanitizer is None else sanitizer.get_config().get("policy", "custom")
        return (f"PrivateEmbedding(concept={concept!r}, eps={self.eps:g}, model={self.encoder.model_id!r}, "
                f"mechanism={self.mechanism.name!r}, query={self.query!r}, "
                f"query_transform={self.query_transform_kind!r}, space={self.space!r}, sanitize={text!r}, {keyed})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivateEmbedding):
            return NotImplemented
        if self._keying.keyed != other._keying.keyed:
            return False
        mine, theirs = self._drift_view(), other._drift_view()
        return all(mine.get(f) == theirs.get(f) for f in DRIFT_FIELDS if f != "keyed")

    def _drift_view(self) -> dict[str, Any]:
        """The drift fields without fixing a salt (no side effect on the key derivation)."""
        return {"encoder": self._encoder_config(), "mechanism": self._mechanism_ref, "eps": self.eps,
                "unit": self.unit, "concept": self._concept_reference(), "space": self.space}

    __hash__ = object.__hash__

    # -- the verbs --------------------------------------------------------------------------------
    def _check_key_for_documents(self) -> None:
        self._keying.check_for_documents()

    def _warn_on_repeats(self, items: list[str]) -> None:
        """Fresh noise: warn when a text is embedded again (each copy weakens its protection)."""
        if self._random.seeded or self.mechanism.name == "none":
            return
        digests = [hashlib.blake2b(t.encode("utf-8"), key=self._seen_salt, digest_size=16).digest() for t in items]
        repeated = len(set(digests)) < len(digests) or any(d in self._seen for d in digests)
        if len(self._seen) < 100_000:
            self._seen.update(digests)
        if repeated:
            warnings.warn("a text was embedded again without a key: each call draws fresh noise, so every stored "
                          "copy weakens its protection (the average of k copies has about 1/sqrt(k) of the noise). "
                          "Set a key (key=... or PRIVATE_VECTORS_KEY) to make re-ingestion reproduce the vector.",
                          PrivacyWarning, stacklevel=3)

    def _encode(self, texts: Any, name: str) -> tuple[list[str], np.ndarray]:
        items = check_texts(texts, name)
        if not items:
            return items, np.zeros((0, self.dim), dtype=np.float64)
        X = np.asarray(self.encoder.encode(items))
        mat, _ = as_float_matrix(X, f"model({name})", dim=self.dim)
        if mat.shape[0] != len(items):
            raise InvalidParameterError(f"model({name})", f"{len(items)} rows", mat)
        zero = np.flatnonzero(~np.any(mat != 0, axis=1))
        if zero.size:  # a zero vector carries nothing of its text: refuse rather than store noise alone
            raise InvalidParameterError(f"model({name})", "non-zero vectors", mat,
                                        note=f"rows {zero[:5].tolist()} are all zeros")
        if self.erasure is not None:  # documents and queries go through the same erasure
            mat = np.asarray(self.erasure.erase(mat), dtype=np.float64)
        return items, mat

    # -- text stage -------------------------------------------------------------------------------
    def sanitize_documents(self, texts: Sequence[str]) -> list[str]:
        """The documents after the text stage (unchanged copies without one).

        Together with :meth:`embed_sanitized` this is the one-pass path for stores that keep
        text: sanitize once, embed exactly that text, store exactly that text (see
        :meth:`prepare_documents`).
        """
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

    def query_index_state(self) -> dict[str, Any] | None:
        """The text stage's keyed query index (HMACs of the entity tokens replaced at ingest,
        never the tokens) as JSON-safe data for a store to persist, or None when there is
        nothing worth persisting (no text stage, or an index under a per-process random key)."""
        get_state = getattr(self.sanitizer, "get_state", None)
        if get_state is None:
            return None
        state = get_state()
        return state if isinstance(state, dict) and state.get("keyed") else None

    def load_query_index_state(self, state: Any) -> bool:
        """Restore a persisted :meth:`query_index_state` (so a reopened store still catches
        lower-case names in queries); False when there is nothing to restore."""
        load_state = getattr(self.sanitizer, "load_state", None)
        if load_state is None or not state:
            return False
        load_state(state)
        return True

    def texts_to_store(self, texts: Sequence[str], sanitized: Sequence[str], *,
                       store_raw_text: bool = False) -> list[str] | None:
        """What a store may keep next to the vectors (contracts.md, "Stored text"): the raw
        ``texts`` only with ``store_raw_text=True``; else the ``sanitized`` texts when a text
        stage ran; else nothing (None)."""
        if not isinstance(store_raw_text, bool):
            raise InvalidTypeError("store_raw_text", "True or False", store_raw_text)
        if store_raw_text:
            return list(texts)
        return list(sanitized) if self.sanitizer is not None else None

    def prepare_documents(self, texts: Sequence[str], *,
                          store_raw_text: bool = False) -> tuple[list[str] | None, np.ndarray]:
        """One pass for a store: (texts to store or None, perturbed vectors).

        Each text is sanitized once; the sanitized text is what is embedded and what is
        returned for storage (see :meth:`texts_to_store`).
        """
        items = check_texts(texts, "texts")
        sanitized = self.sanitize_documents(items)
        return self.texts_to_store(items, sanitized, store_raw_text=store_raw_text), self.embed_sanitized(sanitized)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Perturbed document vectors, float32 (m, out_dim): text stage → encoder → mechanism.
        All checks run before any output."""
        return self.embed_sanitized(self.sanitize_documents(texts))

    def embed_sanitized(self, texts: Sequence[str]) -> np.ndarray:
        """Perturbed vectors of texts that already went through :meth:`sanitize_documents`
        (the text stage is not run again: a surrogate of a surrogate would break consistency)."""
        self._check_key_for_documents()
        items, X = self._encode(texts, "texts")
        if not items:
            return np.zeros((0, self.out_dim), dtype=np.float32)
        if not self._keying.keyed:
            self._warn_on_repeats(items)
            out = self.mechanism.perturb(X, rng=self._random.source())
        else:
            out = self._keyed_noise(self.mechanism, X, items, b"doc")
        out = np.asarray(out, dtype=np.float64)
        if not np.all(np.isfinite(out)):
            raise InvalidParameterError("eps", "a value whose noise is finite", self.eps)
        stored, clipped = geometry_documents(out, self.store_geometry, self._geometry_bound)
        if clipped and not self._clip_warned:
            self._clip_warned = True
            warnings.warn(f"{clipped} document vector(s) longer than the augmentation bound M={self._geometry_bound:.3g}: "
                          "their rank in l2/cosine stores is approximate (exact in ip stores)", UserWarning,
                          stacklevel=2)
        return np.asarray(stored, dtype=np.float32)

    def _keyed_noise(self, mechanism: Mechanism, X: np.ndarray, items: list[str], label: bytes) -> np.ndarray:
        """Noise determined by (key, context, text). v2: one batched call, one keyed stream per
        text (:mod:`private_vectors.keystream`); v1: today's per-vector stream, kept so
        collections written with it reproduce their vectors."""
        sched = self._keying.schedule()
        self._keying.used = True
        ctx = self.keyed_context(sched.version)
        if sched.version == "v2":
            return keyed_perturb(mechanism, X, sched.noise, ctx, items, label)
        return np.vstack([np.atleast_2d(mechanism.perturb(X[i], rng=keyed_stream(sched.noise, label, ctx,
                                                                                 t.encode("utf-8"))))
                          for i, t in enumerate(items)])

    def embed_query_array(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, float32 (m, out_dim): encode → ``mechanism.transform_query`` → the
        query policy's noise → the noise-aware query transform. The text stage runs first."""
        items, X = self._encode(self.sanitize_queries(texts), "queries")
        if not items:
            return np.zeros((0, self.out_dim), dtype=np.float32)
        Q = np.atleast_2d(np.asarray(self.mechanism.transform_query(X), dtype=np.float64))
        qm = self._query_mechanism
        if self.query == "noised" and qm is not None:
            Q = np.atleast_2d(qm.perturb(Q, rng=self._random.source())).astype(np.float64)
        elif self.query == "keyed" and qm is not None:
            Q = np.asarray(self._keyed_noise(qm, Q, items, b"query"), dtype=np.float64)
        Q = np.asarray(self.query_transform.apply(Q), dtype=np.float64)
        return np.asarray(geometry_queries(Q, self.store_geometry), dtype=np.float32)

    # Chroma: __call__(input) for documents, embed_query(input=...) for queries
    def __call__(self, input: Sequence[str]) -> list[np.ndarray]:
        items = _as_list(input, "input")
        if not items:  # Chroma refuses an empty result with a bare ValueError; say why instead
            raise InvalidParameterError("input", "at least one document", input)
        return list(self.embed_array(items))

    def embed_query(self, input: Any = None, *, text: Any = None) -> Any:
        """Embed a query: a ``str`` (LangChain: returns ``list[float]``) or a list of texts
        (Chroma: returns a list of float32 arrays)."""
        value = input if input is not None else text
        if isinstance(value, str):
            return self.embed_query_array([value])[0].tolist()
        return list(self.embed_query_array(_as_list(value, "input")))

    # LangChain
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(_as_list(texts, "texts")).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.get_running_loop().run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.get_running_loop().run_in_executor(None, self.embed_query, text)

    # -- reporting --------------------------------------------------------------------------------
    def privacy_report(self, texts: Sequence[str] | None = None) -> dict[str, Any]:
        """What the stored vectors are protected by, in numbers (JSON-safe).

        Args:
            texts: documents to measure the typical inter-document distance on (default: the
                encoder canary sentences).
        """
        from .encoders import CANARY_SENTENCES

        sample = list(texts) if texts is not None else list(CANARY_SENTENCES)
        desc = self.mechanism.describe(dim=self.dim) if hasattr(self.mechanism, "describe") else {}
        X = np.asarray(self.encoder.encode(check_texts(sample, "texts")), dtype=np.float64)
        d = np.sqrt(np.maximum(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1), 0))
        iu = np.triu_indices(len(X), 1)
        typical = float(np.median(d[iu])) if iu[0].size else float("nan")
        noise = desc.get("expected_noise_norm")
        report: dict[str, Any] = {
            "mechanism": desc.get("name", getattr(self.mechanism, "name", type(self.mechanism).__name__)),
            "epsilon": self.eps,
            "metric": desc.get("metric"),
            "unit": self.unit,
            "unit_meaning": (f"epsilon per {self.unit:.4g} of distance (1/sqrt(n), n={self.dim}: "
                             "per RMS coordinate of a unit-norm vector)" if math.isclose(
                                 self.unit, 1 / math.sqrt(self.dim)) else f"epsilon per {self.unit:.4g} of distance"),
            "model": self.encoder.model_id,
            "dim": self.dim,
            "concept": self._concept_reference(),
            "erasure": None if self.erasure is None else self.erasure.report(),
            "expected_noise_norm": noise,
            "typical_inter_document_distance": typical,
            "noise_to_distance_ratio": (float(noise) / typical if isinstance(noise, (int, float)) and typical > 0
                                        else None),
            "indistinguishability_radius": desc.get("indistinguishability_radius"),
            "guarantee": desc.get("guarantee"),
            "noisiest_dimensions": desc.get("noisiest_dimensions"),
            "quietest_dimensions": desc.get("quietest_dimensions"),
            "directions": _direction_summary(self.mechanism),
            "query_policy": self.query,
            "query_eps": self.query_eps if self.query != "clean" else None,
            "query_transform": {**self.query_transform.describe(), "requested": self.query_transform_kind,
                                "note": "post-processing: does not change the documents' guarantee"},
            "space": self.space,
            "store_geometry": {**self._geometry_config(), "ranking": self._ranking_note()},
            "store_space": getattr(self, "store_space", None),
            "text_stage": _text_stage_report(self.sanitizer),
            "keyed": self._keying.keyed,
            "key_source": self._key_source,
            "key_derivation": self._keying.version if self._keying.keyed else None,
            "eps_defaulted": not self._eps_given,
            "randomness": desc.get("randomness", "seeded: for testing only" if self._random.seeded
                                   else "secure: OS entropy (secrets) per call"),
        }
        if not self._keying.keyed and self.mechanism.name != "none":
            report["warning"] = ("no key: each call draws fresh noise, so re-ingesting the same text k times stores k "
                                 "independent noisy copies whose average has about 1/sqrt(k) of the noise. Set a key "
                                 f"(key=... or {KEY_ENV}) to make re-ingestion give the identical vector.")
        if self.mechanism.name == "none":
            report["warning"] = ("mechanism 'none': vectors are stored as encoded; no privacy" if self.erasure is None
                                 else f"mechanism 'none': erasure of {self.erasure.attribute!r} only, no noise: no "
                                 "formal guarantee; the measured held-out attacker accuracy is under 'erasure'")
        return json.loads(canonical(report).decode("utf-8"))

    def privacy_report_text(self, texts: Sequence[str] | None = None) -> str:
        """:meth:`privacy_report` as indented JSON."""
        return json.dumps(self.privacy_report(texts), indent=2)


def _is_span_concept(concept: Any) -> bool:
    """Whether ``concept`` names a built-in span concept (the ``sanitize="auto"`` rule)."""
    if not isinstance(concept, str):
        return False
    from .concepts.spec import BUILTIN_CONCEPTS

    return concept.strip().lower() in {b.lower() for b in BUILTIN_CONCEPTS}


def _checked_output(out: Any, items: list[str], stage: str) -> list[str]:
    """The text stage's output, refused unless it is one str per input."""
    if not isinstance(out, list) or len(out) != len(items) or not all(isinstance(t, str) for t in out):
        raise InvalidParameterError(stage, f"a list of {len(items)} strings", out,
                                    note="the text stage failed; nothing was embedded")
    return out


_POLICY_NOTES = {
    "redact": ("detected spans become typed placeholders (<PERSON>) in stored vectors, stored text and "
               "queries; entity queries (by name) no longer retrieve those documents"),
    "surrogate": ("detected spans become keyed same-slot surrogates, consistent across documents and queries "
                  "for the key holder; an attacker who knows the plaintext of other documents about the same "
                  "person can learn that person's surrogate"),
    "keep": "spans are detected but left in place",
}


def _text_stage_report(sanitizer: Any) -> dict[str, Any]:
    if sanitizer is None:
        return {"enabled": False, "note": "no text stage: raw names and values reach the encoder"}
    cfg = sanitizer.get_config()
    policy = cfg.get("policy")
    return {"enabled": True, "policy": policy, "keyed": cfg.get("keyed"), "sanitizer": cfg,
            "note": _POLICY_NOTES.get(str(policy), "custom sanitizer"),
            "misses": "a span the detectors miss reaches the encoder and the stored text unchanged"}


def _direction_summary(mechanism: Mechanism) -> dict[str, Any]:
    from .retrieval import noise_directions

    nd = noise_directions(mechanism)
    if nd is None:
        return {"shape": "spherical: every direction gets the same noise"}
    N, U, rest = nd
    out: dict[str, Any] = {"noise_variance_max": float(N.max()),
                           "noise_variance_min": float(N.min() if rest is None else min(N.min(), rest))}
    if rest is not None:
        out.update(shape=f"concept subspace of rank {U.shape[1]} gets the most noise",
                   noise_variance_in_subspace=float(N.max()), noise_variance_outside=float(rest))
    else:
        out["shape"] = "elliptical (per-direction variances of Sigma)"
    return out


def _as_list(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        raise InvalidTypeError(name, "a list of strings", value, note="wrap a single text in a list")
    return check_texts(value, name)


def rebuild(config: dict[str, Any], where: str, *, use_cache: bool = True) -> PrivateEmbedding:
    """A PrivateEmbedding from a stored config, its key from ``PRIVATE_VECTORS_KEY``, bound to the
    stored key derivation (a different key is refused, naming ``where``)."""
    validate_config(config)
    if use_cache:
        cached = cached_build(config)
        if cached is not None:
            env = SecretKey.resolve(None, min_bytes=1)
            if env is None or not cached._keying.keyed or cached._keying.secret == env:
                return cached  # (another key in the environment is checked below, and refused)
    stored = Keying.stored_fields(config)
    secret = SecretKey.resolve(None, min_bytes=1 if stored.get("key_derivation") == "v1" else MIN_KEY_BYTES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        ef = PrivateEmbedding(**rebuild_arguments(config), key=secret)
    if not stored["keyed"] and secret is not None:
        ef._keying = Keying(None)  # an unkeyed collection stays unkeyed
        ef._key_source = "none"
    ef.bind_to_stored(config, where)
    if use_cache:
        remember_build(config, ef)
    return ef


def _unpickle(config: dict[str, Any]) -> PrivateEmbedding:
    return rebuild(config, "the pickled PrivateEmbedding's collection", use_cache=False)
