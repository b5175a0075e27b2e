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
import json
import math
import os
import threading
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
    _key_bytes,
    _key_id,
    cached_build,
    canonical,
    check_config_compatible,
    check_key_matches,
    rebuild_arguments,
    remember_build,
    remember_live,
    validate_config,
)
from .config import _canonical as _canonical
from .config import _concept_identity as _concept_identity
from .encoders import load_encoder
from .errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError
from .mechanisms import LaplaceMechanism, Mechanism
from .mechanisms.factory import GAUSSIAN_DELTA as GAUSSIAN_DELTA
from .mechanisms.factory import GAUSSIAN_SENSITIVITY as GAUSSIAN_SENSITIVITY
from .mechanisms.factory import MECHANISMS, build_mechanism
from .mechanisms.factory import is_learned_folder as _is_learned_folder  # noqa: F401
from .random import keyed_stream, resolve_random_state
from .retrieval import QUERY_TRANSFORMS, SPACES, IdentityTransform, build_query_transform

__all__ = ["CHROMA_NAME", "DEFAULT_SPACE", "KEY_ENV", "MECHANISMS", "QUERY_POLICIES", "PrivateEmbedding"]
# The `X as X` imports above keep names that moved to .config and .mechanisms.factory importable
# from here (old import paths).

