"""A user's own Hugging Face token-classification model as a recognizer.

The model and its fast tokenizer are loaded from a local folder or the local Hugging Face cache
only (``local_files_only=True``: nothing is downloaded). Documents are read whole in strided windows
(:mod:`.windows`), like the built-in tagger. The model's labels (``id2label``) are read in the BIO,
BIOES or IO scheme; ``label_map`` says which entity type becomes which span label
(``{"PER": "PERSON", "LOC": "LOCATION"}``), and types it does not name are ignored: the same
mapping presidio's ``TransformersNlpEngine`` takes.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._spans import Span, validate_texts
from ..errors import Described, InvalidParameterError, InvalidTypeError, ModelNotAvailableError
from .windows import Window, decode, plan_windows, read_whole, word_groups

__all__ = ["HFTagger", "bio_tags"]


def bio_tags(id2label: Mapping[int, str], label_map: Mapping[str, str]) -> list[str]:
    """The model's classes as ``O`` / ``B-<span label>`` / ``I-<span label>`` through ``label_map``
    (``S-`` reads as ``B-``, ``E-`` and a bare type as ``I-``; an unmapped type as ``O``)."""
    out = []
    for i in range(len(id2label)):
        raw = str(id2label[i])
        prefix, _, kind = raw.partition("-") if raw[:2] in ("B-", "I-", "E-", "S-", "L-", "U-") else ("I", "", raw)
        label = label_map.get(kind)
        if raw == "O" or label is None:
            out.append("O")
        else:
            out.append(f"{'B' if prefix in ('B', 'S', 'U') else 'I'}-{label}")
    return out


class HFTagger:
    """Spans from a Hugging Face ``AutoModelForTokenClassification`` with a label mapping.

    Args:
        model: a local folder or a model name already in the local Hugging Face cache.
        label_map: the model's entity types to span labels, e.g. ``{"PER": "PERSON"}``.
        name: the recognizer's name (recorded in configurations).
        device: torch device (``"cpu"``, ``"cuda"``...).
        threshold: spans whose mean tag probability is below this are dropped.
        window: tokens per window with the special tokens (default: the model's maximum, ≤ 512).
        stride: tokens between window starts (default: three quarters of a window).
        batch_size: windows per forward pass.
    """

    def __init__(self, model: str | Path, label_map: Mapping[str, str], *, name: str = "hf-tagger",
                 device: str = "cpu", threshold: float = 0.5, window: int | None = None, stride: int | None = None,
                 batch_size: int = 16) -> None:
        if not isinstance(model, (str, Path)):
            raise InvalidTypeError("model", "a model folder or a cached model name", model)
        if not isinstance(label_map, Mapping) or not label_map or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in label_map.items()):
            raise InvalidParameterError("label_map", "a non-empty mapping of model entity types to span labels",
                                        label_map)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise InvalidParameterError("threshold", "a number in [0, 1]", threshold)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidParameterError("batch_size", "an int >= 1", batch_size)
        if not isinstance(device, str):
            raise InvalidTypeError("device", "a torch device name such as 'cpu' or 'cuda'", device)
        try:
            from transformers import AutoModelForTokenClassification, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers is a dependency
            raise ModelNotAvailableError("a Hugging Face tagger needs the 'transformers' package") from exc
        self.model = str(model)
        self.name = name
        self.label_map = dict(label_map)
        self.device = device
        self.threshold = float(threshold)
        self.batch_size = batch_size
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.model, local_files_only=True)
            self._net = AutoModelForTokenClassification.from_pretrained(self.model, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailableError(f"no token-classification model {self.model!r} in a local folder or the "
                                         f"local Hugging Face cache ({exc})") from exc
        if not getattr(self._tokenizer, "is_fast", False):
            raise InvalidParameterError("model", "a model with a fast tokenizer (character offsets)",
                                        Described(repr(str(self.model))))
        self._net.eval().to(device)
        self.tags = bio_tags(self._net.config.id2label, self.label_map)
        if all(t == "O" for t in self.tags):
            raise InvalidParameterError("label_map", f"a mapping naming some of the model's types "
                                        f"({sorted(set(self._net.config.id2label.values()))})", label_map)
        limit = min(int(getattr(self._tokenizer, "model_max_length", 512) or 512),
                    int(getattr(self._net.config, "max_position_embeddings", 512) or 512), 512)
        self.window = int(window or limit)
        self._prefix, self._suffix = self._special_tokens()
        self._specials = len(self._prefix) + len(self._suffix)
        size = self.window - self._specials
        self.stride = int(stride or max(1, (3 * size) // 4))
        plan_windows(0, size + 2, self.stride)  # validates window and stride
        self._lock = threading.Lock()

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """The special tokens the tokenizer puts before and after a single text."""
        plain = self._tokenizer("a", add_special_tokens=False)["input_ids"]
        full = self._tokenizer("a", add_special_tokens=True)["input_ids"]
        for i in range(len(full) - len(plain) + 1):
            if full[i:i + len(plain)] == plain:
                return list(full[:i]), list(full[i + len(plain):])
        raise InvalidParameterError("model", "a tokenizer that keeps a text's tokens between its special tokens",
                                    Described(repr(str(self.model))))

    def __repr__(self) -> str:
        return f"HFTagger({self.model!r}, name={self.name!r}, device={self.device!r})"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t[2:] for t in self.tags if t != "O"))

    def get_config(self) -> dict[str, Any]:
        return {"type": "hf-tagger", "name": self.name, "model": self.model, "label_map": dict(self.label_map),
                "window": self.window, "stride": self.stride, "threshold": self.threshold}

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans of each text, whole (long texts in strided windows)."""
        import torch

        texts = validate_texts(texts)
        enc = self._tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        ids = enc["input_ids"]
        device = next(self._net.parameters()).device

        def run(batch: list[tuple[int, Window]]) -> list[np.ndarray]:
            seqs = [[*self._prefix, *ids[t][w.start:w.end], *self._suffix] for t, w in batch]
            width = max(len(s) for s in seqs)
            pad = self._tokenizer.pad_token_id or 0
            x = torch.full((len(seqs), width), pad, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for r, s in enumerate(seqs):
                x[r, :len(s)] = torch.tensor(s)
                mask[r, :len(s)] = 1
            probs = torch.softmax(self._net(input_ids=x.to(device), attention_mask=mask.to(device)).logits.float(),
                                  dim=-1).cpu().numpy()
            first = len(self._prefix)
            return [probs[r, first:first + w.end - w.start] for r, (_, w) in enumerate(batch)]

        with self._lock, torch.inference_mode():
            probs = read_whole([len(i) for i in ids], self.window - self._specials, self.stride, self.batch_size,
                               len(self.tags), run)
        out = []
        for t, text in enumerate(texts):
            groups = word_groups(enc.word_ids(t))
            found = decode(groups, enc["offset_mapping"][t], probs[t], self.tags)
            out.append([Span(s, e, label, score, self.name) for s, e, label, score in found
                        if score >= self.threshold and text[s:e].strip()])
        return out
