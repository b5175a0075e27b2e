"""Shared machinery of the learned perturbations (CAPE, TextCrafter).

A learned mechanism is a :class:`~private_vectors.mechanisms.Mechanism` with trained torch
weights. It is saved as a folder holding ``config.json`` (type, parameters, encoder
fingerprint, training summary) and ``model.safetensors`` (weights; never pickle), and
loaded back with :func:`private_vectors.mechanisms.factory.load_learned`, which dispatches
on the config's ``"type"``.

Pre-trained artefacts for the default model ship with the package under
``private_vectors/data/learned/<model>/<type>/``; ``load_learned("cape")`` and
``load_learned("textcrafter")`` load them.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..encoders.base import fingerprint, fingerprints_match
from ..errors import ArtefactError, ConfigMismatchError, InvalidTypeError, PrivateVectorsError
from .base import Mechanism

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "CONFIG_FILE",
    "FORMAT_VERSION",
    "WEIGHTS_FILE",
    "Adam",
    "LearnedMechanism",
    "NotFittedError",
    "packaged_artefact",
    "read_artefact",
    "resolve_device",
    "save_artefact",
    "small_model_threads",
    "torch_generator",
]

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT_VERSION = 1
_PACKAGED_ROOT = Path(__file__).resolve().parents[1] / "data" / "learned"


class NotFittedError(PrivateVectorsError, RuntimeError):
    """A learned encoder was used before :meth:`fit` (or :meth:`load`)."""


# -- small helpers ---------------------------------------------------------------------
def resolve_device(device: Any = None) -> str:
    """``device`` as a string; default CUDA when available, CPU otherwise."""
    if device is None:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    if not isinstance(device, str) and type(device).__name__ != "device":
        raise InvalidTypeError("device", "None, 'cpu', 'cuda' or a torch.device", device)
    return str(device)


@contextlib.contextmanager
def small_model_threads(max_threads: int = 1) -> Iterator[None]:
    """Run torch on at most ``max_threads`` CPU threads inside the block.

    The learned heads are tiny; on a shared CPU, intra-op parallelism only adds contention
    (measured here: ~20x slower training with 2 threads under load than with 1).
    """
    import torch

    before = torch.get_num_threads()
    if before > max_threads:
        torch.set_num_threads(max_threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


class Adam:
    """Minimal Adam (Kingma & Ba 2015) for the small heads.

    ``torch.optim`` imports ``torch._dynamo`` on first use (measured: 17 s on this loaded
    machine), which dwarfs training these heads; this is the same update rule without it.
    """

    def __init__(self, params: Any, *, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        import torch

        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                if p.grad is None:
                    continue
                g = p.grad if self.weight_decay == 0 else p.grad + self.weight_decay * p
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.sub_(self.lr * (m / c1) / ((v / c2).sqrt() + self.eps))


def clip_grad_norm(params: Any, max_norm: float) -> float:
    """Scale gradients so their global L2 norm is at most ``max_norm``; returns the norm before."""
    import torch

    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    total = float(torch.sqrt(sum((g.detach() ** 2).sum() for g in grads)))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-12))
    return total


def torch_generator(random_state: Any) -> torch.Generator:
    """A CPU torch generator for training (weights init, shuffling, training noise).

    An int seeds it (tests and benchmarks); None seeds it from the OS's secure source.
    """
    import torch

    gen = torch.Generator()
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        gen.manual_seed(int(random_state))
    elif isinstance(random_state, np.random.Generator):
        gen.manual_seed(int(random_state.integers(0, 2**63 - 1)))
    else:
        gen.manual_seed(secrets.randbits(63))
    return gen


def packaged_artefact(kind: str, model: str | None = None) -> Path:
    """Folder of a shipped pre-trained artefact (``kind`` = "cape" or "textcrafter").

    Raises:
        ArtefactError: no artefact of that kind ships for ``model``.
    """
    from ..encoders.sentence_transformers import DEFAULT_MODEL

    model = model or DEFAULT_MODEL
    folder = _PACKAGED_ROOT / model / kind
    if not (folder / CONFIG_FILE).is_file():
        available = sorted(p.parent.name + "/" + p.name for p in _PACKAGED_ROOT.glob("*/*") if p.is_dir())
        raise ArtefactError(f"no packaged {kind!r} artefact for model {model!r} (shipped: {available}); "
                            "train one with fit() and save() it")
    return folder


# -- artefact I/O ----------------------------------------------------------------------
def save_artefact(folder: str | Path, config: dict[str, Any], tensors: dict[str, Any]) -> Path:
    """Write ``config.json`` and ``model.safetensors`` into ``folder`` (created if missing)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    flat = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    save_file(flat, str(folder / WEIGHTS_FILE), metadata={"type": str(config.get("type"))})
    cfg = dict(config)
    cfg.setdefault("format_version", FORMAT_VERSION)
    (folder / CONFIG_FILE).write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


