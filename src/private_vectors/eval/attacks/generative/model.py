"""The generative attacker's decoder: a GRU conditioned on a vector (GEIA-style prefix).

GEIA (Li et al., 2023) feeds a projection of the sentence vector as the decoder's first
input; this small decoder also derives its initial state and a per-step context from it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_decoder", "resolve_device"]


def build_decoder(vec_dim: int, vocab_size: int, cfg: dict[str, Any]) -> Any:
    """A ``PrefixGRUDecoder`` (torch module) for ``vec_dim``-d vectors and ``vocab_size`` units.

    Args:
        vec_dim: dimension of the conditioning vectors.
        vocab_size: output units (ids 0, 1, 2 are PAD, BOS, EOS).
        cfg: ``embedding_size``, ``hidden_size``, ``num_layers``, ``dropout``.
    """
    import torch
    from torch import nn

    class PrefixGRUDecoder(nn.Module):
        """GRU decoder conditioned on a vector (prefix input + initial state + per-step context)."""

        def __init__(self) -> None:
            super().__init__()
            emb, hid, layers = cfg["embedding_size"], cfg["hidden_size"], cfg["num_layers"]
            self.layers = layers
            self.norm = nn.LayerNorm(vec_dim)
            self.prefix = nn.Linear(vec_dim, emb)
            self.init_state = nn.Linear(vec_dim, hid * layers)
            self.context = nn.Linear(vec_dim, emb)
            self.embed = nn.Embedding(vocab_size, emb, padding_idx=0)
            self.drop = nn.Dropout(cfg["dropout"])
            self.gru = nn.GRU(2 * emb, hid, num_layers=layers, batch_first=True,
                              dropout=cfg["dropout"] if layers > 1 else 0.0)
            self.out = nn.Linear(hid, vocab_size)

        def condition(self, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            v = self.norm(v)
            h0 = torch.tanh(self.init_state(v)).view(v.shape[0], self.layers, -1).transpose(0, 1).contiguous()
            return self.prefix(v), torch.tanh(self.context(v)), h0

        def step_inputs(self, tok_emb: torch.Tensor, ctx: torch.Tensor) -> torch.Tensor:
            return torch.cat([tok_emb, ctx.unsqueeze(1).expand(-1, tok_emb.shape[1], -1)], dim=-1)

        def forward(self, v: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
            """Logits for positions 0..T of ``[prefix] + tokens`` (predicting tokens[0..T-1], EOS)."""
            prefix, ctx, h0 = self.condition(v)
            seq = torch.cat([prefix.unsqueeze(1), self.embed(tokens)], dim=1)
            out, _ = self.gru(self.drop(self.step_inputs(seq, ctx)), h0)
            return self.out(self.drop(out))

    return PrefixGRUDecoder()


def resolve_device(device: str | None) -> Any:
    """``device`` as a torch device; default CUDA when available, else CPU."""
    import torch

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)
