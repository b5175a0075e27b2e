"""The persisted configuration of a ``PrivateEmbedding``: what is stored, how it is checked.

A Chroma collection or FAISS index keeps ``PrivateEmbedding.get_config()`` next to the
vectors. This module holds what reads and checks that record without building anything:

* the fields whose change alters what stored vectors mean (:data:`DRIFT_FIELDS`) and the
  check that refuses a mismatch on reopen (:func:`check_config_compatible`);
* :func:`validate_config` and :func:`rebuild_arguments` (a stored config → constructor
  arguments), plus the per-process build cache Chroma's repeated rebuilds go through;
* the key helpers: the environment variable's bytes (:func:`env_bytes`),
  a key's short check value (:func:`_key_id`) and the reopen check (:func:`check_key_matches`).
  No key material is ever written to a config.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
from typing import Any

from .errors import (
    ArtefactError,
    ConfigMismatchError,
    InvalidTypeError,
)

__all__ = [
    "CHROMA_NAME",
    "CONFIG_VERSION",
    "DRIFT_FIELDS",
    "KEY_ENV",
    "canonical",
    "check_config_compatible",
    "check_key_matches",
    "env_bytes",
    "rebuild_arguments",
    "validate_config",
]

CHROMA_NAME = "private_vectors"
"""The stable name under which ``PrivateEmbedding`` is registered with Chroma."""
KEY_ENV = "PRIVATE_VECTORS_KEY"
"""Environment variable holding the key when none is passed."""
CONFIG_VERSION = 1
DRIFT_FIELDS = ("encoder", "mechanism", "eps", "unit", "concept", "space", "keyed", "erasure", "sanitizer",
                "store_geometry")
"""Fields whose change alters what the stored vectors mean: a reopened collection must agree."""


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, no spaces; non-JSON values as ``str``)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8")


# -- keys ----------------------------------------------------------------------------------------
def env_bytes(name: str) -> bytes | None:
    """An environment variable's bytes as the OS holds them: nothing to decode, so a non-UTF-8
    value cannot raise an error that would hold it (``os.environ`` on Windows: UTF-8 or None)."""
    environb = getattr(os, "environb", None)
    if environb is not None:
        return environb.get(name.encode())
    value = os.environ.get(name)  # pragma: no cover - Windows
    if value is None:  # pragma: no cover
        return None
    try:  # pragma: no cover
        return value.encode("utf-8")
    except UnicodeEncodeError:  # pragma: no cover
        pass
    return b"\x00invalid"  # pragma: no cover - refused as a key without echoing the value


def _key_id(key: bytes) -> str:
    """A short check value of the key (HMAC of a fixed label), to detect a wrong key on reopen."""
    return hmac.new(key, b"private_vectors/key-id/v1", hashlib.sha256).hexdigest()[:8]


def check_key_matches(key: bytes | None, *, expected_keyed: bool, expected_key_id: str | None) -> None:
    """Refuse to add documents to a keyed collection without its key, or with another key.

    Raises:
        ConfigMismatchError: the collection was written with keyed noise and ``key`` is
            missing or has a different check value.
    """
    if not expected_keyed:
        return
    if key is None:
        raise ConfigMismatchError(
            f"this collection was written with keyed noise; set {KEY_ENV} to the same key before adding "
            "documents (fresh noise on re-ingested texts would let an attacker average copies)")
    if not expected_key_id:
        raise ConfigMismatchError("this collection's key check value is missing; the config was edited or truncated")
    if not hmac.compare_digest(_key_id(key), expected_key_id):
        raise ConfigMismatchError(f"the key in {KEY_ENV} is not the key this collection was written with")


def comparable_config(stored: dict[str, Any], embedding: Any) -> dict[str, Any]:
    """``stored`` seen the way ``embedding`` records itself, so :func:`check_config_compatible`
    compares a config written by an earlier version with a current one: its text stage's token
    lists, patterns and allow list hidden the way ``embedding``'s text stage hides its own
    (keyed HMACs), and a noise concept recorded beside spherical noise (versions before 0.2
    recorded one for ``concept="PII"``) left out when ``embedding`` has none (binding adopts it:
    :meth:`~private_vectors.pipeline.Pipeline.bind`)."""
    if not isinstance(stored, dict):
        return stored
    out = dict(stored)
    pipeline = getattr(embedding, "pipeline", None)
    if (isinstance(out.get("concept"), dict) and out.get("mechanism") in SPHERICAL_NAMES
            and pipeline is not None and pipeline.concept_reference() is None):
        out["concept"] = None
    hide = getattr(getattr(embedding, "sanitizer", None), "hide_config", None)
    if callable(hide) and isinstance(out.get("sanitizer"), dict):
        out["sanitizer"] = hide(out["sanitizer"])
    return out


SPHERICAL_NAMES = ("laplace", "purkayastha", "gaussian", "none")
"""Mechanisms whose noise is the same in every direction (a recorded noise concept changes nothing)."""


# -- drift -----------------------------------------------------------------------------------------
def check_config_compatible(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Raise :class:`ConfigMismatchError` when two PrivateEmbedding configs disagree on what
    stored vectors mean (encoder, mechanism, ε, unit, concept, space, keyed, sanitizer)."""
    diffs = []
    for field in DRIFT_FIELDS:
        a, b = old.get(field), new.get(field)
        if field == "encoder":
            a = None if a is None else (a.get("model_id"), a.get("dim"))
            b = None if b is None else (b.get("model_id"), b.get("dim"))
        elif field in ("eps", "unit") and a is not None and b is not None:
            if math.isclose(float(a), float(b), rel_tol=1e-9):
                continue
        elif field in ("concept", "erasure"):
            a, b = _concept_identity(a), _concept_identity(b)
        elif field == "store_geometry":  # absent = "none" (written before it existed)
            a, b = _geometry_identity(a), _geometry_identity(b)
        elif field == "sanitizer":
            if sanitizer_upgrade(a, b):  # a newer text stage: only what the user chose must agree
                a, b = ({k: v for k, v in c.items() if k not in UPGRADED_FIELDS} for c in (a, b))
            a, b = _without_versions(a), _without_versions(b)
            if a != b:  # name what differs, never the values (HMACs of what a user asked to hide)
                diffs.append(f"sanitizer: differs in {_differing_keys(a, b)}{_detector_note(a, b)}")
            continue
        if a != b:
            diffs.append(f"{field}: stored {a!r}, given {b!r}")
    if diffs:
        raise ConfigMismatchError(
            "the PrivateEmbedding does not match the one this collection/index was written with — "
            + "; ".join(diffs) + ". Reopen it without an embedding function to rebuild the stored one, "
            "or write to a new collection.")