def read_artefact(folder: str | Path, expected_type: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read an artefact folder: (config, tensors).

    Raises:
        ArtefactError: missing files, unreadable JSON or weights, or a foreign ``type``.
    """
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg_path, w_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    if not folder.is_dir():
        raise ArtefactError(f"artefact folder {str(folder)!r} does not exist")
    for path in (cfg_path, w_path):
        if not path.is_file():
            raise ArtefactError(f"artefact {str(folder)!r} is missing {path.name}")
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtefactError(f"artefact {str(folder)!r}: {CONFIG_FILE} is not valid JSON ({exc})") from exc
    if not isinstance(config, dict) or "type" not in config:
        raise ArtefactError(f"artefact {str(folder)!r}: {CONFIG_FILE} has no 'type'")
    if expected_type is not None and config["type"] != expected_type:
        raise ArtefactError(f"artefact {str(folder)!r} is of type {config['type']!r}, expected {expected_type!r}")
    if int(config.get("format_version", 0)) > FORMAT_VERSION:
        raise ArtefactError(f"artefact {str(folder)!r} has format_version {config.get('format_version')}; "
                            f"this version reads up to {FORMAT_VERSION}")
    try:
        tensors = load_file(str(w_path), device="cpu")
    except Exception as exc:
        raise ArtefactError(f"artefact {str(folder)!r}: {WEIGHTS_FILE} is unreadable ({exc})") from exc
    return config, tensors


# -- base class ------------------------------------------------------------------------
class LearnedMechanism(Mechanism):
    """A mechanism with trained torch weights, saved as config.json + model.safetensors.

    Subclasses implement ``_artefact()`` (config part, tensors) and ``_restore(config, tensors)``.
    """

    name: ClassVar[str] = "learned"
    #: constructor parameters that may be changed when loading an artefact.
    _load_overrides: ClassVar[tuple[str, ...]] = ("random_state", "device")

    encoder_fingerprint_: dict[str, Any] | None
    n_features_in_: int | None

    def _init_learned(self, device: Any, show_progress: Any) -> None:
        """The state every learned mechanism starts with: its device, progress bar, no weights."""
        self.device = resolve_device(device)
        self.show_progress = bool(show_progress)
        self.n_features_in_ = None
        self.history_: list[dict[str, float]] = []
        self.encoder_fingerprint_ = None
        self.training_: dict[str, Any] = {}

    @property
    def is_fitted(self) -> bool:
        """Whether the weights have been trained or loaded."""
        return getattr(self, "n_features_in_", None) is not None

    def _require_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit() or load() first")

    def _check_input(self, X: np.ndarray) -> None:
        self._require_fitted()

    def _record_encoder(self, encoder: Any) -> None:
        if encoder is not None:
            self.encoder_fingerprint_ = fingerprint(encoder)

    def check_encoder(self, encoder: Any) -> None:
        """Refuse an encoder other than the one the weights were trained on.

        Raises:
            ConfigMismatchError: dimension or canary embeddings differ.
        """
        self._require_fitted()
        if int(encoder.dim) != int(self.n_features_in_ or 0):
            raise ConfigMismatchError(f"{self.name} artefact expects {self.n_features_in_}-d embeddings, "
                                      f"encoder {encoder.model_id!r} gives {encoder.dim}-d")
        if self.encoder_fingerprint_ is None:
            return
        ok, why = fingerprints_match(self.encoder_fingerprint_, fingerprint(encoder))
        if not ok:
            raise ConfigMismatchError(f"{self.name} artefact was trained on another encoder: {why}")

    # -- persistence -------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        """Save as ``folder/config.json`` + ``folder/model.safetensors``; returns the folder."""
        self._require_fitted()
        config_part, tensors = self._artefact()
        config = {
            "type": self.name,
            "format_version": FORMAT_VERSION,
            "params": self.get_params(),
            "n_features_in": int(self.n_features_in_ or 0),
            "encoder_fingerprint": self.encoder_fingerprint_,
            "training": self.training_,
        }
        config.update(config_part)
        return save_artefact(folder, config, tensors)

    @classmethod
    def load(cls, folder: str | Path, **overrides: Any) -> LearnedMechanism:
        """Rebuild from a folder written by :meth:`save`.

        Args:
            folder: the artefact folder.
            **overrides: constructor parameters to change (see ``_load_overrides``).
        """
        config, tensors = read_artefact(folder, expected_type=cls.name)
        unknown = sorted(set(overrides) - set(cls._load_overrides))
        if unknown:
            raise InvalidTypeError("overrides", f"only {list(cls._load_overrides)}", unknown)
        params = dict(config.get("params", {}))
        params.pop("dim", None)
        params.update(overrides)
        try:
            obj = cls(**params)
            obj._restore(config, tensors)
        except PrivateVectorsError:
            raise
        except Exception as exc:
            raise ArtefactError(f"artefact {str(folder)!r} does not match {cls.__name__} ({type(exc).__name__}: {exc})") from exc
        obj.encoder_fingerprint_ = config.get("encoder_fingerprint")
        obj.training_ = dict(config.get("training", {}))
        return obj

    def _artefact(self) -> tuple[dict[str, Any], dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _restore(self, config: dict[str, Any], tensors: dict[str, Any]) -> None:  # pragma: no cover
        raise NotImplementedError