QUERY_POLICIES = ("clean", "noised", "keyed")
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
            ``FittedConcept``, or None (no concept: spherical noise).
        eps: ε per ``unit`` of distance (default 10), finite and > 0. For a CAPE/TextCrafter
            folder: overrides the artefact's own ε when given (default: the artefact's); for a
            ``Mechanism`` instance: ignored (the instance's ε is recorded).
        model: the encoder: None (packaged all-MiniLM-L6-v2), a sentence-transformers name or
            local path, ``"fake"``/``"fake:<dim>"``, an encoder object or a callable.
        mechanism: ``"mahalanobis"`` (default with a concept), ``"laplace"`` (default without),
            ``"purkayastha"``, ``"gaussian"``, ``"none"``; a :class:`~private_vectors.mechanisms.Mechanism`
            instance; or a CAPE/TextCrafter folder (config.json + model.safetensors).
        query: query policy: ``"clean"`` (default; queries are not stored), ``"noised"``
            (fresh noise at ``query_eps``) or ``"keyed"`` (noise from the key and the text).
        query_eps: ε of the query's own noise (default: ``eps``).
        query_transform: ``"auto"`` (default), ``"none"``, ``"project"`` or ``"wiener"``; see
            :mod:`private_vectors.retrieval`. Applied after the query's own noise.
        key: secret for keyed document noise (default: env ``PRIVATE_VECTORS_KEY``). Never stored.
        random_state: None (secure, OS entropy per call) or an int / Generator (tests only;
            never persisted).
        unit: distance unit of ε (default 1/√n; radians for Purkayastha).
        space: collection space ``"ip"``, ``"cosine"`` or ``"l2"``. Default (measured on
            SciFact, benchmarks/results/space.md): ``"ip"`` when the query transform is
            noise-aware (concept noise: dividing by ‖z‖ would rescale scores by the random
            noise norm), ``"cosine"`` for spherical mechanisms; L2 is worst in both cases.
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
    ) -> None:
        self._eps_given = eps is not None
        self.eps = DEFAULT_EPS if eps is None else check_positive_finite(eps, "eps")
        self._key = _key_bytes(key)
        self._key_source = "none" if self._key is None else ("parameter" if key is not None else "env")
        self._random = resolve_random_state(random_state)
        self.query = self._check_choice(query, "query", QUERY_POLICIES)
        query_eps = None if query_eps is None else check_positive_finite(query_eps, "query_eps")
        self.query_transform_kind = self._check_choice(query_transform, "query_transform", QUERY_TRANSFORMS)
        space = None if space is None else self._check_choice(space, "space", SPACES)
        if self.query == "keyed" and self._key is None:
            raise InvalidParameterError("key", f"a secret (parameter or env {KEY_ENV}) for query='keyed'", None)
        self.encoder = load_encoder(model)
        self.dim = int(self.encoder.dim)
        self.unit = 1.0 / math.sqrt(self.dim) if unit is None else check_positive_finite(unit, "unit")
        self.concept = _load_concept(concept, self.encoder)
        if self.concept is not None and hasattr(self.concept, "check_encoder"):
            self.concept.check_encoder(self.encoder)
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
        self._context: bytes | None = None
        self._context_lock = threading.Lock()
        remember_live(self.get_config(), self)  # a rebuild of this exact config in this process returns self

    # -- construction helpers -----------------------------------------------------------------
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

    def _build_mechanism(self, mechanism: Any, eps: float) -> tuple[Any, Mechanism]:
        """(JSON-safe reference, mechanism instance) for ``mechanism``: see
        :func:`private_vectors.mechanisms.factory.build_mechanism`."""
        return build_mechanism(mechanism, eps=eps, eps_given=self._eps_given, unit=self.unit, dim=self.dim,
                               concept=self.concept, random_state=self._random)

    # -- identity / config ----------------------------------------------------------------------
    def _concept_reference(self) -> Any:
        if self.concept is None:
            return None
        ref = self.concept.reference()
        return json.loads(canonical(ref))

    def _encoder_config(self) -> dict[str, Any]:
        cfg = dict(self.encoder.get_config())
        return {"config": cfg, "model_id": self.encoder.model_id, "dim": self.dim}

    def keyed_context(self) -> bytes:
        """Encoder identity ‖ mechanism config: the context of keyed noise (no text, no key)."""
        with self._context_lock:
            if self._context is None:
                enc = {"model_id": self.encoder.model_id, "dim": self.dim,
                       "normalize": bool(getattr(self.encoder, "normalize", True))}
                mech = {"mechanism": self._mechanism_ref, "eps": self.eps, "unit": self.unit,
                        "concept": self._concept_reference()}
                self._context = canonical(enc) + b"\x00" + canonical(mech)
            return self._context

    def get_config(self) -> dict[str, Any]:
        """Everything needed to rebuild this function (never the key, never a seed)."""
        cfg: dict[str, Any] = {
            "config_version": CONFIG_VERSION,
            "library_version": __version__,
            "encoder": self._encoder_config(),
            "concept": self._concept_reference(),
            "mechanism": self._mechanism_ref,
            "eps": self.eps,
            "unit": self.unit,
            "out_dim": self.out_dim,
            "query": self.query,
            "query_eps": self.query_eps,
            "query_transform": self.query_transform_kind,
            "space": self.space,
            "keyed": self._key is not None,
            "seeded": bool(self._random.seeded),
        }
        if self._key is not None:
            cfg["key_id"] = _key_id(self._key)
        return cfg

    @staticmethod
    def name() -> str:
        return CHROMA_NAME

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> PrivateEmbedding:
        """Rebuild from :meth:`get_config` (the key comes from ``PRIVATE_VECTORS_KEY``)."""
        validate_config(config)
        cached = cached_build(config)
        if cached is not None:
            return cached
        ef = PrivateEmbedding(**rebuild_arguments(config))
        ef._expected_keyed = bool(config.get("keyed"))
        ef._expected_key_id = config.get("key_id")
        remember_build(config, ef)
        return ef

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

    def __repr__(self) -> str:
        concept = None if self.concept is None else getattr(self.concept, "name", "concept")
        keyed = "keyed" if self._key is not None else "fresh noise"
        return (f"PrivateEmbedding(concept={concept!r}, eps={self.eps:g}, model={self.encoder.model_id!r}, "
                f"mechanism={self.mechanism.name!r}, query={self.query!r}, "
                f"query_transform={self.query_transform_kind!r}, space={self.space!r}, {keyed})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivateEmbedding):
            return NotImplemented
        return all(self.get_config().get(f) == other.get_config().get(f) for f in DRIFT_FIELDS)

    __hash__ = object.__hash__

    # -- the verbs --------------------------------------------------------------------------------
    def _check_key_for_documents(self) -> None:
        check_key_matches(self._key, expected_keyed=getattr(self, "_expected_keyed", False),
                          expected_key_id=getattr(self, "_expected_key_id", None))

    def _encode(self, texts: Any, name: str) -> tuple[list[str], np.ndarray]:
        items = check_texts(texts, name)
        if not items:
            return items, np.zeros((0, self.dim), dtype=np.float64)
        X = np.asarray(self.encoder.encode(items))
        mat, _ = as_float_matrix(X, f"model({name})", dim=self.dim)
        if mat.shape[0] != len(items):
            raise InvalidParameterError(f"model({name})", f"{len(items)} rows", mat)
        return items, mat

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Perturbed document vectors, float32 (m, out_dim). All checks run before any output."""
        self._check_key_for_documents()
        items, X = self._encode(texts, "texts")
        if not items:
            return np.zeros((0, self.out_dim), dtype=np.float32)
        if self._key is None:
            out = self.mechanism.perturb(X, rng=self._random.source())
        else:
            ctx = self.keyed_context()
            out = np.vstack([
                np.atleast_2d(self.mechanism.perturb(X[i], rng=keyed_stream(self._key, b"doc", ctx,
                                                                            t.encode("utf-8"))))
                for i, t in enumerate(items)
            ])
        out = np.asarray(out, dtype=np.float32)
        if not np.all(np.isfinite(out)):
            raise InvalidParameterError("texts", "texts whose perturbed vectors are finite", items[:3])
        return out

    def embed_query_array(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, float32 (m, out_dim): encode → ``mechanism.transform_query`` → the
        query policy's noise → the noise-aware query transform."""
        items, X = self._encode(texts, "queries")
        if not items:
            return np.zeros((0, self.out_dim), dtype=np.float32)
        Q = np.atleast_2d(np.asarray(self.mechanism.transform_query(X), dtype=np.float64))
        qm = self._query_mechanism
        if self.query == "noised" and qm is not None:
            Q = np.atleast_2d(qm.perturb(Q, rng=self._random.source())).astype(np.float64)
        elif self.query == "keyed" and qm is not None:
            assert self._key is not None
            ctx = self.keyed_context()
            Q = np.vstack([np.atleast_2d(qm.perturb(Q[i], rng=keyed_stream(self._key, b"query", ctx,
                                                                           t.encode("utf-8"))))
                           for i, t in enumerate(items)]).astype(np.float64)
        return np.asarray(self.query_transform.apply(Q), dtype=np.float32)

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
            "keyed": self._key is not None,
            "key_source": self._key_source,
            "randomness": desc.get("randomness", "seeded: for testing only" if self._random.seeded
                                   else "secure: OS entropy (secrets) per call"),
        }
        if self._key is None and self.mechanism.name != "none":
            report["warning"] = ("no key: each call draws fresh noise, so re-ingesting the same text k times stores k "
                                 "independent noisy copies whose average has about 1/sqrt(k) of the noise. Set a key "
                                 f"(key=... or {KEY_ENV}) to make re-ingestion give the identical vector.")
        if self.mechanism.name == "none":
            report["warning"] = "mechanism 'none': vectors are stored as encoded; no privacy"
        return json.loads(canonical(report).decode("utf-8"))

    def privacy_report_text(self, texts: Sequence[str] | None = None) -> str:
        """:meth:`privacy_report` as indented JSON."""
        return json.dumps(self.privacy_report(texts), indent=2)


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
