"""The same model in plain torch: ``F.linear``, ``scaled_dot_product_attention`` and a static KV cache.

Beside the transformers model it shows how much of a decode step is the framework's: it holds that
model's very tensors (no copy) and computes what the model computes, in the same order and dtype
(RMSNorm in float32, RoPE from the model's inverse frequencies, SwiGLU, top-k routing of a mixture of
experts, a sliding window), and nothing else: no cache objects, masks built per call, hooks or output
classes. ``upcast`` runs it in another dtype (float64 for the reference), converting each weight as
it is used, so no second copy of the model is held.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..host import import_torch


@dataclass(frozen=True)
class Layer:
    """One decoder layer's tensors; ``gate``/``up``/``down`` (dense) or ``router``/``gate_up``/``down`` (experts)."""

    norm1: object
    q: object
    k: object
    v: object
    o: object
    norm2: object
    gate: object = None
    up: object = None
    down: object = None
    router: object = None
    gate_up: object = None


def _layer(block) -> Layer:
    a = block.self_attn
    common = dict(
        norm1=block.input_layernorm.weight,
        q=a.q_proj.weight,
        k=a.k_proj.weight,
        v=a.v_proj.weight,
        o=a.o_proj.weight,
        norm2=block.post_attention_layernorm.weight,
    )
    mlp = block.mlp
    if hasattr(mlp, "experts"):  # Mixtral: a router and experts stored as 3-D tensors
        return Layer(router=mlp.gate.weight, gate_up=mlp.experts.gate_up_proj, down=mlp.experts.down_proj, **common)
    return Layer(gate=mlp.gate_proj.weight, up=mlp.up_proj.weight, down=mlp.down_proj.weight, **common)


class LeanModel:
    """A transformers ``*ForCausalLM`` (Llama, Mistral, Mixtral) re-run in plain torch on its own tensors."""

    def __init__(self, model) -> None:
        cfg = model.config
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.eps = cfg.rms_norm_eps
        self.window = getattr(cfg, "sliding_window", None)
        self.top_k = getattr(cfg, "num_experts_per_tok", None)
        base = model.model
        self.embed = base.embed_tokens.weight
        self.layers = [_layer(block) for block in base.layers]
        self.norm = base.norm.weight
        self.head = model.lm_head.weight
        self.inv_freq = base.rotary_emb.inv_freq
        self.rope_scale = base.rotary_emb.attention_scaling
        self.dtype = self.embed.dtype

    def new_cache(self, batch: int, length: int, dtype=None) -> list[tuple[object, object]]:
        """One (keys, values) pair per layer, each (batch, kv_heads, length, head_dim), written before read."""
        torch = import_torch()
        shape = (batch, self.kv_heads, length, self.head_dim)
        return [
            (torch.zeros(shape, dtype=dtype or self.dtype), torch.zeros(shape, dtype=dtype or self.dtype))
            for _ in self.layers
        ]

    def forward(self, ids, pos: int, cache, upcast=None, head_rows=None):
        """Logits of the last of ``ids`` (batch, tokens) placed at positions pos, pos+1, …; the keys and
        values of those tokens are written into ``cache``. ``head_rows`` limits the logits to those
        vocabulary rows; ``upcast`` computes in that dtype (the cache must hold it)."""
        torch = import_torch()
        F = torch.nn.functional

        def w(t):
            return t if upcast is None else t.to(upcast)

        batch, tokens = ids.shape
        x = w(self.embed[ids])
        end = pos + tokens
        positions = torch.arange(pos, end)
        freqs = positions[:, None].float() * self.inv_freq[None, :].float()
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = (emb.cos() * self.rope_scale).to(x.dtype), (emb.sin() * self.rope_scale).to(x.dtype)
        start = 0 if self.window is None or tokens > 1 else max(0, end - self.window)
        mask = None
        if tokens > 1:
            keys = torch.arange(start, end)[None, :]
            mask = keys <= positions[:, None]
            if self.window is not None:
                mask &= keys > positions[:, None] - self.window
        for layer, (kc, vc) in zip(self.layers, cache, strict=True):
            h = self._rms(x, w(layer.norm1))
            q = F.linear(h, w(layer.q)).view(batch, tokens, self.heads, self.head_dim).transpose(1, 2)
            k = F.linear(h, w(layer.k)).view(batch, tokens, self.kv_heads, self.head_dim).transpose(1, 2)
            v = F.linear(h, w(layer.v)).view(batch, tokens, self.kv_heads, self.head_dim).transpose(1, 2)
            kc[:, :, pos:end] = self._rope(k, cos, sin)
            vc[:, :, pos:end] = v
            a = F.scaled_dot_product_attention(
                self._rope(q, cos, sin), kc[:, :, start:end], vc[:, :, start:end], attn_mask=mask, enable_gqa=True
            )
            x = x + F.linear(a.transpose(1, 2).reshape(batch, tokens, -1), w(layer.o))
            h = self._rms(x, w(layer.norm2))
            x = x + (self._experts(h, layer, w) if layer.router is not None else self._mlp(h, layer, w))
        x = self._rms(x[:, -1], w(self.norm))
        return F.linear(x, w(self.head if head_rows is None else self.head[head_rows]))

    def _rms(self, x, weight):
        torch = import_torch()
        x32 = x.to(torch.float32) if x.dtype != import_torch().float64 else x
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x32.to(x.dtype)

    @staticmethod
    def _rope(t, cos, sin):
        torch = import_torch()
        half = t.shape[-1] // 2
        rotated = torch.cat((-t[..., half:], t[..., :half]), dim=-1)
        return t * cos + rotated * sin

    @staticmethod
    def _mlp(h, layer: Layer, w):
        F = import_torch().nn.functional
        return F.linear(F.silu(F.linear(h, w(layer.gate))) * F.linear(h, w(layer.up)), w(layer.down))

    def _experts(self, h, layer: Layer, w):
        """Top-k routing as Mixtral does it: softmax over experts in float32, the k best renormalized."""
        torch = import_torch()
        F = torch.nn.functional
        flat = h.reshape(-1, h.shape[-1])
        probs = torch.softmax(F.linear(flat, w(layer.router)).float(), dim=-1)
        top, index = torch.topk(probs, self.top_k, dim=-1)
        top /= top.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(flat)
        for expert in index.unique().tolist():
            rows, slot = torch.where(index == expert)
            gate, up = F.linear(flat[rows], w(layer.gate_up[expert])).chunk(2, dim=-1)
            y = F.linear(F.silu(gate) * up, w(layer.down[expert])) * top[rows, slot, None]
            out.index_add_(0, rows, y.to(out.dtype))
        return out.view_as(h)
