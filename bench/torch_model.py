"""The peer: Mint's model (`mint.model`) written in PyTorch, module for module, so the benchmarks compare
the same computation on the same weights.

The module tree mirrors Hugging Face Llama, so `state_dict()` keys are exactly Mint's parameter names
(`mint.model.param_specs`): `load_flat` copies Mint's flat buffer in by name and `grads_to_flat` maps
PyTorch's `.grad`s back into a flat buffer of Mint's layout.

Architecture (mint.model, report §5.7–§5.9, §6): embedding × √d_model; per layer pre-norm
RMSNorm(ε=cfg.rms_eps, gain) → q/k/v Linear (biases if cfg.attention_bias) → with cfg.qk_norm an RMSNorm over
head_dim of q and k (Qwen3: `q_norm`, `k_norm`) → RoPE on pairs (i, i+head_dim/2), θ = pos·10000^(−2i/head_dim)
→ causal (or block-causal with `seg`) attention, scale 1/√head_dim → o_proj → residual; RMSNorm →
SwiGLU FFN (gate/up/down, biases if cfg.mlp_bias, d_ff = 3·d_model) → residual; final RMSNorm; lm_head (bias if
cfg.lm_head_bias); masked mean cross-entropy.

Needs torch (a bench-only dependency: `pip install -e ".[bench]"`).
"""
from __future__ import annotations
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["RMSNorm", "Attention", "MLP", "Block", "MintTorch", "load_flat", "grads_to_flat", "masked_ce",
           "batch_to_torch", "loss_of_batch"]


class RMSNorm(nn.Module):
    "y = x·g/√(mean(x²)+ε) over the last dim; `weight` = g (ones at init)."
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_cos_sin(pos, head_dim: int, dtype):
    "cos θ, sin θ of shape [B, T, 1, head_dim/2] with θ = pos·10000^(−2i/head_dim), computed in float64 like Mint."
    inv_freq = 10000.0 ** (-2.0 * torch.arange(head_dim // 2, dtype=torch.float64, device=pos.device) / head_dim)
    theta = pos.to(torch.float64)[..., None] * inv_freq                    # [B, T, hd/2]
    return theta.cos().to(dtype)[:, :, None, :], theta.sin().to(dtype)[:, :, None, :]


def apply_rope(x, cos, sin):
    "Rotate pairs (i, i+hd/2) of x [B, T, H, hd] by θ: (x1·c − x2·s, x1·s + x2·c)."
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def allowed_mask(seg, T: int, device):
    "Bool [B|1, 1, T, T]: key j visible from query t (j ≤ t; with seg[B,T] also seg equal and ≥ 0, as mint.attention.attention_mask)."
    causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    if seg is None: return causal[None, None]
    same = (seg[:, :, None] == seg[:, None, :]) & (seg >= 0)[:, :, None]
    return (causal & same)[:, None]


class Attention(nn.Module):
    "Multi-head causal self-attention: q/k/v/o projections (biases if cfg.attention_bias), optional QK-norm, RoPE."
    def __init__(self, cfg):
        super().__init__()
        d = cfg.d_model
        self.n_heads, self.head_dim = cfg.n_heads, cfg.head_dim
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d, bias=cfg.attention_bias) for _ in range(4))
        if cfg.qk_norm: self.q_norm, self.k_norm = RMSNorm(cfg.head_dim, cfg.rms_eps), RMSNorm(cfg.head_dim, cfg.rms_eps)
        self.qk_norm = cfg.qk_norm

    def forward(self, x, cos, sin, seg, impl: str):
        B, T, d = x.shape
        H, hd = self.n_heads, self.head_dim
        q, k = self.q_proj(x).view(B, T, H, hd), self.k_proj(x).view(B, T, H, hd)
        if self.qk_norm: q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rope(q, cos, sin).transpose(1, 2)                                  # [B, H, T, hd]
        k = apply_rope(k, cos, sin).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, hd).transpose(1, 2)
        if impl == "sdpa" and seg is None:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            # Explicit softmax, as Mint: masked scores get a finite minimum, then masked probs are zeroed exactly,
            # so a row that sees nothing (seg < 0 padding) gives 0, not NaN.
            allowed = allowed_mask(seg, T, x.device)
            s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
            s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
            p = torch.softmax(s, dim=-1) * allowed
            o = p @ v
        return self.o_proj(o.transpose(1, 2).reshape(B, T, d))


