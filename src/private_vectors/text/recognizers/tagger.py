"""TaggerRecognizer: the learned, case-blind tagger (or a user's Hugging Face model) as a recognizer.

The shipped tagger (:mod:`private_vectors.text_model`) reads the default encoder's uncased
WordPiece tokens, so "maria garcia", "Maria Garcia" and "MARIA GARCIA" give the same spans. Its
spans carry the detector name ``"tagger"`` (a user's model: ``"tagger:<name>"``), which the span
rules read: the case checks (``ordinary-words``) leave them alone, while the personal-context
rule (``context-free``) weighs them as any model guess (:func:`learned`).

The model is loaded on first use (a configuration can be rebuilt without loading it) and its
weights are sha256-checked then; a configuration records which weights it names, never a text.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigMismatchError, Described, InvalidParameterError, InvalidTypeError
from ..rules.base import learned
from ..scores import SCORES, score_param
from ..spans import Span
from ..traits import LEARNED
from .base import Recognizer

__all__ = ["MODEL_LABELS", "TaggerRecognizer", "learned"]

MODEL_LABELS: tuple[str, ...] = ("PERSON", "LOCATION", "ORGANIZATION", "DATE_TIME")
"""The labels the shipped tagger reports."""
_BUILTIN = "builtin"


class TaggerRecognizer(Recognizer):
    """Spans from the learned tagger, limited to ``labels``.

    Args:
        labels: the labels to report (of the model's); default: all of them.
        model: None for the shipped tagger; a tagger folder written by ``scripts/train_tagger.py``;
            or a user's Hugging Face token-classification model (a local folder or a model in the
            local cache) with ``label_map``.
        label_map: for a Hugging Face model: its entity types to span labels (``{"PER": "PERSON"}``).
        name: for a user's model: the name its spans carry after ``"tagger:"``.
        device: torch device the model runs on (``"cpu"``, ``"cuda"``); not recorded.
        threshold: spans whose mean tag probability is below this are dropped.
        thresholds: per label, a threshold used instead of ``threshold`` (``{"LOCATION": 0.4}``).
    """

    kind = "tagger"
    traits = frozenset([LEARNED])
    version = "1"

    def __init__(self, labels: Sequence[str] | None = None, *, model: str | Path | None = None,
                 label_map: Mapping[str, str] | None = None, name: str | None = None, device: str = "cpu",
                 threshold: float = SCORES.tagger, thresholds: Mapping[str, float] | None = None) -> None:
        if model is not None and not isinstance(model, (str, Path)):
            raise InvalidTypeError("model", "None (the shipped tagger) or a model folder or name", model)
        if label_map is not None and not isinstance(label_map, Mapping):
            raise InvalidTypeError("label_map", "a mapping of the model's entity types to span labels", label_map)
        if not isinstance(device, str):
            raise InvalidTypeError("device", "a torch device name such as 'cpu' or 'cuda'", device)
        self.model = None if model is None else str(model)
        self.label_map = dict(label_map) if label_map is not None else None
        self.name = "tagger" if self.model is None and name is None else f"tagger:{name or Path(str(model)).name}"
        self.device = device
        self.threshold = score_param("threshold", threshold)
        self.thresholds = _thresholds(thresholds)
        self._loaded: Any = None
        self._lock = threading.Lock()
        known = self._known_labels()
        chosen = tuple(labels) if labels is not None else known
        if isinstance(labels, str) or not chosen or any(lab not in known for lab in chosen):
            raise InvalidParameterError("labels", f"a non-empty list of the model's labels ({list(known)})", labels)
        self.entities = tuple(dict.fromkeys(chosen))

    def _known_labels(self) -> tuple[str, ...]:
        path = Path(str(self.model)) if self.model is not None else None
        if path is not None and (path.is_absolute() or str(self.model).startswith((".", "~"))) and not path.exists():
            raise InvalidParameterError("model", "an existing tagger or Hugging Face model folder (or a model name "
                                        "in the local cache)", Described(repr(str(self.model))))
        if self.label_map is not None:
            return tuple(dict.fromkeys(self.label_map.values()))
        if self.model is None or ((Path(self.model) / "config.json").is_file() and self._is_tagger_folder()):
            return MODEL_LABELS if self.model is None else self._tagger().labels
        raise InvalidParameterError("label_map", "a label map for a Hugging Face model (its entity types to span "
                                    "labels)", None)

    def _is_tagger_folder(self) -> bool:
        import json

        try:
            cfg = json.loads((Path(str(self.model)) / "config.json").read_text("utf-8"))
        except (OSError, ValueError):
            return False
        return cfg.get("format") == "private_vectors.token_tagger"

    def _tagger(self) -> Any:
        """The model, loaded (and sha256-checked) once."""
        with self._lock:
            if self._loaded is None:
                from ...text_model import HFTagger, TaggerModel

                if self.label_map is not None:
                    self._loaded = HFTagger(str(self.model), self.label_map, name=self.name, device=self.device,
                                            threshold=self._lowest())
                else:
                    self._loaded = TaggerModel(self.model, device=self.device, threshold=self._lowest())
            return self._loaded

    def __repr__(self) -> str:
        return f"TaggerRecognizer(model={self.model or _BUILTIN!r}, labels={list(self.entities)}, device={self.device!r})"

    def spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """The spans of each text (whole, in strided windows), of the chosen labels. Hashtags and
        handles are read as the words they join (:mod:`private_vectors.text.tags`); a span inside
        one covers the whole tag."""
        from ..tags import tag_views
        from ..vocabulary import encoder_words

        views = tag_views(texts, encoder_words())
        found = self._tagger().spans([v.text for v in views])
        return [[Span(*view.original(s.start, s.end), s.label, s.score, self.name) for s in spans
                 if s.label in self.entities and s.score >= self.thresholds.get(s.label, self.threshold)]
                for view, spans in zip(views, found, strict=True)]

    def _lowest(self) -> float:
        """The threshold the model itself applies: the lowest of them (each label's is applied after)."""
        return min([self.threshold, *self.thresholds.values()])

    def weights(self) -> str | None:
        """The sha256 of the shipped tagger's weights (read from its config.json; None for a user's model)."""
        import json

        if self.model is not None:
            return None
        from ...text_model import builtin_path

        return str(json.loads((builtin_path() / "config.json").read_text("utf-8"))["weights_sha256"])

    def get_config(self) -> dict[str, Any]:
        """Kind, version, which model (the shipped one by its weights' sha256), labels and thresholds."""
        cfg: dict[str, Any] = {"type": self.kind, "version": self.version, "labels": list(self.entities),
                               "threshold": self.threshold}
        if self.thresholds:
            cfg["thresholds"] = dict(sorted(self.thresholds.items()))
        if self.model is None:
            cfg["model"] = _BUILTIN
            cfg["weights_sha256"] = self.weights()
        else:
            cfg["model"] = self.model
            cfg["name"] = self.name.split(":", 1)[1]
            if self.label_map is not None:
                cfg["label_map"] = dict(self.label_map)
        return cfg

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TaggerRecognizer:
        """Rebuild from :meth:`get_config`; a configuration naming other shipped weights is refused."""
        model = config.get("model", _BUILTIN)
        out = cls(config.get("labels"), model=None if model == _BUILTIN else str(model),
                  label_map=config.get("label_map"), name=config.get("name"),
                  threshold=float(config.get("threshold", SCORES.tagger)), thresholds=config.get("thresholds"))
        if model == _BUILTIN and config.get("weights_sha256") not in (None, out.weights()):
            raise ConfigMismatchError("the text stage was written with other weights of the shipped tagger than "
                                      "this library's; install the version of private-vectors that wrote it")
        return out


def _thresholds(thresholds: Mapping[str, float] | None) -> dict[str, float]:
    """Validated per-label thresholds (each a number in [0, 1])."""
    if thresholds is None:
        return {}
    if not isinstance(thresholds, Mapping) or any(
            not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1
            for k, v in thresholds.items()):
        raise InvalidParameterError("thresholds", "a mapping of labels to numbers in [0, 1]", thresholds)
    return {k: float(v) for k, v in thresholds.items()}
