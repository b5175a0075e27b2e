"""What the benchmark scripts share; each script imports this module and the installed package.

A script runs as ``.venv/bin/python benchmarks/<script>.py`` (Python puts the script's folder on
the import path, so ``import _shared`` needs no path edit).

* :data:`DATA`, :data:`RESULTS`: the shared data folder and this folder's results;
* :func:`held_out_indices`: the frozen held-out half of presidio's synthetic PII set (the split
  rule ``detection_split.py`` records);
* :func:`presidio_defaults`, :func:`spacy_nlp`: presidio's defaults, offline, on the project's
  spaCy small English model (the baselines). ``AnalyzerEngine`` with its default recognizer
  registry and the full spaCy pipeline (presidio's default NLP engine asks for
  ``en_core_web_lg``; the project ships the small model, resolved and hash-checked by
  :func:`private_vectors.text.spacy_model.resolve_spacy_model`), and ``AnonymizerEngine`` with its
  default operator (replace each result with ``<ENTITY_TYPE>``). One change keeps it offline:
  the e-mail recognizer validates domains with the public-suffix snapshot bundled with
  ``tldextract`` instead of downloading the list (same results);
* :func:`score_tab`, :func:`score_synthetic`, :func:`score_scifact`: the text-stage scorers of
  ``text_tuning.py``, ``text_rules.py`` and ``phi_steps.py``;
* :func:`model_sanitizer`: ``Sanitizer(concept, detector="model")``, or the same with the learned
  tagger read from another weight folder (``--tagger`` of ``evasion.py``, ``real_text.py`` and
  ``detector_model.py``);
* :func:`export`, :func:`int8`, :func:`session`, :class:`OrtNet`: the learned tagger's network or
  the encoder on ONNX Runtime (fp32 or dynamic int8 with the nodes named in
  :data:`ATTENTION_PRODUCTS`, :data:`FFN_DOWN`, :data:`FROZEN_LAYERS` left in fp32), for
  ``tagger_onnx.py`` and ``text_ingest.py --store`` (they need ``onnx``).
"""

from __future__ import annotations

import io
import json
import random
import re
import time
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
"""The shared data folder (``../shared/data`` beside a checkout)."""
RESULTS = HERE / "results"

# -- the frozen held-out half of presidio's synthetic set ---------------------------------------
SPLIT_SEED = 1717
SPLIT_FILE = RESULTS / "detection" / "split.json"


