"""The fast engine's own pass over Qwen3-VL's text decoder layers, on the model's weights.

No weight is copied: :class:`TextStack` keeps references to the parameters of
``model.model.language_model`` and ``model.lm_head`` and runs the same arithmetic as
transformers' Qwen3-VL text model (RMSNorm in fp32, q/k RMSNorm per head, rotary
embedding, grouped-query attention, SwiGLU MLP, deepstack visual features added to
the first layers' outputs at image positions), but with attention delegated to a
backend that writes a static KV cache (see ``attention.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    dtype = x.dtype
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


@dataclass
class LayerWeights:
    input_norm: torch.Tensor
    q: torch.Tensor
    q_bias: torch.Tensor | None
    k: torch.Tensor
    k_bias: torch.Tensor | None
    v: torch.Tensor
    v_bias: torch.Tensor | None
    o: torch.Tensor
    o_bias: torch.Tensor | None
    q_norm: torch.Tensor
    k_norm: torch.Tensor
    post_norm: torch.Tensor
    gate: torch.Tensor
    up: torch.Tensor
    down: torch.Tensor


class TextStack:
    """Embedding, decoder layers, final norm and LM head of a Qwen3-VL model (shared weights)."""

    def __init__(self, model) -> None:
        text = model.model.language_model
        config = text.config
        self.text = text
        self.eps = float(config.rms_norm_eps)
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(config.num_key_value_heads)
        self.head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        self.scale = self.head_dim ** -0.5
        self.embed = text.embed_tokens.weight
        self.final_norm = text.norm.weight
        self.lm_head = model.lm_head.weight
        self.lm_head_bias = getattr(model.lm_head, "bias", None)
        self.act = F.silu if config.hidden_act == "silu" else text.layers[0].mlp.act_fn
        self.layers = []
        for layer in text.layers:
            att, mlp = layer.self_attn, layer.mlp
            self.layers.append(LayerWeights(
                input_norm=layer.input_layernorm.weight, q=att.q_proj.weight, q_bias=att.q_proj.bias,
                k=att.k_proj.weight, k_bias=att.k_proj.bias, v=att.v_proj.weight, v_bias=att.v_proj.bias,
                o=att.o_proj.weight, o_bias=att.o_proj.bias, q_norm=att.q_norm.weight, k_norm=att.k_norm.weight,
                post_norm=layer.post_attention_layernorm.weight, gate=mlp.gate_proj.weight, up=mlp.up_proj.weight,
                down=mlp.down_proj.weight,
            ))

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def rope(self, like: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin (b, n, head_dim) for (3, b, n) mRoPE positions, via the model's own rotary module."""
        return self.text.rotary_emb(like, position_ids)

    def text_rope_table(self, length: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin (length, head_dim) for text positions 0..length-1 (all three mRoPE axes equal)."""
        positions = torch.arange(length, device=device)[None, None].expand(3, 1, -1)
        like = torch.empty(0, dtype=dtype, device=device)
        cos, sin = self.rope(like, positions)
        return cos[0], sin[0]

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.embed)

    def layers_forward(self, hidden: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, attend,
                       visual_mask: torch.Tensor | None = None,
                       deepstack: list[torch.Tensor] | None = None,
                       keep: torch.Tensor | None = None) -> torch.Tensor:
        """Run all decoder layers over ``hidden`` (b, n, D); returns the final-normed hidden states.

        ``keep`` (m,) indexes the positions whose output is wanted: the last layer then
        computes keys and values for all n positions (the cache needs them) but queries,
        attention output and MLP only for those m, and (b, m, D) comes back. The kept
        positions' values are the same as without ``keep``: nothing else reads the
        last layer's other outputs.
        """
        b, n, _ = hidden.shape
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        last = self.num_layers - 1
        for index, w in enumerate(self.layers):
            h = rms_norm(hidden, w.input_norm, self.eps)
            k = rms_norm(F.linear(h, w.k, w.k_bias).view(b, n, self.kv_heads, self.head_dim), w.k_norm, self.eps)
            v = F.linear(h, w.v, w.v_bias).view(b, n, self.kv_heads, self.head_dim)
            k, v = k.transpose(1, 2), v.transpose(1, 2)
            k = k * cos + rotate_half(k) * sin
            queries, q_cos, q_sin = None, cos, sin
            if keep is not None and index == last:
                queries, q_cos, q_sin = keep, cos.index_select(2, keep), sin.index_select(2, keep)
                h, hidden = h.index_select(1, keep), hidden.index_select(1, keep)
            m = h.shape[1]
            q = rms_norm(F.linear(h, w.q, w.q_bias).view(b, m, self.heads, self.head_dim), w.q_norm, self.eps)
            q = q.transpose(1, 2)
            q = q * q_cos + rotate_half(q) * q_sin
            out = attend(index, q, k, v) if queries is None else attend(index, q, k, v, queries=queries)
            hidden = hidden + F.linear(out, w.o, w.o_bias)
            h = rms_norm(hidden, w.post_norm, self.eps)
            hidden = hidden + F.linear(self.act(F.linear(h, w.gate)) * F.linear(h, w.up), w.down)
            if deepstack is not None and index < len(deepstack):
                hidden = hidden.clone()
                hidden[visual_mask] = hidden[visual_mask] + deepstack[index].to(hidden.dtype)
        return rms_norm(hidden, self.final_norm, self.eps)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(hidden, self.lm_head, self.lm_head_bias)
