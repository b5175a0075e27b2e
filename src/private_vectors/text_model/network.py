"""A BERT encoder with a token-classification head, as a ``torch.nn.Module``.

The layers are those of the default encoder (all-MiniLM-L6-v2, an uncased 6-layer MiniLM:
Wang et al., "MiniLM", NeurIPS 2020) read from its sentence-transformers folder: word +
position + token-type embeddings → LayerNorm, then per layer multi-head self-attention →
residual + LayerNorm → GELU feed-forward → residual + LayerNorm (Devlin et al., "BERT",
NAACL 2019, §3), then a linear layer over each token's last hidden state (BERT §4.3, token
classification). The embeddings and the first ``frozen`` layers are the encoder's own, frozen
and not part of a tagger's weights: they are read from the installed encoder package, so the
tagger ships only the layers it changed and its head.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as nnf
from torch import nn

__all__ = ["ENCODER_WORDS", "BertTagger", "encoder_state", "shared_names"]

ENCODER_WORDS = "embeddings.word_embeddings.weight"
"""The tensor of the encoder's safetensors file the tagger shares (frozen)."""


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = dropout
        self._qkv: tuple[torch.Tensor, torch.Tensor] | None = None

    def train(self, mode: bool = True) -> _Layer:
        self._qkv = None  # the fused copy would go stale once the weights train again
        return super().train(mode)

    def fuse(self) -> None:
        """Keep query, key and value as one matrix, read by one matrix product per layer (inference)."""
        with torch.no_grad():
            self._qkv = (torch.cat([self.query.weight, self.key.weight, self.value.weight]),
                         torch.cat([self.query.bias, self.key.bias, self.value.bias]))

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        batch, width, hidden = x.shape
        if self._qkv is not None and not self.training:
            q, k, v = nnf.linear(x, *self._qkv).view(batch, width, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        else:
            q, k, v = (f(x).view(batch, width, self.heads, -1).transpose(1, 2)
                       for f in (self.query, self.key, self.value))
        p = self.dropout if self.training else 0.0
        a = nnf.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p)
        a = a.transpose(1, 2).reshape(batch, width, hidden)
        x = self.attention_norm(x + nnf.dropout(self.attention_out(a), p, self.training))
        h = self.output(nnf.gelu(self.intermediate(x)))
        return self.output_norm(x + nnf.dropout(h, p, self.training))


class BertTagger(nn.Module):
    """BERT layers and a per-token linear head.

    Args:
        words: the (vocabulary × hidden) word-embedding matrix, kept frozen.
        layers: number of Transformer layers.
        frozen: how many of the first layers (with the embeddings) are the encoder's, unchanged.
        heads: attention heads per layer.
        intermediate: feed-forward width.
        labels: number of output classes.
        max_position: number of position embeddings.
        eps: LayerNorm epsilon.
        dropout: dropout probability while training.
    """

    def __init__(self, words: torch.Tensor, *, layers: int, heads: int, intermediate: int, labels: int,
                 frozen: int = 0, max_position: int = 512, eps: float = 1e-12, dropout: float = 0.1) -> None:
        super().__init__()
        if not 0 <= frozen <= layers:
            raise ValueError(f"frozen must be between 0 and layers ({layers}), got {frozen}")
        self.frozen = frozen
        hidden = int(words.shape[1])
        self.words = nn.Embedding.from_pretrained(words.float(), freeze=True, padding_idx=0)
        self.position = nn.Embedding(max_position, hidden)
        self.token_type = nn.Parameter(torch.zeros(hidden))
        self.embedding_norm = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(_Layer(hidden, heads, intermediate, eps, dropout) for _ in range(layers))
        self.head = nn.Linear(hidden, labels)
        self.dropout = dropout
        if frozen:
            for name, p in self.named_parameters():
                if name in shared_names(frozen):
                    p.requires_grad_(False)

    def for_inference(self) -> BertTagger:
        """Evaluation mode with each layer's query, key and value fused (same outputs, fewer matrix
        products); calling ``train()`` again drops the fused copies."""
        self.eval()
        for layer in self.layers:
            layer.fuse()
        return self

    @staticmethod
    def _bias(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
        """The additive attention mask; None when no position is padding (the unmasked kernel)."""
        if bool(mask.all()):
            return None
        bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
        return bias.masked_fill(mask == 0, torch.finfo(dtype).min)[:, None, None, :]

    def lower(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Hidden states after the embeddings and the frozen layers (no dropout: they are fixed)."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.embedding_norm(self.words(ids) + self.position(positions) + self.token_type)
        if not self.frozen:
            return nnf.dropout(x, self.dropout, self.training)
        bias = self._bias(mask, x.dtype)
        training = self.training
        for layer in self.layers[: self.frozen]:
            layer.train(False)
            x = layer(x, bias)
            layer.train(training)
        return x

    def upper(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits from the hidden states :meth:`lower` returns: the trained layers and the head."""
        bias = self._bias(mask, x.dtype)
        for layer in self.layers[self.frozen:]:
            x = layer(x, bias)
        return self.head(nnf.dropout(x, self.dropout, self.training))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits of shape (batch, width, labels) for token ``ids`` under attention ``mask`` (1 = token)."""
        return self.upper(self.lower(ids, mask), mask)

    def own_state(self) -> dict[str, torch.Tensor]:
        """The tagger's own weights: everything but the word embeddings and the frozen layers
        (:func:`shared_names`), which come from the encoder package."""
        shared = shared_names(self.frozen) | {"words.weight"}
        return {k: v for k, v in self.state_dict().items() if k not in shared}


_LAYER_NAMES = {
    "query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
    "attention_out": "attention.output.dense", "attention_norm": "attention.output.LayerNorm",
    "intermediate": "intermediate.dense", "output": "output.dense", "output_norm": "output.LayerNorm",
}


def shared_names(frozen: int) -> set[str]:
    """The :class:`BertTagger` parameters that are the encoder's own when ``frozen`` layers are
    frozen: none for 0; else the embeddings (but the word matrix, shared in any case) and the
    first ``frozen`` layers."""
    if not frozen:
        return set()
    names = {"position.weight", "token_type", "embedding_norm.weight", "embedding_norm.bias"}
    return names | {f"layers.{i}.{ours}.{part}" for i in range(frozen) for ours in _LAYER_NAMES
                    for part in ("weight", "bias")}


def encoder_state(encoder: Mapping[str, torch.Tensor], layers: int) -> dict[str, Any]:
    """The first ``layers`` layers and the embeddings of a BERT safetensors state (the names of
    Hugging Face's ``BertModel``), renamed for :class:`BertTagger` (the head is not included):
    the starting point of training."""
    out: dict[str, Any] = {
        "position.weight": encoder["embeddings.position_embeddings.weight"],
        "token_type": encoder["embeddings.token_type_embeddings.weight"][0],
        "embedding_norm.weight": encoder["embeddings.LayerNorm.weight"],
        "embedding_norm.bias": encoder["embeddings.LayerNorm.bias"],
    }
    for i in range(layers):
        for ours, theirs in _LAYER_NAMES.items():
            for part in ("weight", "bias"):
                out[f"layers.{i}.{ours}.{part}"] = encoder[f"encoder.layer.{i}.{theirs}.{part}"]
    return out
