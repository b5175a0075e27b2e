"""Fitted concepts: the artefact that tells a mechanism where a concept lives for one encoder.

A :class:`FittedConcept` saves to a folder with two files and nothing else:

* ``config.json`` — format tag and version, concept name and spec, estimator kind and its
  hyperparameters, the encoder fingerprint (model id, dimension, canary embeddings),
  the subspace's trace share, the library version, and the SHA-256 of the weights file;
* ``model.safetensors`` — ``mask`` (n,) for the SPARSE estimator or ``basis`` (n, k) for a
  concept subspace, float32. No pickle anywhere.

Built-in concepts ship pre-fitted for the default model under
``private_vectors/data/concepts/<model_id>/<concept>/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .._files import TMP, commit_pair, finish_pair, sha256_file
from .._files import fsync_path as _fsync
from .._version import __version__
from ..errors import ArtefactError, ConfigMismatchError, InvalidParameterError, InvalidTypeError
from .mask import SparseMask
from .spec import BUILTIN_CONCEPTS, Concept, builtin_concept, canonical_builtin
from .subspace import ConceptSubspace

__all__ = ["ESTIMATORS", "FittedConcept", "fit_concept", "load_concept", "shipped_artefact"]

log = logging.getLogger(__name__)

FORMAT = "private_vectors.fitted_concept"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
ESTIMATORS = ("subspace", "mask")
MASK_SUBSPACE_THRESHOLD = 0.5
"""Mask coordinates above this value form a mask's noise subspace (:meth:`FittedConcept.noise_subspace`)."""


def reference_target(ref: dict[str, Any], *, what: str) -> tuple[str, str]:
    """(kind, target) of a stored concept reference ``{"type": "builtin", "name": ...}`` or
    ``{"type": "path", "path": ...}``; InvalidParameterError naming ``what`` otherwise."""
    kind = ref.get("type")
    target = ref.get("path") if kind == "path" else ref.get("name")
    if kind not in ("builtin", "path") or not target:
        raise InvalidParameterError("concept", f"{what} of type 'builtin' or 'path'", ref)
    return str(kind), str(target)


def check_content_hash(concept: Any, ref: dict[str, Any], *, what: str) -> None:
    """ConfigMismatchError when ``ref`` records a content hash that ``concept`` no longer has."""
    want = ref.get("sha256")
    got = concept.content_sha256()
    if want and got != want:
        target = ref.get("path") or ref.get("name")
        raise ConfigMismatchError(f"{what} {target!r}: content hash {got[:12]}… differs from the recorded "
                                  f"{str(want)[:12]}… (the artefact changed since the config was written)")


