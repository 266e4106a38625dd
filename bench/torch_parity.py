"""Check that the peer (bench/torch_model.py) computes what Mint computes: on the same weights and batch, the
PyTorch loss and gradients (mapped back to Mint's names) equal `mint.model.loss_and_grads`.

    python bench/torch_parity.py

float64 agrees to ~1e-10 relative, float32 to ~1e-5. `tests/test_torch_parity.py` runs the same checks
(skipped where torch is not installed).
"""
from __future__ import annotations
import sys
from pathlib import Path
from types import SimpleNamespace
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]   # run from anywhere, with or without `pip install -e .`
from torch_model import MintTorch, load_flat, grads_to_flat, batch_to_torch, loss_of_batch  # noqa: E402
from mint.core import ModelConfig, rel_error  # noqa: E402
from mint.model import init_params, loss_and_grads, param_specs, views  # noqa: E402

TOL = {"float64": 1e-10, "float32": 1e-5}


def parity_batch(cfg, B: int = 2, T: int = 8, packed: bool = True, seed: int = 1):
    "A batch with a partial loss mask; packed: two segments per row (positions restart) and one padding slot (seg −1)."
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, cfg.vocab_size, (B, T)).astype(np.int32)
    tg = rng.integers(0, cfg.vocab_size, (B, T)).astype(np.int32)
    mask = (rng.random((B, T)) > 0.3).astype(np.float32); mask[:, 0] = 1
    if not packed:
        pos = np.broadcast_to(np.arange(T, dtype=np.int32), (B, T)).copy()
        return SimpleNamespace(input_ids=ids, targets=tg, loss_mask=mask, pos=pos, seg=None)
    cut = T // 2
    seg = np.array([[0] * cut + [1] * (T - cut)] * B, np.int32)
    pos = np.array([list(range(cut)) + list(range(T - cut))] * B, np.int32)
    seg[:, -1] = -1; mask[:, -1] = 0                          # a padding slot: sees nothing, counts nothing
    return SimpleNamespace(input_ids=ids, targets=tg, loss_mask=mask, pos=pos, seg=seg)


def parity(cfg, dtype=np.float64, packed: bool = True, attn_impl: str = "math", B: int = 2, T: int = 8, seed: int = 3):
    "(loss error, gradient rel_error over the flat buffer, worst tensor name and its rel_error) of PyTorch vs Mint."
    params = init_params(cfg, seed=seed).astype(dtype)
    params += (np.random.default_rng(seed + 1).standard_normal(params.shape) * 0.05).astype(dtype)   # non-trivial biases/gains
    batch = parity_batch(cfg, B, T, packed, seed)
    grads = np.zeros_like(params)
    loss_mint = loss_and_grads(params, grads, cfg, batch)
    model = load_flat(MintTorch(cfg, attn_impl).to(torch.float64 if dtype == np.float64 else torch.float32), params, cfg)
    loss_t = loss_of_batch(model, batch_to_torch(batch))
    loss_t.backward()
    g_t = grads_to_flat(model, cfg, np.float64)
    per = {n: rel_error(a, b) for (n, a), b in zip(views(grads, cfg).named.items(), views(g_t, cfg).named.values())}
    worst = max(per, key=per.get)
    return abs(loss_mint - float(loss_t.detach())) / max(abs(loss_mint), 1e-30), rel_error(grads, g_t), worst, per[worst]


CASES = [  # (name, cfg, packed, attn_impl, B, T)
    ("toy, packed+padding, math", ModelConfig(vocab_size=11, d_model=8, n_heads=2, n_layers=2, max_seq_len=8), True, "math", 2, 8),
    ("toy, causal, sdpa", ModelConfig(vocab_size=11, d_model=8, n_heads=2, n_layers=2, max_seq_len=8), False, "sdpa", 2, 8),
    ("tiny-like, packed+padding, math", ModelConfig(vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=24), True, "math", 3, 19),
    ("tiny-like, causal, sdpa", ModelConfig(vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=24), False, "sdpa", 3, 19),
    # the architecture switches: each bias off, QK-norm on (Qwen3: QK-norm and no bias), QK-norm with every bias
    ("toy, no biases, packed", ModelConfig(vocab_size=11, d_model=8, n_heads=2, n_layers=2, max_seq_len=8,
                                           attention_bias=False, mlp_bias=False, lm_head_bias=False), True, "math", 2, 8),
    ("toy, qwen3 (qk_norm, no biases), packed", ModelConfig(vocab_size=11, d_model=8, n_heads=2, n_layers=2, max_seq_len=8,
        qk_norm=True, attention_bias=False, mlp_bias=False, lm_head_bias=False), True, "math", 2, 8),
    ("tiny-like, qk_norm + biases, sdpa", ModelConfig(vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=24,
                                                     qk_norm=True), False, "sdpa", 3, 19),
]


def main():
    torch.manual_seed(0)
    ok = True
    print(f"{'case':34s} {'dtype':8s} {'loss err':>9s} {'grad err':>9s}  worst tensor")
    for name, cfg, packed, impl, B, T in CASES:
        for dt in (np.float64, np.float32):
            le, ge, wn, we = parity(cfg, dt, packed, impl, B, T)
            tol = TOL[np.dtype(dt).name]
            good = le <= tol and ge <= tol
            ok &= good
            print(f"{name:34s} {np.dtype(dt).name:8s} {le:9.1e} {ge:9.1e}  {wn} ({we:.1e}){'' if good else '  FAIL'}")
    n = len(param_specs(CASES[0][1]))
    print(f"every one of the {n} (toy) parameter tensors is matched by name; tolerances {TOL}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
