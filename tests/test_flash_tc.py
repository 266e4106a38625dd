"""The tensor-core flash attention's NumPy emulation (mint.flash_tc) at tiny shapes: the same tiling, exp2 online softmax
and bf16 roundings as the kernels, checked against the float64 references (causal and packed, with padding), and the
flash-tc attention in the model's one wiring against the FP32 fused path."""
import numpy as np
import pytest
from mint.flash_tc import (bf16_bits, bf16_value, flash_tc_forward, flash_tc_backward, attention_provider, HEAD_DIMS)
from mint.flash_attention import flash_attention_forward_ref, flash_attention_backward_ref
from mint.core import rel_error, preset
from mint.model import Workspace, init_params, views, loss_forward, backward, workspace_shapes
from mint.data import Batch


def _inputs(B, T, H, hd, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (bf16_bits(rng.standard_normal((B, T, H, hd))) for _ in range(3))
    return q, k, v, rng.standard_normal((B, T, H, hd)).astype(np.float32)


@pytest.mark.parametrize("hd,packed", [(16, False), (32, True), (128, True)])
def test_emulation_matches_float64(hd, packed):
    B, T, H = 2, 70, 2                                  # 70 rows: two 64-row tiles, the second partial
    q, k, v, dout = _inputs(B, T, H, hd, hd)
    seg = np.array([[0] * 25 + [1] * 40 + [-1] * 5, [3] * 70], np.int32) if packed else None
    o, lse = flash_tc_forward(q, k, v, seg)
    Q, K, V = (bf16_value(a).astype(np.float64) for a in (q, k, v))
    ro, rl = flash_attention_forward_ref(Q, K, V, seg)
    assert rel_error(o, ro) < 5e-3
    seen = rl > -1e29
    assert np.abs(lse - rl)[seen].max() < 1e-4
    if packed: assert (o[0, 65:] == 0).all()           # padding rows see nothing
    g = flash_tc_backward(dout, q, k, v, o, lse, seg)
    rg = flash_attention_backward_ref(dout.astype(np.float64), Q, K, V, ro, rl, seg)
    assert all(np.isfinite(a).all() for a in g)
    assert max(rel_error(a, b) for a, b in zip(g, rg)) < 1e-2


def test_float32_inputs_round_like_bf16():
    q, k, v, _ = _inputs(1, 20, 1, 16, 0)
    o16, _ = flash_tc_forward(q, k, v)
    o32, _ = flash_tc_forward(*(bf16_value(a) for a in (q, k, v)))
    np.testing.assert_array_equal(o16, o32)


def test_bad_input_errors():
    q, k, v, _ = _inputs(1, 8, 1, 16, 0)
    with pytest.raises(ValueError, match="flash_tc_forward: k must be"): flash_tc_forward(q, k[:, :4], v)
    with pytest.raises(ValueError, match="head_dim must be one of"): flash_tc_forward(q[..., :8], k[..., :8], v[..., :8])
    assert 128 in HEAD_DIMS and 8 not in HEAD_DIMS


def test_model_flash_tc_matches_fp32_flash():
    cfg = preset("tiny")
    params = init_params(cfg, seed=0)
    ids = np.random.default_rng(1).integers(6, cfg.vocab_size, (2, 24)).astype(np.int32)
    pos = np.tile(np.arange(24, dtype=np.int32), (2, 1))
    batch = Batch(ids, np.roll(ids, -1, 1), np.ones((2, 24), np.float32), pos, None)
    out = {}
    for att in ("flash", "flash-tc"):
        v_ = Workspace(cfg, 2, 24, attention=att).load_batch(batch)
        g = np.zeros_like(params)
        loss = float(loss_forward(views(params, cfg), cfg, v_)); backward(views(params, cfg), views(g, cfg), cfg, v_)
        out[att] = loss, g
    assert abs(out["flash-tc"][0] - out["flash"][0]) < 1e-2
    assert rel_error(out["flash-tc"][1], out["flash"][1]) < 5e-2
    assert "lse.0" in workspace_shapes(cfg, 2, 24, attention="flash-tc")


def test_attention_provider():
    assert attention_provider("bf16", "auto") == "flash-tc" and attention_provider("bf16", "flash") == "flash-tc"
    assert attention_provider("bf16", "unfused") == "unfused" and attention_provider("fp32", "auto") == "auto"
    assert attention_provider("bf16", "auto", head_dim=64) == "flash-tc" and attention_provider("bf16", "auto", head_dim=24) == "auto"
    with pytest.raises(ValueError, match="precision"): attention_provider("fp16")


NVCC = __import__("shutil").which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="no nvcc: the device code is compiled on GPU hosts only (NVRTC)")
@pytest.mark.parametrize("hd,qkv,dout", [(16, np.float32, np.float32), (64, np.uint16, np.float32), (64, np.float32, np.uint16),
                                         (96, np.float32, np.float32), (128, np.uint16, np.uint16)])
def test_device_code_builds_as_kernels(tmp_path, hd, qkv, dout):
    """The tilings (head_dim 16, 64, 96, 128) and input types of the device code, each function wrapped in a kernel and
    built by nvcc for sm_90 (ptxas too): syntax, and each kernel's static shared memory within the 48 KB a block gets
    without asking (a `-rdc` build of the functions alone does not check that; the double-buffered forward at head_dim
    128 once needed about 69 KB)."""
    import re, subprocess
    from mint.flash_tc import tc_source
    src, name = tc_source(hd, qkv, dout, np.float32)
    for fn, params in re.findall(r'extern "C" __device__ void (mint_\w+)\(([^)]*)\)', src):   # a kernel passing each one's arguments
        names = [p.split()[-1] for p in params.split(",")]
        src += f'\nextern "C" __global__ void k_{fn}({params}) {{ {fn}({", ".join(names)}); }}'
    (tmp_path / "k.cu").write_text(src)
    r = subprocess.run([NVCC, "-arch=sm_90", "-c", "-o", str(tmp_path / "k.o"), str(tmp_path / "k.cu"), "-Xptxas", "-v"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "error" not in r.stderr and "warning" not in r.stderr, r.stderr[-3000:]