def read_artefact_config(path: Path, *, kind: str, fmt: str, fmt_version: int,
                         require_weights_sha256: bool = False) -> dict[str, Any]:
    """The checked ``config.json`` of a saved artefact folder (``config.json`` + ``model.safetensors``).

    Args:
        path: the folder.
        kind: what the folder holds, for messages (``"fitted concept"``, ``"attribute concept"``).
        fmt: the ``format`` the config must name; fmt_version: the newest version this library reads.
        require_weights_sha256: a config without ``weights_sha256`` is refused (else the check
            runs only when the config records one).

    Raises:
        ArtefactError: a missing file, invalid JSON, a foreign or newer format, or weights whose
            SHA-256 differs from the recorded one.
    """
    cfg_path, w_path = path / CONFIG_FILE, path / WEIGHTS_FILE
    for f in (cfg_path, w_path):
        if not f.is_file():
            raise ArtefactError(f"{kind} {path}: missing file {f}")
    try:
        cfg = json.loads(cfg_path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtefactError(f"{kind}: {cfg_path} is not valid JSON ({exc})") from exc
    if not isinstance(cfg, dict) or cfg.get("format") != fmt:
        raise ArtefactError(f"{kind}: {cfg_path} is not a {fmt} config")
    if int(cfg.get("format_version", 0)) > fmt_version:
        raise ArtefactError(f"{kind}: {cfg_path} has format version {cfg.get('format_version')}, "
                            f"newer than this library supports ({fmt_version}); upgrade private-vectors")
    expected = cfg.get("weights_sha256")
    if (expected or require_weights_sha256) and sha256_file(w_path) != expected:
        raise ArtefactError(f"{kind}: {w_path} does not match the SHA-256 recorded in {cfg_path} "
                            "(corrupt, truncated or replaced)")
    return cfg


class FittedConcept:
    """A concept fitted for one encoder: a SPARSE mask or a concept subspace.

    Args:
        name: concept name.
        estimator: ``"mask"`` or ``"subspace"``.
        fingerprint: :func:`private_vectors.encoders.fingerprint` of the encoder it was fitted on.
        mask: (n,) values in [0, 1] (estimator ``"mask"``).
        basis: (n, k) orthonormal columns (estimator ``"subspace"``).
        share: trace share on span(basis) (estimator ``"subspace"``).
        config: the rest of the config (concept spec, estimator params, …), JSON-safe.

    Attributes:
        name, estimator, dim, fingerprint, mask, basis, share, config, source (where it came
        from: ``"builtin"``, ``"fitted-on-the-fly"``, a folder path, or None).
    """

    def __init__(self, *, name: str, estimator: str, fingerprint: dict[str, Any], mask: Any = None,
                 basis: Any = None, share: float | None = None, config: dict[str, Any] | None = None) -> None:
        if estimator not in ESTIMATORS:
            raise InvalidParameterError("estimator", f"one of {', '.join(ESTIMATORS)}", estimator)
        if not isinstance(fingerprint, dict) or "dim" not in fingerprint:
            raise InvalidTypeError("fingerprint", "an encoder fingerprint dict (encoders.fingerprint)", fingerprint)
        self.name = str(name)
        self.estimator = estimator
        self.fingerprint = fingerprint
        self.dim = int(fingerprint["dim"])
        self.config = dict(config or {})
        self.source: str | None = None
        self.mask: np.ndarray | None = None
        self.basis: np.ndarray | None = None
        self.share: float | None = None
        if estimator == "mask":
            arr = np.asarray(mask, dtype=np.float32) if mask is not None else None
            if arr is None or arr.shape != (self.dim,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise InvalidParameterError("mask", f"a finite, non-negative vector of shape ({self.dim},)", mask)
            self.mask = arr
        else:
            arr = np.asarray(basis, dtype=np.float32) if basis is not None else None
            if arr is None or arr.ndim != 2 or arr.shape[0] != self.dim or not 1 <= arr.shape[1] < self.dim \
                    or not np.all(np.isfinite(arr)):
                raise InvalidParameterError("basis", f"a finite matrix of shape ({self.dim}, k), 1 <= k < {self.dim}",
                                            basis)
            if share is None or not 0 < float(share) < 1:
                raise InvalidParameterError("share", "a number in (0, 1)", share)
            self.basis = arr
            self.share = float(share)

    def __repr__(self) -> str:
        detail = (f"rank={self.basis.shape[1]}, share={self.share}" if self.basis is not None
                  else f"active={int(np.sum(self.mask > MASK_SUBSPACE_THRESHOLD))}")  # type: ignore[operator]
        return (f"FittedConcept({self.name!r}, estimator={self.estimator!r}, model={self.fingerprint.get('model_id')!r}, "
                f"dim={self.dim}, {detail})")

    # -- use ------------------------------------------------------------------------------------
    def mechanism(self, *, epsilon: float, unit: float = 1.0, random_state: Any = None) -> Any:
        """The Mahalanobis mechanism this concept calls for.

        A mask gives Σ = diag(m + δ) normalised to trace n (SPARSE §3.2); a subspace gives
        Σ = a·VVᵀ + b·(I − VVᵀ) with ``share`` of the trace on V.
        """
        from ..mechanisms import MahalanobisMechanism

        if self.estimator == "mask":
            return MahalanobisMechanism(epsilon=epsilon, sigma=self.mask, unit=unit, random_state=random_state)
        return MahalanobisMechanism.from_subspace(epsilon=epsilon, basis=self.basis, share=float(self.share or 0.9), unit=unit,
                                                  random_state=random_state)

    def noise_subspace(self) -> np.ndarray:
        """Orthonormal (n, k) basis of where the noise concentrates (for query transforms).

        For a subspace: V. For a mask: the coordinate axes whose mask value exceeds 0.5 (at
        least the single largest, at most n − 1), largest first.
        """
        if self.basis is not None:
            Q, _ = np.linalg.qr(self.basis.astype(np.float64))
            return Q
        assert self.mask is not None
        order = np.argsort(-self.mask, kind="stable")
        k = int(np.clip(np.sum(self.mask > MASK_SUBSPACE_THRESHOLD), 1, self.dim - 1))
        return np.eye(self.dim)[:, order[:k]]

    def check_encoder(self, encoder: Any) -> None:
        """Refuse an encoder other than the one this concept was fitted on.

        Raises:
            ConfigMismatchError: naming both models and dimensions.
        """
        from ..encoders import fingerprint, fingerprints_match

        theirs = encoder if isinstance(encoder, dict) else fingerprint(encoder)
        ok, why = fingerprints_match(self.fingerprint, theirs)
        if not ok:
            raise ConfigMismatchError(
                f"concept {self.name!r} was fitted on model {self.fingerprint.get('model_id')!r} "
                f"(dim {self.dim}) but the encoder is {theirs.get('model_id')!r} (dim {theirs.get('dim')}): {why}. "
                "Re-fit it for this model: private-vectors concept fit --concept ... --model ...")

    def content_sha256(self) -> str:
        """A hash of what matters for the noise: name, estimator, dim, share and the weights."""
        h = hashlib.sha256()
        head = {"name": self.name, "estimator": self.estimator, "dim": self.dim, "share": self.share}
        h.update(json.dumps(head, sort_keys=True).encode())
        arr = self.mask if self.mask is not None else self.basis
        h.update(np.ascontiguousarray(arr, dtype="<f4").tobytes())
        return h.hexdigest()

    def reference(self) -> dict[str, Any]:
        """JSON-safe reference for configs: built-in name or folder path, plus the content hash.

        :func:`load_concept` accepts this dict back and checks the hash.
        """
        ref: dict[str, Any] = {"name": self.name, "estimator": self.estimator, "model_id":
                               self.fingerprint.get("model_id"), "dim": self.dim, "sha256": self.content_sha256()}
        if self.source in ("builtin", "fitted-on-the-fly"):
            ref["type"] = "builtin"
            ref["origin"] = self.source
        elif self.source:
            ref["type"] = "path"
            ref["path"] = self.source
        else:
            ref["type"] = "inline"
        return ref

    # -- persistence ----------------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """The ``config.json`` content (without the weights hash, added by :meth:`save`)."""
        cfg = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "estimator": self.estimator,
            "dim": self.dim,
            "share": self.share,
            "rank": None if self.basis is None else int(self.basis.shape[1]),
            "fingerprint": self.fingerprint,
            "library_version": __version__,
        }
        for key, value in self.config.items():
            cfg.setdefault(key, value)
        return cfg

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``config.json`` + ``model.safetensors`` into ``folder`` (created if needed).

        Crash-safe: both files are written to ``*.tmp`` and synced, then moved into place
        weights first; :meth:`load` finishes or discards an interrupted save. A failure at any
        point leaves the previous artefact or this one, never a mixed or truncated pair.
        """
        from safetensors.numpy import save_file

        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        w_tmp, cfg_tmp = path / (WEIGHTS_FILE + TMP), path / (CONFIG_FILE + TMP)
        try:
            tensors = {"mask": self.mask} if self.mask is not None else {"basis": self.basis}
            save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
                      str(w_tmp), metadata={"format": FORMAT, "name": self.name})
            cfg = self.to_config()
            cfg["weights_sha256"] = sha256_file(w_tmp)
            cfg.setdefault("created", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            cfg_tmp.write_text(json.dumps(cfg, indent=1, sort_keys=False) + "\n", "utf-8")
            _fsync(w_tmp)
            _fsync(cfg_tmp)
        except BaseException:
            w_tmp.unlink(missing_ok=True)
            cfg_tmp.unlink(missing_ok=True)
            raise
        commit_pair(path, WEIGHTS_FILE, CONFIG_FILE)  # from the first move on, load() completes the save
        return path

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> FittedConcept:
        """Load a saved concept; any missing, corrupt, truncated or foreign file raises ArtefactError."""
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        path = Path(folder)
        with contextlib.suppress(OSError):  # read-only folder (e.g. packaged artefacts): load what is there
            finish_pair(path, WEIGHTS_FILE, CONFIG_FILE)  # an interrupted save: finished or discarded
        cfg = read_artefact_config(path, kind="fitted concept", fmt=FORMAT, fmt_version=FORMAT_VERSION)
        cfg_path, w_path = path / CONFIG_FILE, path / WEIGHTS_FILE
        try:
            tensors = load_file(str(w_path))
        except (SafetensorError, OSError, ValueError, TypeError) as exc:
            raise ArtefactError(f"fitted concept: {w_path} is not a readable safetensors file ({exc})") from exc
        known = {"format", "format_version", "name", "estimator", "dim", "share", "rank", "fingerprint",
                 "library_version", "weights_sha256"}
        try:
            fc = cls(name=cfg["name"], estimator=cfg["estimator"], fingerprint=cfg["fingerprint"],
                     mask=tensors.get("mask"), basis=tensors.get("basis"), share=cfg.get("share"),
                     config={k: v for k, v in cfg.items() if k not in known})
        except (KeyError, InvalidParameterError, InvalidTypeError) as exc:
            raise ArtefactError(f"fitted concept {path}: {cfg_path} and {w_path} are inconsistent ({exc})") from exc
        if "dim" in cfg and cfg["dim"] != fc.dim:
            raise ArtefactError(f"fitted concept {path}: {cfg_path} says dim={cfg['dim']!r} but its encoder "
                                f"fingerprint and weights have dimension {fc.dim}")
        fc.source = str(path.resolve())
        return fc


# -- fitting ------------------------------------------------------------------------------------
def _estimator(estimator: Any, params: dict[str, Any]) -> SparseMask | ConceptSubspace:
    if isinstance(estimator, (SparseMask, ConceptSubspace)):
        return estimator
    if estimator == "mask":
        return SparseMask(**params)
    if estimator == "subspace":
        return ConceptSubspace(**params)
    raise InvalidParameterError("estimator", "'subspace', 'mask', or a SparseMask / ConceptSubspace", estimator)


def fit_concept(concept: Concept | str, encoder: Any = None, estimator: Any = "subspace", *, n_pairs: int | None = None,
                random_state: Any = 0, show_progress: bool = True, embeddings: tuple[Any, Any] | None = None,
                **params: Any) -> FittedConcept:
    """Fit a concept for an encoder.

    Args:
        concept: a :class:`Concept` or a built-in name.
        encoder: anything :func:`private_vectors.encoders.load_encoder` accepts (default model when None).
        estimator: ``"subspace"`` (default), ``"mask"``, or a configured estimator instance.
        n_pairs: pairs to generate (default: the concept's default size / all its data).
        random_state: seed of pair sampling and of the mask's training (an int by default so
            artefacts are reproducible — fitting is not privacy noise).
        show_progress: progress bars (encoding and mask training).
        embeddings: precomputed (Φ(D⁺), Φ(D⁻)) for the concept's pairs, to skip encoding.
        **params: estimator hyperparameters (e.g. ``rank=32, share=0.8`` or ``l0_lambda=1.0``).
    """
    from ..encoders import fingerprint, load_encoder

    if isinstance(concept, str):
        concept = builtin_concept(concept)
    if not isinstance(concept, Concept):
        raise InvalidTypeError("concept", "a Concept or a built-in concept name", concept)
    enc = load_encoder(encoder)
    if isinstance(estimator, str) and estimator == "mask":
        params.setdefault("show_progress", show_progress)
        params.setdefault("random_state", random_state)
    est = _estimator(estimator, params)
    pairs = concept.pairs(n_pairs, random_state=random_state)
    if embeddings is None:
        log.info("encoding %d concept pairs with %s", len(pairs), enc.model_id)
        pos = enc.encode(pairs.positive)
        neg = enc.encode(pairs.negative)
    else:
        pos, neg = embeddings
    weights: dict[str, Any]
    extra: dict[str, Any]
    if isinstance(est, SparseMask):
        est.fit(pos, neg)
        kind, weights = "mask", {"mask": est.mask_}
        extra = {"epochs": est.n_epochs_, "expected_l0": est.expected_l0_}
    else:
        est.fit(pos, neg, groups=pairs.removed)
        kind, weights = "subspace", {"basis": est.basis_, "share": est.share}
        extra = {"method_used": est.method_, "classes": est.n_classes_, "explained": round(est.explained_, 6)}
    config = {"concept": concept.spec, "estimator_params": est.get_params(), "fit": dict(extra, pairs=len(pairs))}
    fc = FittedConcept(name=concept.name, estimator=kind, fingerprint=fingerprint(enc), config=config, **weights)
    return fc


# -- loading ------------------------------------------------------------------------------------
def shipped_artefact(name: str, model_id: str, estimator: str | None = None) -> Path | None:
    """Folder of the pre-fitted artefact of a built-in concept for ``model_id``, if shipped.

    ``data/concepts/<model_id>/<concept>/`` holds the concept's default estimator; another
    estimator, when shipped too, sits in the sub-folder ``<concept>/<estimator>/``.
    """
    path = Path(str(resources.files("private_vectors").joinpath("data", "concepts", model_id, name)))
    if not (path / CONFIG_FILE).is_file():
        return None
    if estimator is None:
        return path
    try:
        default_kind = json.loads((path / CONFIG_FILE).read_text("utf-8")).get("estimator")
    except (OSError, json.JSONDecodeError):
        default_kind = None
    if default_kind == estimator:
        return path
    alt = path / estimator
    return alt if (alt / CONFIG_FILE).is_file() else None


_ON_THE_FLY: dict[tuple[str, str, str, int], FittedConcept] = {}
# Process-wide: a built-in noise concept fitted on the fly (an encoder without a shipped artefact,
# asked for by noise_concept=) is fitted once per process, not per embedding or rebuild
# (tests/test_process_state.py::test_a_noise_concept_fitted_on_the_fly_is_fitted_once).
_LOCK = threading.Lock()


def _builtin_for(name: str, enc: Any, estimator: str | None = None) -> FittedConcept:
    from ..encoders import fingerprint

    if estimator is not None and estimator not in ESTIMATORS:
        raise InvalidParameterError("estimator", f"None or one of {', '.join(ESTIMATORS)}", estimator)
    fp = fingerprint(enc)
    shipped = shipped_artefact(name, enc.model_id, estimator)
    if shipped is not None:
        fc = FittedConcept.load(shipped)
        try:
            fc.check_encoder(fp)
            fc.source = "builtin"
            return fc
        except ConfigMismatchError as exc:
            log.warning("shipped artefact for %s does not fit this encoder (%s); fitting on the fly", name, exc)
    kind = estimator or "subspace"
    key = (name, kind, fp["canary_sha256"], int(fp["dim"]))
    with _LOCK:
        if key not in _ON_THE_FLY:
            params: dict[str, Any] = {"rank": min(64, max(1, enc.dim // 6))} if kind == "subspace" else {}
            log.warning("no pre-fitted %r concept (%s) for model %r: fitting it on the fly from the built-in "
                        "generator (1000 pairs, deterministic, seed 0) %s", name, kind, enc.model_id, params)
            fc = fit_concept(builtin_concept(name), enc, kind, n_pairs=1000, random_state=0,
                             show_progress=False, **params)
            fc.source = "fitted-on-the-fly"
            _ON_THE_FLY[key] = fc
        return _ON_THE_FLY[key]


def load_concept(ref: Any, encoder: Any = None, *, estimator: str | None = None) -> FittedConcept:
    """Resolve a concept reference for an encoder and check that they belong together.

    Args:
        ref: a built-in name (:data:`BUILTIN_CONCEPTS`, case-insensitive: the shipped artefact
            when one exists for this encoder, else a subspace fitted on the fly from the built-in
            generator, with a logged warning; a name wins over a same-named folder, write
            ``./PII`` for the folder), a folder saved by :meth:`FittedConcept.save`, a
            :class:`FittedConcept`, or a dict from :meth:`FittedConcept.reference` (its hash is checked).
        encoder: the encoder in use (anything ``load_encoder`` accepts; None = default model).
        estimator: for a built-in name only: ``"subspace"`` or ``"mask"`` instead of the
            concept's default (the shipped variant when there is one, else fitted on the fly).

    Raises:
        InvalidParameterError: unknown name (the message lists the built-ins).
        ArtefactError: unreadable artefact folder.
        ConfigMismatchError: the artefact was fitted on another encoder, or a reference's hash differs.
    """
    from ..encoders import load_encoder

    enc = load_encoder(encoder)
    if isinstance(ref, FittedConcept):
        ref.check_encoder(enc)
        return ref
    if isinstance(ref, dict):
        kind, target = reference_target(ref, what="a reference dict")
        fc = load_concept(target, enc, estimator=ref.get("estimator") if kind == "builtin" else None)
        check_content_hash(fc, ref, what="concept")
        return fc
    if isinstance(ref, str) and ref.strip().lower() in {b.lower() for b in BUILTIN_CONCEPTS}:
        return _builtin_for(canonical_builtin(ref), enc, estimator)  # a built-in name wins over a same-named folder
    if isinstance(ref, os.PathLike) or (isinstance(ref, str) and (os.sep in ref or "/" in ref or Path(ref).is_dir())):
        fc = FittedConcept.load(Path(ref))
        fc.check_encoder(enc)
        return fc
    if isinstance(ref, str):
        return _builtin_for(canonical_builtin(ref), enc, estimator)
    raise InvalidTypeError("concept", f"a built-in name ({', '.join(BUILTIN_CONCEPTS)}), a folder path, "
                           "a FittedConcept or a reference dict", ref)