def held_out_indices(n: int) -> list[int]:
    """The frozen held-out half of ``n`` records (sorted indices)."""
    return sorted(random.Random(SPLIT_SEED).sample(range(n), n // 2))


# -- presidio's defaults ------------------------------------------------------------------------


def _offline_email() -> Any:
    import tldextract
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return bool(extract(pattern_text).fqdn)

    return OfflineEmailRecognizer()


@lru_cache(maxsize=1)
def spacy_target() -> str:
    """The spaCy model the project resolves (a package name or a verified folder)."""
    from private_vectors.text.spacy_model import resolve_spacy_model

    return resolve_spacy_model()[0]


@lru_cache(maxsize=1)
def presidio_defaults() -> tuple[Any, Any]:
    """(AnalyzerEngine, AnonymizerEngine) with presidio's defaults on spaCy small."""
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider
    from presidio_anonymizer import AnonymizerEngine

    provider = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": spacy_target()}]})
    analyzer = AnalyzerEngine(nlp_engine=provider.create_engine(), supported_languages=["en"])
    analyzer.registry.remove_recognizer("EmailRecognizer")
    analyzer.registry.add_recognizer(_offline_email())
    return analyzer, AnonymizerEngine()


@lru_cache(maxsize=1)
def spacy_nlp() -> Any:
    """spaCy small English, full pipeline (for "spaCy NER alone")."""
    import spacy

    return spacy.load(spacy_target())


# -- text-stage scorers -------------------------------------------------------------------------
_TOKEN = re.compile(r"\w+")
_SYNTH_TYPES = {"PERSON": "PERSON", "FIRST_NAME": "PERSON", "LAST_NAME": "PERSON", "LOCATION": "LOCATION",
                "STREET_ADDRESS": "LOCATION", "CITY": "LOCATION", "COUNTRY": "LOCATION", "GPE": "LOCATION",
                "EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE"}


def _masked(text: str, spans: list[Any]) -> list[tuple[int, int, bool]]:
    """(start, end, masked) of every word token."""
    return [(m.start(), m.end(), any(s.start < m.end() and m.start() < s.end for s in spans))
            for m in _TOKEN.finditer(text)]


def _inside(a: int, b: int, ranges: list[tuple[int, int, str]]) -> str | None:
    for s, e, kind in ranges:
        if s < b and a < e:
            return kind
    return None


def score_tab(sanitizer: Any, split: str, data: Path) -> dict[str, Any]:
    rows = [json.loads(x) for x in (data / "pii" / "tab" / "tab_train_dev.jsonl").read_text("utf-8").splitlines()]
    rows = [r for r in rows if r["metadata"]["provenance"]["dataset_type"] == split]
    texts = [r["text"] for r in rows]
    t0 = time.perf_counter()
    found = sanitizer.document_spans(texts)
    seconds = time.perf_counter() - t0
    hit, total, precision = _tally((text, spans, [(e["start_offset"], e["end_offset"], e["entity_type"])
                                                  for e in r["entities"] if e["identifier_type"] in ("DIRECT", "QUASI")])
                                   for r, text, spans in zip(rows, texts, found, strict=True))
    recall = {k: round(hit[k] / total[k], 3) for k in sorted(total)}
    recall["DIRECT+QUASI"] = round(sum(hit.values()) / max(1, sum(total.values())), 3)
    return {"documents": len(rows), "split": split, "recall": recall, "tokens": dict(total),
            "precision": precision, "seconds": round(seconds, 1)}


def score_synthetic(sanitizer: Any, data: Path, half: str = "held_out") -> dict[str, Any]:
    rows = json.loads((data / "pii" / "synth_dataset_v2.json").read_text("utf-8"))
    split = json.loads((SPLIT_FILE).read_text("utf-8"))
    held = set(split["held_out"])
    rows = [r for i, r in enumerate(rows) if (i in held) == (half == "held_out")]
    found = sanitizer.document_spans([r["full_text"] for r in rows])
    hit, total, precision = _tally((r["full_text"], spans,
                                    [(s["start_position"], s["end_position"],
                                      _SYNTH_TYPES.get(s["entity_type"], s["entity_type"])) for s in r["spans"]])
                                   for r, spans in zip(rows, found, strict=True))
    recall = {k: round(hit[k] / total[k], 3) for k in sorted(total) if total[k] >= 20}
    return {"documents": len(rows), "half": half, "recall": recall, "precision": precision}


def _tally(docs: Any) -> tuple[Counter, Counter, float]:
    """(masked annotated tokens by type, annotated tokens by type, precision) over
    ``(text, spans, annotations)`` triples: precision is the share of masked tokens that lie
    inside an annotation."""
    hit, total, masked, masked_in = Counter(), Counter(), 0, 0
    for text, spans, ann in docs:
        for a, b, m in _masked(text, spans):
            kind = _inside(a, b, ann)
            if kind is not None:
                total[kind] += 1
                hit[kind] += m
            masked += m
            masked_in += m and kind is not None
    return hit, total, round(masked_in / max(1, masked), 3)


def score_scifact(sanitizer: Any, data: Path, n: int = 300, offset: int = 0) -> dict[str, Any]:
    lines = (data / "retrieval" / "scifact" / "corpus.jsonl").read_text("utf-8").splitlines()[offset:offset + n]
    docs = [json.loads(x) for x in lines]
    texts = [f"{d.get('title', '')}\n{d['text']}" for d in docs]
    found = sanitizer.document_spans(texts)
    changed = sum(bool(s) for s in found)
    tokens = sum(len(_TOKEN.findall(t)) for t in texts)
    masked = sum(sum(m for _, _, m in _masked(t, s)) for t, s in zip(texts, found, strict=True))
    acronyms = Counter(t[s.start:s.end] for t, spans in zip(texts, found, strict=True) for s in spans
                       if s.detector == "keyed-index" and t[s.start:s.end].isupper() and len(t[s.start:s.end]) <= 4)
    top = Counter(t[s.start:s.end] for t, spans in zip(texts, found, strict=True) for s in spans).most_common(15)
    return {"documents": len(texts), "offset": offset, "changed_documents": round(changed / len(texts), 3),
            "changed_tokens": round(masked / max(1, tokens), 4), "propagated_acronyms": dict(acronyms),
            "most_replaced": top}


# -- the text stage with the learned tagger, from the shipped weights or another folder ------------
def model_sanitizer(concept: str = "PII", tagger: str | None = None, **kwargs: Any) -> Any:
    """``Sanitizer(concept, detector="model", **kwargs)``; with ``tagger`` (a folder written by
    ``scripts/train_tagger.py``), the same stage with the tagger read from that folder: a
    ``TaggerRecognizer(labels, model=tagger)`` of the labels ``detector="model"`` gives the concept,
    registered under its own name (``"tagger:<folder name>"``, so the span rules treat its spans
    as the shipped tagger's) and named in ``recognizers=``, the way a user loads their own tagger.
    The folder's weights are sha256-checked when the tagger first runs."""
    import warnings

    from private_vectors.text import Sanitizer, registry
    from private_vectors.text.recognizers.tagger import TaggerRecognizer
    from private_vectors.text.stage_config import model_recognizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if tagger is None:
            return Sanitizer(concept, detector="model", **kwargs)
        shipped = model_recognizer(concept)  # the same labels and thresholds, other weights
        name = registry.add_recognizer(TaggerRecognizer(list(shipped.entities), model=tagger,
                                                        thresholds=shipped.thresholds or None), replace=True)
        return Sanitizer(concept, recognizers=[name], **kwargs)


# ONNX Runtime sides of tagger_onnx.py and text_ingest.py (node names of the tagger's exported graph)
ATTENTION_PRODUCTS = [f"/layers.{i}/MatMul{s}" for i in range(4) for s in ("", "_1")]
FFN_DOWN = [f"/layers.{i}/output/MatMul" for i in range(4)]
FROZEN_LAYERS = [f"/layers.{i}/{p}/MatMul" for i in range(2) for p in ("query", "key", "value", "attention_out",
                                                                   "intermediate", "output")]


def export(module, *, keep_mask: bool = True) -> bytes:
    """An ONNX graph of ``module(ids, mask)`` with dynamic batch and width, exported in memory."""
    import torch

    ids = torch.randint(1000, 20000, (4, 130))
    mask = torch.ones_like(ids)
    if keep_mask:
        mask[1, 100:] = 0  # (a padded row: the masked attention path is the one traced)
    buf = io.BytesIO()
    torch.onnx.export(module, (ids, mask), buf, input_names=["ids", "mask"], output_names=["out"],
                      dynamic_axes={"ids": {0: "b", 1: "w"}, "mask": {0: "b", 1: "w"}, "out": {0: "b"}},
                      opset_version=17, dynamo=False)
    return buf.getvalue()


def int8(graph: bytes, exclude: list[str], folder: Path) -> bytes:
    """``graph`` after dynamic int8 quantisation (per channel), ``exclude`` left in fp32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src, dst = folder / "fp32.onnx", folder / "int8.onnx"
    src.write_bytes(graph)
    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=exclude)
    return dst.read_bytes()


def session(graph: bytes, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = threads
    return ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])


class OrtNet:
    """Stands in for a torch network (``net(ids, mask)``) inside a ``TaggerModel`` or a
    ``BertSentenceModel`` (set on the instance; the library is unchanged)."""

    def __init__(self, sess, head=None) -> None:
        self.session, self.head = sess, head

    def __call__(self, ids, mask):
        import torch

        return torch.from_numpy(self.session.run(None, {"ids": ids.numpy(), "mask": mask.numpy()})[0])
