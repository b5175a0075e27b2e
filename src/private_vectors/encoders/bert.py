"""A small BERT inference path for sentence-transformers folders, without importing transformers.

Importing ``sentence_transformers`` (and through it ``transformers``) takes about two seconds of
CPU before any text is embedded; for the packaged all-MiniLM-L6-v2 that is most of the
start-up time. This module runs the same computation with ``torch`` operations, the
``tokenizers`` fast tokenizer and the ``safetensors`` weights, for the folder layout
sentence-transformers saves when it is a plain BERT + mean pooling (+ normalize) model:

* tokens: the folder's ``tokenizer.json`` (lower-casing, WordPiece, ``[CLS] … [SEP]``),
  truncated to ``max_seq_length`` of ``sentence_bert_config.json``;
* BERT encoder (Devlin et al., "BERT", NAACL 2019, §3; post-layer-norm Transformer of
  Vaswani et al., 2017): word + position + token-type embeddings → LayerNorm, then per layer
  multi-head self-attention → residual + LayerNorm → GELU feed-forward → residual + LayerNorm;
* mean pooling over the attention mask (Reimers & Gurevych, "Sentence-BERT", EMNLP 2019, §3).

:func:`supports` says whether a folder has that layout; anything else (other architectures,
CLS pooling, prompts, dense heads) goes through sentence-transformers. The outputs agree with
sentence-transformers' to float32 rounding; the encoder fingerprint checks of concept
artefacts compare them at load time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BertSentenceModel", "supports"]

_MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling"]
_NORMALIZE = "sentence_transformers.models.Normalize"


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def supports(folder: str | Path) -> bool:
    """Whether ``folder`` is a BERT + mean-pooling sentence-transformers model this module runs."""
    root = Path(folder)
    try:
        modules = [m["type"] for m in _read(root / "modules.json")]
        config = _read(root / "config.json")
        pooling = _read(root / "1_Pooling" / "config.json")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if modules[:2] != _MODULES or any(m != _NORMALIZE for m in modules[2:]):
        return False
    others = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v and k != "pooling_mode_mean_tokens"]
    st_cfg = root / "config_sentence_transformers.json"
    try:
        st = _read(st_cfg) if st_cfg.is_file() else {}
    except ValueError:
        return False
    if st.get("prompts") or st.get("default_prompt_name"):  # prompts are prepended by sentence-transformers
        return False
    return (config.get("model_type") == "bert" and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and bool(pooling.get("pooling_mode_mean_tokens")) and not others
            and (root / "tokenizer.json").is_file() and (root / "model.safetensors").is_file())


class BertSentenceModel:
    """Mean-pooled BERT sentence embeddings from a sentence-transformers folder (CPU or CUDA).

    Args:
        folder: the model folder (see :func:`supports`).
        device: torch device name.
    """

    def __init__(self, folder: str | Path, device: str = "cpu") -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        root = Path(folder)
        cfg = _read(root / "config.json")
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        st_cfg = root / "sentence_bert_config.json"
        max_len = int(_read(st_cfg).get("max_seq_length") or 512) if st_cfg.is_file() else 512
        self.max_len = min(max_len, int(cfg.get("max_position_embeddings", 512)))
        self.device = torch.device(device)
        self.weights = {k: v.to(self.device, torch.float32) for k, v in load_file(str(root / "model.safetensors")).items()}
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_len)
        self.tokenizer.no_padding()
        self.dim = self.hidden
        self.normalize = _NORMALIZE in [m["type"] for m in _read(root / "modules.json")]

    def _tokens(self, texts: Sequence[str]) -> tuple[Any, Any]:
        import torch

        encodings = self.tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = torch.zeros((len(encodings), width), dtype=torch.long)
        mask = torch.zeros((len(encodings), width), dtype=torch.long)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = torch.tensor(enc.ids, dtype=torch.long)
            mask[row, : len(enc.ids)] = 1
        return ids.to(self.device), mask.to(self.device)

    def _norm(self, x: Any, name: str) -> Any:
        import torch.nn.functional as nnf

        return nnf.layer_norm(x, (self.hidden,), self.weights[f"{name}.weight"], self.weights[f"{name}.bias"], self.eps)

    def _linear(self, x: Any, name: str) -> Any:
        import torch.nn.functional as nnf

        return nnf.linear(x, self.weights[f"{name}.weight"], self.weights[f"{name}.bias"])

    def _attention(self, x: Any, bias: Any, prefix: str) -> Any:
        import torch.nn.functional as nnf

        batch, width, _ = x.shape
        q, k, v = (self._linear(x, f"{prefix}.attention.self.{p}").view(batch, width, self.heads, -1).transpose(1, 2)
                   for p in ("query", "key", "value"))
        out = nnf.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return out.transpose(1, 2).reshape(batch, width, self.hidden)

    def _layer(self, x: Any, bias: Any, i: int) -> Any:
        import torch.nn.functional as nnf

        p = f"encoder.layer.{i}"
        x = self._norm(x + self._linear(self._attention(x, bias, p), f"{p}.attention.output.dense"),
                       f"{p}.attention.output.LayerNorm")
        h = self._linear(nnf.gelu(self._linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense")
        return self._norm(x + h, f"{p}.output.LayerNorm")

    def forward(self, ids: Any, mask: Any) -> Any:
        """Mean-pooled last hidden states of token ``ids`` under attention ``mask`` (unit-normalised
        when the folder's modules end with ``Normalize``, as sentence-transformers does)."""
        import torch

        w = self.weights
        positions = torch.arange(ids.shape[1], device=self.device)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
        x = self._norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        bias = torch.zeros(mask.shape, dtype=x.dtype, device=self.device)
        bias = bias.masked_fill(mask == 0, torch.finfo(x.dtype).min)[:, None, None, :]
        for i in range(self.layers):
            x = self._layer(x, bias, i)
        m = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1) if self.normalize else pooled

    def encode(self, texts: Sequence[str], batch_size: int = 64, *, show_progress: bool = False) -> np.ndarray:
        """float32 embeddings, one row per text, in batches of similar length."""
        import torch

        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        starts = range(0, len(texts), batch_size)
        if show_progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Batches")
        with torch.inference_mode():
            for start in starts:
                rows = order[start : start + batch_size]
                ids, mask = self._tokens([texts[i] for i in rows])
                out[rows] = self.forward(ids, mask).float().cpu().numpy()
        return out
