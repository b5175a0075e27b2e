"""Attribute concepts: what no span shows (sex, age band, …), removed from vectors by erasure.

:func:`fit_attribute` embeds (texts, labels), splits them into a fitting part and a
held-out part, fits an eraser (:mod:`private_vectors.fitted.erasure`) on the fitting part
and measures, on the held-out part, attackers retrained on the erased vectors (logistic
and MLP, cross-validated). The result is an :class:`AttributeConcept`, saved as a folder
with ``config.json`` (attribute, classes, method, parameters, encoder fingerprint,
held-out attacker accuracy, library version, weights hash) and ``model.safetensors`` (the
eraser's affine steps), written atomically. Loading needs numpy and safetensors only.

Built-ins ``"sex"`` and ``"age_band"`` ship for the default model, one artefact per method
in :data:`BUILTIN_METHODS`: LEACE under ``private_vectors/data/concepts/all-MiniLM-L6-v2/<name>/``
(fitted on Pri-DDXPlus, CC BY 4.0; rebuilt with ``benchmarks/attribute_erasure.py
--build-builtins``) and cluster-LEACE under ``<name>/cluster-leace/`` (fitted on generated
clinical notes, :mod:`private_vectors.eval.vignettes`, from the identities the attacker
benchmark never scores; rebuilt with ``benchmarks/attribute_attackers.py --build-builtins``).

:data:`DEFAULT_METHOD` is what ``erase="sex"`` and :func:`fit_attribute` use when no method is
named: the method :func:`~private_vectors.fitted.measured.choose_method` picks from the measured
table (the lowest strongest retrained attacker among the methods that keep 0.9× LEACE's
retrieval and 0.9× the task accuracy).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .._files import sha256_file
from .._validation import as_float_matrix, check_probability, check_texts
from .._version import __version__
from ..errors import ArtefactError, ConfigMismatchError, InvalidParameterError, InvalidTypeError
from .artefact import check_content_hash, read_artefact_config, reference_target
from .erase import (
    BUILTIN_ATTRIBUTES,
    BUILTIN_METHODS,
    DEFAULT_METHOD,
    ErasureSpec,
    check_erase,
    resolve_erase,
)
from .erasure import ERASURE_METHODS, Step, apply_steps, encode_labels, make_erasure

__all__ = ["BUILTIN_ATTRIBUTES", "BUILTIN_METHODS", "DEFAULT_METHOD", "AttributeConcept", "fit_attribute",
           "is_attribute_folder", "load_attribute"]

FORMAT = "private_vectors.attribute_concept"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


class AttributeConcept:
    """An attribute (binary or categorical) erased from one encoder's vectors.

    Args:
        name: concept name (e.g. ``"sex"``).
        attribute: what the labels are.
        method: erasure method (:data:`~private_vectors.fitted.erasure.ERASURE_METHODS`).
        params: the eraser's hyperparameters.
        test_size: share of the data held out for the attacker measurement.
        random_state: seed of the split, k-means and attacker folds (fitting is not privacy noise).

    Attributes (after fit or load):
        classes_, steps_ (affine steps), fingerprint_ (encoder), evaluation_ (held-out attacker
        accuracies), n_samples_, source (built-in / folder / None).
    """

    def __init__(self, *, name: str = "attribute", attribute: str | None = None, method: str = DEFAULT_METHOD,
                 params: dict[str, Any] | None = None, test_size: float = 0.3, random_state: int = 0) -> None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidParameterError("name", "a non-empty string", name)
        if method not in ERASURE_METHODS:
            raise InvalidParameterError("method", f"one of {', '.join(ERASURE_METHODS)}", method)
        self.name = name
        self.attribute = attribute or name
        self.method = method
        self.params = dict(params or {})
        make_erasure(method, **self.params)  # validates the parameters now
        self.test_size = check_probability(test_size, "test_size")
        self.random_state = int(random_state)
        self.classes_: list[Any] = []
        self.steps_: list[Step] = []
        self.fingerprint_: dict[str, Any] | None = None
        self.evaluation_: dict[str, Any] = {}
        self.n_samples_ = 0
        self.extra_: dict[str, Any] = {}
        self.source: str | None = None

    def __repr__(self) -> str:
        model = (self.fingerprint_ or {}).get("model_id")
        return (f"AttributeConcept({self.name!r}, method={self.method!r}, classes={self.classes_!r}, model={model!r}, "
                f"rank={self.rank_})")

    @property
    def rank_(self) -> int:
        return int(sum(s[0].shape[1] for s in self.steps_))

    @property
    def dim(self) -> int:
        if self.fingerprint_ is None:
            raise InvalidParameterError("concept", "a fitted AttributeConcept", self)
        return int(self.fingerprint_["dim"])

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X: Any, labels: Any, *, encoder: Any = None, groups: Any = None,
            task_labels: Any = None) -> AttributeConcept:
        """Fit the eraser on a fitting split and measure attackers on the held-out split.

        Args:
            X: clean embeddings (m, n) of the texts.
            labels: the attribute per row (str or int classes, at least two).
            encoder: the encoder that produced X (its fingerprint is recorded; None: a
                fingerprint-less concept that cannot be saved).
            groups: optional ids (m,) kept on one side of the split (e.g. identical texts).
            task_labels: a task label per row (m,), for the methods that need one
                (``"region-leace"``, ``"task-projection"``); the fitted map does not.

        Returns:
            self.
        """
        from ..encoders import fingerprint, load_encoder
        from .probe import attribute_attack, majority_rate

        mat, _ = as_float_matrix(X, "X")
        codes, self.classes_ = encode_labels(labels, len(mat), "labels")
        if len(mat) < 20:
            raise InvalidParameterError("texts", "at least 20 labelled texts (a split and a held-out attack need them)",
                                        len(mat))
        units = np.arange(len(mat)) if groups is None else np.asarray(list(groups))
        if len(units) != len(mat):
            raise InvalidParameterError("groups", f"{len(mat)} group ids", groups, note=f"got {len(units)}")
        uniq = np.unique(units)
        rng = np.random.default_rng(self.random_state)
        rng.shuffle(uniq)
        held = set(uniq[: max(1, round(len(uniq) * self.test_size))].tolist())
        is_held = np.asarray([u in held for u in units])
        fit_idx, held_idx = np.flatnonzero(~is_held), np.flatnonzero(is_held)
        y = np.asarray(self.classes_, dtype=object)[codes]
        if len(set(codes[fit_idx].tolist())) < 2:
            raise InvalidParameterError("labels", "at least two classes in the fitting split", self.classes_)
        task = None
        if task_labels is not None:
            task_codes, _ = encode_labels(task_labels, len(mat), "task_labels")
            task = task_codes[fit_idx]
        eraser = make_erasure(self.method, **self.params).fit(mat[fit_idx], y[fit_idx].tolist(), task)
        self.steps_ = eraser.steps_
        self.n_samples_ = len(fit_idx)
        if encoder is not None:
            self.fingerprint_ = fingerprint(load_encoder(encoder))
        else:
            self.fingerprint_ = {"model_id": None, "dim": int(mat.shape[1])}
        erased = apply_steps(mat[held_idx], self.steps_)
        ev: dict[str, Any] = {"n_fit": len(fit_idx), "n_held_out": len(held_idx),
                              "majority": majority_rate(y[held_idx].tolist()), "protocol":
                              "eraser fitted on the fitting split; attackers retrained on the erased held-out "
                              "vectors, 5-fold cross-validation"}
        for kind in ("logistic", "mlp"):
            if len(held_idx) >= 10 and len(set(codes[held_idx].tolist())) >= 2:
                before = attribute_attack(mat[held_idx], y[held_idx].tolist(), attacker=kind, groups=units[held_idx],
                                          random_state=self.random_state)
                after = attribute_attack(erased, y[held_idx].tolist(), attacker=kind, groups=units[held_idx],
                                         random_state=self.random_state)
                ev[kind] = {"before": round(before["accuracy"], 4), "after": round(after["accuracy"], 4),
                            "after_ci95": [round(after["ci_low"], 4), round(after["ci_high"], 4)]}
        self.evaluation_ = ev
        return self

    # -- use -------------------------------------------------------------------------------
    def erase(self, X: Any) -> np.ndarray:
        """Apply the eraser: (n,) or (m, n) in, float32 of the same shape out."""
        if not self.steps_ and self.fingerprint_ is None:
            raise InvalidParameterError("concept", "a fitted AttributeConcept (call fit or load)", self)
        mat, single = as_float_matrix(X, "X", dim=self.dim)
        out = apply_steps(mat, self.steps_).astype(np.float32)
        return out[0] if single else out

    def check_encoder(self, encoder: Any) -> None:
        """Refuse an encoder other than the one the concept was fitted on (ConfigMismatchError)."""
        from ..encoders import fingerprint, fingerprints_match

        theirs = encoder if isinstance(encoder, dict) else fingerprint(encoder)
        mine = self.fingerprint_ or {}
        if "canary" not in mine:
            if int(mine.get("dim", -1)) != int(theirs.get("dim", -2)):
                raise ConfigMismatchError(f"attribute concept {self.name!r} has dimension {mine.get('dim')} but the "
                                          f"encoder {theirs.get('model_id')!r} has {theirs.get('dim')}")
            return
        ok, why = fingerprints_match(mine, theirs)
        if not ok:
            raise ConfigMismatchError(
                f"attribute concept {self.name!r} was fitted on model {mine.get('model_id')!r} (dim {mine.get('dim')}) "
                f"but the encoder is {theirs.get('model_id')!r} (dim {theirs.get('dim')}): {why}. "
                "Re-fit it for this model with private_vectors.fitted.fit_attribute")

    def content_sha256(self) -> str:
        """Hash of what changes stored vectors: name, method, classes and the affine steps."""
        h = hashlib.sha256(json.dumps({"name": self.name, "method": self.method,
                                       "classes": [str(c) for c in self.classes_]}, sort_keys=True).encode())
        for step in self.steps_:
            for arr in step:
                h.update(np.ascontiguousarray(arr, dtype="<f4").tobytes())
        return h.hexdigest()

    def reference(self) -> dict[str, Any]:
        """JSON-safe reference for configs (built-in name or folder, plus the content hash)."""
        ref: dict[str, Any] = {"kind": "attribute", "name": self.name, "attribute": self.attribute,
                               "method": self.method, "classes": [str(c) for c in self.classes_],
                               "rank": self.rank_, "sha256": self.content_sha256()}
        if self.source == "builtin":
            ref["type"] = "builtin"
        elif self.source:
            ref["type"], ref["path"] = "path", self.source
        else:
            ref["type"] = "inline"
        return ref

    def report(self, *, mechanism: str | None = None, eps: float | None = None) -> dict[str, Any]:
        """For the privacy report: attribute, method, rank, the held-out attacker accuracy and
        which attackers the erasure bounds (:func:`~private_vectors.fitted.measured.attacker_coverage`;
        ``mechanism`` and ``eps``: the store's noise, to find a measurement of the combination)."""
        from .measured import attacker_coverage

        return {"attribute": self.attribute, "name": self.name, "method": self.method, "params": self.params,
                "classes": [str(c) for c in self.classes_], "rank": self.rank_,
                "held_out_attackers": self.evaluation_, "fitted_on": self.extra_.get("source"),
                "attackers": attacker_coverage(self.method, self.params, attribute=self.attribute,
                                               builtin=self.source == "builtin", mechanism=mechanism, eps=eps)}

    # -- persistence -----------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "name": self.name, "attribute": self.attribute,
                "classes": list(self.classes_), "method": self.method, "params": self.params,
                "test_size": self.test_size, "random_state": self.random_state, "rank": self.rank_,
                "n_steps": len(self.steps_), "n_samples": self.n_samples_, "fingerprint": self.fingerprint_,
                "evaluation": self.evaluation_, "library_version": __version__, **self.extra_}

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``config.json`` + ``model.safetensors`` atomically (a temporary folder renamed into place)."""
        from safetensors.numpy import save_file

        if self.fingerprint_ is None or "canary" not in self.fingerprint_:
            raise InvalidParameterError("encoder", "a concept fitted with its encoder (fit(..., encoder=...)) to save",
                                        None)
        path = Path(folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            tensors = {f"step{i}.{part}": np.ascontiguousarray(arr, dtype=np.float32)
                       for i, step in enumerate(self.steps_) for part, arr in zip(("left", "right", "bias"), step, strict=True)}
            save_file(tensors, str(tmp / WEIGHTS_FILE), metadata={"format": FORMAT, "name": self.name})
            cfg = self.to_config()
            cfg["weights_sha256"] = sha256_file(tmp / WEIGHTS_FILE)
            cfg.setdefault("created", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            (tmp / CONFIG_FILE).write_text(json.dumps(cfg, indent=1, default=str) + "\n", "utf-8")
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; a saved artefact is as readable as any folder
            for f in (CONFIG_FILE, WEIGHTS_FILE):
                os.chmod(tmp / f, 0o666 & ~umask)
            if path.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=path.parent))
                os.replace(path, old / "x")
                os.replace(tmp, path)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, path)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return path

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> AttributeConcept:
        """Load a saved concept; missing, corrupt, truncated or foreign files raise ArtefactError."""
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        path = Path(folder)
        cfg = read_artefact_config(path, kind="attribute concept", fmt=FORMAT, fmt_version=FORMAT_VERSION,
                                   require_weights_sha256=True)
        cfg_path, w_path = path / CONFIG_FILE, path / WEIGHTS_FILE
        try:
            tensors = load_file(str(w_path))
            dim = int(cfg["fingerprint"]["dim"])
            steps = []
            for i in range(int(cfg["n_steps"])):
                left, right = tensors[f"step{i}.left"].astype(np.float64), tensors[f"step{i}.right"].astype(np.float64)
                bias = tensors[f"step{i}.bias"].astype(np.float64)
                if left.shape[0] != dim or right.shape != (left.shape[1], dim) or bias.shape != (dim,):
                    raise ValueError(f"step {i} has shapes {left.shape}, {right.shape}, {bias.shape} for dim {dim}")
                steps.append((left, right, bias))
            concept = cls(name=cfg["name"], attribute=cfg.get("attribute"), method=cfg["method"],
                          params=cfg.get("params") or {}, test_size=cfg.get("test_size", 0.3),
                          random_state=cfg.get("random_state", 0))
        except (SafetensorError, OSError, KeyError, TypeError, ValueError) as exc:
            raise ArtefactError(f"attribute concept {path}: {cfg_path} and {w_path} are inconsistent ({exc})") from exc
        concept.steps_ = steps
        concept.classes_ = list(cfg.get("classes") or [])
        concept.fingerprint_ = cfg["fingerprint"]
        concept.evaluation_ = cfg.get("evaluation") or {}
        concept.n_samples_ = int(cfg.get("n_samples", 0))
        known = set(concept.to_config()) | {"weights_sha256", "created"}
        concept.extra_ = {k: v for k, v in cfg.items() if k not in known}
        concept.source = str(path.resolve())
        return concept


def fit_attribute(texts: Any, labels: Any, *, encoder: Any = None, method: str = DEFAULT_METHOD,
                  name: str | None = None, attribute: str | None = None, test_size: float = 0.3,
                  random_state: int = 0, embeddings: Any = None, source: str | None = None,
                  cache_embeddings: bool = False, task_labels: Any = None, **params: Any) -> AttributeConcept:
    """Fit an attribute concept from labelled texts.

    Args:
        texts: the texts (explicit mentions of the attribute should already be removed — the
            text stage does that at run time — so the eraser learns what is left implicit).
        labels: the attribute per text (binary or categorical; str or int).
        encoder: anything ``load_encoder`` accepts (None: the default model).
        method: one of :data:`~private_vectors.fitted.erasure.ERASURE_METHODS`; default
            :data:`DEFAULT_METHOD` (``"cluster-leace"``, chosen from the measured table).
        name: concept name.
        attribute: attribute description (default ``"attribute"``).
        test_size: held-out share for the recorded attacker accuracy (identical texts stay together).
        random_state: seed of the split, clustering and attacker folds.
        embeddings: precomputed (m, n) embeddings of ``texts`` (skips encoding).
        source: free-text provenance recorded in the config.
        cache_embeddings: encode each distinct text once.
        task_labels: a task label per text (e.g. the diagnosis), for ``"region-leace"`` and
            ``"task-projection"``.
        **params: eraser hyperparameters (e.g. ``n_clusters=16``).

    Returns:
        A fitted :class:`AttributeConcept`.
    """
    from ..encoders import load_encoder

    items = check_texts(texts, allow_empty_batch=False)
    enc = load_encoder(encoder)
    uniq = sorted(set(items))
    gid = {t: i for i, t in enumerate(uniq)}
    groups = np.asarray([gid[t] for t in items])
    if embeddings is not None:
        X, _ = as_float_matrix(embeddings, "embeddings", dim=enc.dim)
        if len(X) != len(items):
            raise InvalidParameterError("embeddings", f"{len(items)} rows (one per text)", embeddings)
    elif cache_embeddings or len(uniq) < len(items):
        X = np.asarray(enc.encode(uniq), dtype=np.float64)[groups]
    else:
        X = np.asarray(enc.encode(items), dtype=np.float64)
    concept = AttributeConcept(name=name or attribute or "attribute", attribute=attribute, method=method,
                               params=params, test_size=test_size, random_state=random_state)
    concept.fit(X, labels, encoder=enc, groups=groups, task_labels=task_labels)
    if source:
        concept.extra_["source"] = source
    return concept


def _shipped(name: str, model_id: str, method: str) -> Path | None:
    path = Path(str(resources.files("private_vectors").joinpath("data", "concepts", model_id, name)))
    if method != "leace":
        path = path / method
    return path if (path / CONFIG_FILE).is_file() else None


def _builtin(name: str, method: str, enc: Any) -> AttributeConcept:
    shipped = _shipped(name, enc.model_id, method)
    if shipped is None:
        if method not in BUILTIN_METHODS:
            raise InvalidParameterError("erase.method", "a method shipped for the built-in "
                                        f"{name!r}: " + ", ".join(repr(m) for m in BUILTIN_METHODS), method)
        raise InvalidParameterError("concept", f"a built-in attribute shipped for the encoder ({enc.model_id!r} has "
                                    "none: only all-MiniLM-L6-v2); fit one with fit_attribute", name)
    concept = AttributeConcept.load(shipped)
    concept.check_encoder(enc)
    concept.source = "builtin"
    return concept


def is_attribute_folder(ref: Any) -> bool:
    """Whether ``ref`` names a folder holding a saved AttributeConcept."""
    if not isinstance(ref, (str, os.PathLike)):
        return False
    cfg = Path(ref) / CONFIG_FILE
    try:
        return cfg.is_file() and json.loads(cfg.read_text("utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):  # unreadable / not UTF-8 / not JSON: not ours
        return False


def load_attribute(ref: Any, encoder: Any = None) -> AttributeConcept:
    """Resolve an attribute concept for an encoder and check they belong together.

    Args:
        ref: an :class:`AttributeConcept`, a folder saved by :meth:`AttributeConcept.save`,
            a built-in name (:data:`BUILTIN_ATTRIBUTES`, shipped for all-MiniLM-L6-v2; the
            :data:`DEFAULT_METHOD` artefact), an :class:`~private_vectors.fitted.erase.ErasureSpec`
            or ``{"attribute", "method"}`` dict, or a reference dict from
            :meth:`AttributeConcept.reference` (its method picks the built-in artefact, its hash
            is checked).
        encoder: the encoder in use (None: default model).

    Raises:
        InvalidParameterError / InvalidTypeError: unknown name or wrong type.
        ArtefactError: unreadable folder. ConfigMismatchError: another encoder, or a changed artefact.
    """
    from ..encoders import load_encoder

    enc = load_encoder(encoder)
    if isinstance(ref, AttributeConcept):
        ref.check_encoder(enc)
        return ref
    if isinstance(ref, dict):
        if "type" not in ref:  # {"attribute", "method"}
            return load_attribute(check_erase(ref), enc)
        kind, target = reference_target(ref, what="an attribute reference dict")
        if kind == "builtin":  # configs record the method; those written before methods shipped are LEACE
            concept = _builtin(target, str(ref.get("method") or "leace"), enc)
        else:
            concept = load_attribute(target, enc)
        check_content_hash(concept, ref, what="attribute concept")
        return concept
    ref = resolve_erase(ref)
    if isinstance(ref, ErasureSpec):
        if ref.attribute in BUILTIN_ATTRIBUTES:
            return _builtin(ref.attribute, ref.method or DEFAULT_METHOD, enc)
        concept = load_attribute(ref.attribute, enc)
        if ref.method is not None and ref.method != concept.method:
            raise InvalidParameterError("erase.method", f"the folder's own method {concept.method!r} or None",
                                        ref.method, note=f"{ref.attribute} was fitted with {concept.method!r}")
        return concept
    if isinstance(ref, (str, os.PathLike)):
        concept = AttributeConcept.load(ref)
        concept.check_encoder(enc)
        return concept
    raise InvalidTypeError("concept", f"an AttributeConcept, a folder, a built-in name ({', '.join(BUILTIN_ATTRIBUTES)}),"
                           " an ErasureSpec or a reference dict", ref)