class MLP(nn.Module):
    "SwiGLU FFN: down(swish(gate(x)) ⊙ up(x)), d_ff = 3·d_model, biases if cfg.mlp_bias."
    def __init__(self, cfg):
        super().__init__()
        d, d_ff, b = cfg.d_model, cfg.d_ff, cfg.mlp_bias
        self.gate_proj, self.up_proj = nn.Linear(d, d_ff, bias=b), nn.Linear(d, d_ff, bias=b)
        self.down_proj = nn.Linear(d_ff, d, bias=b)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    "Pre-norm decoder layer: h = x + Attn(RMSNorm₁(x)); out = h + MLP(RMSNorm₂(h))."
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.d_model, cfg.rms_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.d_model, cfg.rms_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, seg, impl):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, seg, impl)
        return h + self.mlp(self.post_attention_layernorm(h))


class _Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.rms_eps)


class MintTorch(nn.Module):
    """Mint's transformer in PyTorch (`cfg`: a `mint.core.ModelConfig`); parameter names are Mint's / Hugging Face's.

    `attn_impl`: "sdpa" (`F.scaled_dot_product_attention`, used when there is no `seg`) or "math" (explicit softmax)."""
    def __init__(self, cfg, attn_impl: str = "sdpa"):
        super().__init__()
        if attn_impl not in ("sdpa", "math"): raise ValueError(f"attn_impl must be 'sdpa' or 'math', got {attn_impl!r}")
        self.cfg, self.attn_impl = cfg, attn_impl
        self.model = _Decoder(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=cfg.lm_head_bias)

    def forward(self, input_ids, pos=None, seg=None):
        "Logits [B, T, V] for input_ids int [B, T]; pos int [B, T] (default 0..T-1 per row); seg int [B, T] or None."
        B, T = input_ids.shape
        if T > self.cfg.max_seq_len: raise ValueError(f"seq_len {T} exceeds max_seq_len {self.cfg.max_seq_len}")
        if pos is None: pos = torch.arange(T, device=input_ids.device).expand(B, T)
        x = self.model.embed_tokens(input_ids) * math.sqrt(self.cfg.d_model)
        cos, sin = rope_cos_sin(pos, self.cfg.head_dim, x.dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin, seg, self.attn_impl)
        return self.lm_head(self.model.norm(x))


def masked_ce(logits, targets, loss_mask):
    "Mean cross-entropy over the tokens with loss_mask 1 (as mint.loss.cross_entropy_ref): Σ m·CE / Σ m."
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long(), reduction="none")
    m = loss_mask.reshape(-1).to(ce.dtype)
    return (ce * m).sum() / m.sum()


def batch_to_torch(batch, device="cpu"):
    "A mint.data.Batch as a dict of torch tensors (ids/targets/pos long, mask float32, seg long or None) on `device`."
    t = lambda a, dt: torch.as_tensor(np.ascontiguousarray(a)).to(device=device, dtype=dt, non_blocking=True)
    return dict(input_ids=t(batch.input_ids, torch.long), targets=t(batch.targets, torch.long),
                loss_mask=t(batch.loss_mask, torch.float32), pos=t(batch.pos, torch.long),
                seg=None if batch.seg is None else t(batch.seg, torch.long))


def loss_of_batch(model, tb):
    "Masked mean cross-entropy of `model` on a `batch_to_torch` dict."
    logits = model(tb["input_ids"], tb["pos"], tb["seg"])
    return masked_ce(logits, tb["targets"], tb["loss_mask"])