def _detector_note(stored: Any, given: Any) -> str:
    """What to pass when the text stage's ``detector`` differs (absent: ``"rules"``, as written
    before the learned tagger became the default): a store keeps the detector it was written with."""
    if not isinstance(stored, dict) or not isinstance(given, dict):
        return ""
    was, now = stored.get("detector", "rules"), given.get("detector", "rules")
    if was == now:
        return ""
    return (f" (detector: stored {was!r}, given {now!r}; pass PrivateEmbedding(detector={was!r}, ...) "
            "to write to it with the detection it was written with)")


def _geometry_identity(ref: Any) -> Any:
    if not isinstance(ref, dict):
        return "none" if ref in (None, "none") else ref
    bound = ref.get("M")
    return ref.get("kind", "none") if bound is None else f"{ref.get('kind')} (M={float(bound):.6g})"


UPGRADED_FIELDS = ("detectors", "timeout", "chunk_size", "ruleset", "rules", "precedence")
"""Sanitizer fields a newer text-stage version may change on its own (better recognizers and rules,
a default timeout): a store written by an older version is accepted and upgraded on its next write."""


def sanitizer_upgrade(stored: Any, given: Any) -> bool:
    """Whether ``given`` is a newer behaviour version of the text stage ``stored`` records."""
    if not isinstance(stored, dict) or not isinstance(given, dict):
        return False
    try:
        return int(stored.get("version", 0)) < int(given.get("version", 0))
    except (TypeError, ValueError):
        return False


def _without_versions(cfg: Any) -> Any:
    """A sanitizer config without its package-version entries: a detector upgrade may move a
    few spans but does not change what the stored text and vectors mean; a different policy,
    key, concept, entity set, threshold, allow list or surrogate pool does."""
    if isinstance(cfg, dict):
        return {k: _without_versions(v) for k, v in cfg.items()
                if "version" not in k.lower() and k not in ("library", "faults", *_RUNTIME_KEYS)}
    if isinstance(cfg, list):
        return [_without_versions(v) for v in cfg]
    return cfg


_RUNTIME_KEYS = ("timeout", "key_id", "key_salt", "key_check", "upgraded_from")
"""Sanitizer fields that do not change what stored text means: the detector time limit, the
key check value (each store has its own salt; the key itself is checked by ``Keying.bind``) and
the version a store was upgraded from."""


def _differing_keys(a: Any, b: Any) -> list[str]:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return ["the text stage (one side has none)" if (a is None) != (b is None) else "its type"]
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _concept_identity(ref: Any) -> Any:
    if isinstance(ref, dict):
        return ref.get("sha256") or ref.get("fingerprint") or ref.get("name") or canonical(ref).decode()
    return ref


# -- rebuilding ------------------------------------------------------------------------------------
def validate_config(config: dict[str, Any]) -> None:
    """Refuse anything that is not a config written by ``PrivateEmbedding.get_config()``."""
    if not isinstance(config, dict):
        raise InvalidTypeError("config", "a PrivateEmbedding config dict", config)
    missing = [k for k in ("encoder", "mechanism", "eps", "unit") if k not in config]
    if missing:
        raise ArtefactError(f"PrivateEmbedding config is missing {missing}; it was not written by get_config()")


def rebuild_arguments(config: dict[str, Any]) -> dict[str, Any]:
    """``PrivateEmbedding`` keyword arguments that rebuild a stored config (the key is not one).

    Raises:
        ArtefactError: the config records a mechanism instance or a callable encoder, which
            cannot be rebuilt from JSON.
    """
    validate_config(config)
    mech = config["mechanism"]
    if isinstance(mech, dict):
        if mech.get("type") == "learned":
            mech = mech.get("name") or mech["path"]  # a shipped artefact by name: portable across installs
        else:
            raise ArtefactError(
                f"this collection was written with a {mech.get('class')} instance that cannot be rebuilt from "
                "its config; pass the same PrivateEmbedding(mechanism=...) as embedding_function")
    enc_cfg = config["encoder"]["config"]
    if enc_cfg.get("type") == "callable":
        raise ArtefactError(f"this collection was written with a callable encoder ({enc_cfg.get('model')!r}) "
                            "that cannot be rebuilt from its config; pass the same PrivateEmbedding")
    return {
        "noise_concept": config.get("concept"), "erase": config.get("erasure"),
        "eps": config["eps"], "model": enc_cfg, "mechanism": mech,
        "query": config.get("query", "clean"), "query_eps": config.get("query_eps"),
        "query_transform": config.get("query_transform", "auto"), "unit": config["unit"],
        "space": config.get("space"),
        "store_geometry": config.get("store_geometry") or "none",  # absent: written before it existed
        # a config written before the text stage existed had none: rebuild it without one
        "sanitize": config.get("sanitizer"),
    }