def load_flat(model: MintTorch, params: np.ndarray, cfg) -> MintTorch:
    "Copy Mint's flat parameter buffer into `model` by name (`mint.model.views(params, cfg).named`); every name must match."
    from mint.model import views
    named = views(params, cfg).named
    sd = dict(model.named_parameters())
    if set(sd) != set(named):
        raise ValueError(f"parameter names differ: only in Mint {sorted(set(named) - set(sd))}, "
                         f"only in PyTorch {sorted(set(sd) - set(named))}")
    with torch.no_grad():
        for name, a in named.items():
            p = sd[name]
            if tuple(p.shape) != a.shape: raise ValueError(f"{name}: PyTorch shape {tuple(p.shape)}, Mint {a.shape}")
            p.copy_(torch.from_numpy(np.ascontiguousarray(a)))
    return model


def grads_to_flat(model: MintTorch, cfg, dtype=np.float64) -> np.ndarray:
    "The `.grad` of every parameter written into a flat buffer of Mint's layout (zeros where a grad is None)."
    from mint.model import views, n_params
    out = np.zeros(n_params(cfg), dtype)
    named = views(out, cfg).named
    for name, p in model.named_parameters():
        if p.grad is not None: named[name][...] = p.grad.detach().cpu().numpy()
    return out


@torch.no_grad()
def greedy_decode(model: MintTorch, prompt_ids, n_new: int, banned=()) -> tuple[list[int], float]:
    """Greedy decoding with a preallocated KV cache (batch 1), the peer of `mint.generate.Decoder`: prefill the prompt,
    then one token at a time. `banned` ids get −inf before the argmax (Mint never samples its special tokens).
    Returns (the n_new token ids, seconds spent on them after the prefill)."""
    import time
    cfg, dev = model.cfg, next(model.parameters()).device
    dt = next(model.parameters()).dtype
    L, H, hd, S = cfg.n_layers, cfg.n_heads, cfg.head_dim, cfg.max_seq_len
    K = torch.zeros(L, 1, H, S, hd, device=dev, dtype=dt); V = torch.zeros_like(K)
    ban = torch.tensor(sorted(banned), device=dev, dtype=torch.long)

    def run(ids, start):                                # ids [1, T] at positions start..start+T-1 -> last logits
        T = ids.shape[1]
        pos = torch.arange(start, start + T, device=dev)[None]
        x = model.model.embed_tokens(ids) * math.sqrt(cfg.d_model)
        cos, sin = rope_cos_sin(pos, hd, x.dtype)
        for l, layer in enumerate(model.model.layers):
            a, at = layer.input_layernorm(x), layer.self_attn
            q, k = at.q_proj(a).view(1, T, H, hd), at.k_proj(a).view(1, T, H, hd)
            if at.qk_norm: q, k = at.q_norm(q), at.k_norm(k)
            q, k = apply_rope(q, cos, sin).transpose(1, 2), apply_rope(k, cos, sin).transpose(1, 2)
            K[l, :, :, start:start + T], V[l, :, :, start:start + T] = k, at.v_proj(a).view(1, T, H, hd).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, K[l, :, :, :start + T], V[l, :, :, :start + T], is_causal=T > 1)
            h = x + at.o_proj(o.transpose(1, 2).reshape(1, T, cfg.d_model))
            x = h + layer.mlp(layer.post_attention_layernorm(h))
        z = model.lm_head(model.model.norm(x[:, -1]))[0]
        if len(ban): z[ban] = -math.inf
        return z

    ids = torch.as_tensor(np.asarray(prompt_ids), device=dev, dtype=torch.long)[None]
    z = run(ids, 0)
    if dev.type == "cuda": torch.cuda.synchronize()
    t0, out, p = time.perf_counter(), [], ids.shape[1]
    for _ in range(n_new):
        t = int(torch.argmax(z))                        # .item() waits: one token at a time, as a chat does
        out.append(t)
        if len(out) == n_new: break
        z = run(torch.tensor([[t]], device=dev), p); p += 1
    return out, time.perf_counter() - t0
