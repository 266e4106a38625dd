"bf16 mixed precision and activation recomputation on the CPU (chapters 25 and 27 have the explanations and the GPU checks)."
import numpy as np
import pytest
from mint.core import ModelConfig, preset
from mint.data import Batch
from mint.model import init_params, loss_and_grads, Workspace, workspace_bytes
from mint.precision import to_bf16, from_bf16, round_bits_ref, gemm_bf16
from mint.train import TrainConfig, CpuEngine


def _batch(cfg, B, T, seed=0, packed=False):
    r = np.random.default_rng(seed)
    ids = r.integers(0, cfg.vocab_size, (B, T + 1)).astype(np.int32)
    seg = np.repeat(np.arange(2), [T // 2, T - T // 2])[None].repeat(B, 0).astype(np.int32) if packed else None
    pos = (np.arange(T)[None].repeat(B, 0) - (np.where(seg == 1, T // 2, 0) if packed else 0)).astype(np.int32)
    mask = (r.random((B, T)) < 0.8).astype(np.float32)
    return Batch(ids[:, :-1], ids[:, 1:], mask, pos, seg)


def _grads(cfg, batch, **kw):
    p = init_params(cfg, seed=1)
    g = np.zeros_like(p)
    B, T = batch.input_ids.shape
    return loss_and_grads(p, g, cfg, batch, Workspace(cfg, B, T, **kw)), g


def test_rounding_matches_ml_dtypes_and_round_trips():
    u = np.random.default_rng(0).integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    ties = (np.arange(2**16, dtype=np.uint32) << 16) | 0x8000
    x = np.concatenate([u, ties]).view(np.float32)
    b = to_bf16(x)
    assert b.dtype == np.uint16 and np.array_equal(b, round_bits_ref(x))
    assert np.array_equal(to_bf16(from_bf16(b)), b)
    assert to_bf16(np.float32([1 + 2**-8]))[0] == to_bf16(np.float32([1.0]))[0]        # a tie goes to even
    with pytest.raises(ValueError, match="to_bf16: x must be float32"):
        to_bf16(np.zeros(3))


def test_bf16_gemm_is_the_product_of_the_rounded_operands():
    r = np.random.default_rng(0)
    A, B = r.standard_normal((33, 70), dtype=np.float32), r.standard_normal((70, 17), dtype=np.float32)
    c = gemm_bf16(to_bf16(A), to_bf16(B))
    exact = from_bf16(to_bf16(A)).astype(np.float64) @ from_bf16(to_bf16(B))
    assert np.abs(c - exact).max() / np.abs(exact).max() < 1e-6
    assert 1e-3 < np.abs(c - A.astype(np.float64) @ B).max() / np.abs(exact).max() < 2e-2


@pytest.mark.parametrize("arch", ["report", "qwen3"])
def test_bf16_step_close_to_fp32(arch):
    cfg = preset("tiny", 53, arch=arch, n_layers=2)
    b = _batch(cfg, 2, 16)
    (l32, g32), (l16, g16) = _grads(cfg, b), _grads(cfg, b, precision="bf16")
    assert abs(l16 - l32) / l32 < 1e-2
    rel = np.linalg.norm(g16 - g32) / np.linalg.norm(g32)
    assert 1e-4 < rel < 5e-2          # bf16 changes the gradient, by about a rounding carried through the layers


@pytest.mark.parametrize("attention", ["unfused", "flash-tc"])
def test_bf16_keeps_gate_up_rounded(attention):
    "bf16: SwiGLU rounds the gate-up GEMM's fp32 output into the kept bf16 copy (autocast's linear output) and computes m from it."
    from mint.precision import linear_bf16, swiglu_forward_from_bf16
    from mint.model import views
    cfg = preset("tiny", 53, n_layers=2)
    b = _batch(cfg, 2, 16)
    ws = Workspace(cfg, 2, 16, attention=attention, precision="bf16", recompute="keep")
    p = init_params(cfg, seed=1)
    loss_and_grads(p, np.zeros_like(p), cfg, b, ws)
    v, W16 = ws.views(2, 16), views(to_bf16(p), cfg)
    for l, A in enumerate(v.layers):
        gu32 = linear_bf16(A.b16, W16.layers[l].gu_w, views(p, cfg).layers[l].gu_b)           # the GEMM's fp32 rows [N, 2F]
        assert np.array_equal(A.gu16, to_bf16(gu32))
        assert np.array_equal(A.m16, swiglu_forward_from_bf16(A.gu16, np.empty_like(A.m16)))
    assert "n32" in ws.bufs and not any(k.startswith("gu.") or k == "m32" for k in ws.bufs)


@pytest.mark.parametrize("arch", ["report", "llama", "qwen3"])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("attention", ["unfused", "flash"])
@pytest.mark.parametrize("mode", [False, True, "mlp"])
def test_recompute_gradients_bit_identical(arch, precision, attention, mode):
    "Every mode, the default (False: a, b, m recomputed, dlogits over the logits) too, gives the bits of keeping everything."
    cfg = preset("tiny", 47, arch=arch, n_layers=3)
    b = _batch(cfg, 2, 12, packed=attention == "flash")
    (l0, g0), (l1, g1) = (_grads(cfg, b, precision=precision, attention=attention, recompute=rc) for rc in ("keep", mode))
    assert l0 == l1 and np.array_equal(g0.view(np.uint32), g1.view(np.uint32))


@pytest.mark.parametrize("arch", ["report", "qwen3"])
def test_recompute_bit_identical_with_flash_tc(arch):
    "flash-tc (the GEMMs' rows read in place, bf16 q, k, v): every mode gives the bits of the run that keeps everything."
    cfg = preset("tiny", 47, arch=arch, n_layers=3)
    b = _batch(cfg, 2, 16)
    (l0, g0), *rest = (_grads(cfg, b, precision="bf16", attention="flash-tc", recompute=rc) for rc in ("keep", False, "block", "mlp"))
    for l1, g1 in rest: assert l0 == l1 and np.array_equal(g0.view(np.uint32), g1.view(np.uint32))

def test_recompute_modes_keep_what_they_say():
    from mint.model import workspace_shapes
    cfg = ModelConfig(vocab_size=4130, d_model=768, n_heads=12, n_layers=12, max_seq_len=512)
    shapes = {m: workspace_shapes(cfg, 32, 512, attention="flash-tc", precision="bf16", recompute=m) for m in ("keep", "off", "block", "mlp")}
    kept = {m: {k for k in s if k.endswith(".5")} for m, s in shapes.items()}
    assert kept["block"] == {"x.5"}
    assert kept["keep"] - kept["off"] == {"a.5", "b.5", "m.5"}          # the default: the elementwise outputs are shared
    assert kept["off"] - kept["mlp"] == {"gu16.5"}                       # mlp: also gate|up (bf16, as autocast keeps it)
    assert not any(k.startswith("gu.") for s in shapes.values() for k in s)   # bf16: no fp32 gate|up kept, gu_rows is the GEMM's scratch
    assert "gu.5" in workspace_shapes(cfg, 32, 512, attention="flash", recompute="off")   # fp32 keeps it as before
    assert "dlogits" in shapes["keep"] and not any("dlogits" in s for m, s in shapes.items() if m != "keep")
    keep, off, block, mlp = (workspace_bytes(cfg, 32, 512, attention="flash-tc", precision="bf16", recompute=m) for m in shapes)
    N, L1 = 32 * 512, 11                                                 # 11 layers share layer 0's buffers
    assert keep - off == L1 * N * 2 * (2 * cfg.d_model + cfg.d_ff) + N * cfg.vocab_size * 4   # bf16 a, b, m; fp32 dlogits
    assert block < mlp < off and off - mlp == L1 * N * 2 * 2 * cfg.d_ff                      # bf16 gate|up
    assert round(off / 2**20) == 5_834      # MiB at d768: 7,754 before gate|up went bf16 and n32, m32 left the device
    for bad in ("all", 2):
        with pytest.raises(ValueError, match="recompute must be one of"):
            workspace_bytes(cfg, 1, 8, recompute=bad)


def test_memory_shrinks_and_training_matches():
    cfg = ModelConfig(vocab_size=4130, d_model=1024, n_heads=32, n_layers=18, max_seq_len=512)
    full, bf, rc = (workspace_bytes(cfg, 32, 512, **kw) for kw in (dict(attention="flash"), dict(attention="flash-tc", precision="bf16"),
                                                                  dict(attention="flash", recompute=True)))
    assert bf < full and rc < full / 3
    cfg = preset("tiny", 40, n_layers=2)
    batches = [_batch(cfg, 2, 16, seed=s) for s in range(3)]
    ps = []
    for rc in (False, True):
        e = CpuEngine(init_params(cfg), cfg, TrainConfig(batch_size=2, seq_len=16, recompute=rc, precision="bf16"))
        for i, b in enumerate(batches): e.step(b, 1e-3, i + 1)
        ps.append(e.p.copy())
    assert np.array_equal(ps[0], ps[1])


def test_config_and_cli_name_the_switches(capsys):
    with pytest.raises(ValueError, match="TrainConfig.precision must be one of"):
        TrainConfig(precision="fp16")
    with pytest.raises(ValueError, match="precision must be one of"):
        Workspace(preset("tiny", 20), 1, 4, precision="half")
    from mint.cli import build_parser
    help_text = build_parser()._subparsers._group_actions[0].choices["train"].format_help()
    assert "--precision {fp32,bf16}" in help_text and "--recompute [{off,block,mlp}]" in help_text and "bit-identical" in help_text


def test_mint_train_bf16_recompute_from_the_cli(tmp_path):
    from safetensors.numpy import load_file
    from mint.cli import main
    out = tmp_path / "run"
    code = main(["train", "--preset", "tiny", "--steps", "3", "--batch-size", "2", "--eval-every", "3", "--max", "300",
                 "--precision", "bf16", "--recompute", "mlp", "--out", str(out), "--no-progress"])
    assert code == 0
    assert {str(t.dtype) for t in load_file(out / "best.safetensors").values()} == {"float32"}    # checkpoints stay fp32


def test_memory_check_counts_recompute():
    from mint.train import training_bytes, check_memory
    cfg = ModelConfig(vocab_size=4130, d_model=768, n_heads=12, n_layers=12, max_seq_len=512)
    full, rc = training_bytes(cfg, 32, 512), training_bytes(cfg, 32, 512, recompute=True)
    assert rc < full / 2
    check_memory(cfg, 32, 512, available=(full + rc) // 2, recompute=True)          # fits only with --recompute
    with pytest.raises(MemoryError, match="lower --batch-size"):
        check_memory(cfg, 32, 512, available=(full + rc) // 2)


def test_bench_scale_runs_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    import json, os, subprocess, sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    r = subprocess.run([sys.executable, str(root / "bench" / "bench_scale.py"), "--device", "cpu", "--configs", "tiny",
                        "--steps", "1", "--rounds", "1", "--out", str(tmp_path)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (path,) = tmp_path.glob("scale_cpu_*.json")
    doc = json.loads(path.read_text())
    res = doc["runs"][0]["results"]
    assert doc["complete"] and not list(tmp_path.glob("*.tmp"))     # rewritten after every path; complete at the end
    assert set(res) == {"mint fp32", "mint bf16", "torch fp32"} and all(v["loss_check"] for v in res.values())
    assert "| tiny |" in r.stdout and "Mint bf16 (NumPy emulation)" in r.stdout


@pytest.mark.slow                                                   # about a minute a step in the simulator; chapter 27 runs the same check
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_default_recompute_bit_identical_on_device(precision):
    "Device arrays (the simulator without a GPU): the default workspace (a, b, m recomputed, dlogits over the logits) gives the loss and the non-embedding gradient bits of the one that keeps everything (the embedding's adds are atomics, in any order)."
    from numba import cuda
    from mint.model import views, loss_forward, backward
    from mint.gpu_train import device_workspace
    cfg = ModelConfig(vocab_size=20, d_model=8, n_heads=2, n_layers=2, max_seq_len=8)
    p, b = init_params(cfg, seed=0), _batch(cfg, 2, 8)
    out = []
    for rc in ("keep", False):
        v = device_workspace(cfg, 2, 8, precision=precision, recompute=rc).load_batch(b)
        d_p, d_g = cuda.to_device(p), cuda.to_device(np.zeros_like(p))
        loss = loss_forward(views(d_p, cfg), cfg, v)
        backward(views(d_p, cfg), views(d_g, cfg), cfg, v)
        out.append((float(loss.copy_to_host()[0]), np.delete(d_g.copy_to_host(), np.s_[:20 * 8]).view(np.uint32)))
    assert out[0][0] == out[1][0] and np.array_equal(out[0][1], out[1][1])


def test_cpu_engine_keeps_activations_where_they_fit(monkeypatch):
    "recompute off on the CPU: every activation kept (the same bits, no per-layer rebuilds) when that takes at most half the free memory; else the rebuilds."
    import mint.loop as L
    from mint.model import init_params
    from mint.train import CpuEngine, TrainConfig, training_bytes
    cfg = ModelConfig(vocab_size=64, d_model=32, n_heads=2, n_layers=2, max_seq_len=16)
    p, tc = init_params(cfg, seed=0), TrainConfig(batch_size=2, seq_len=16)
    keep = training_bytes(cfg, 2, 16, recompute="keep")
    monkeypatch.setattr(L, "available_memory", lambda: 2 * keep)
    assert CpuEngine(p.copy(), cfg, tc).ws.recompute == "keep"
    monkeypatch.setattr(L, "available_memory", lambda: 2 * keep - 1)
    assert CpuEngine(p.copy(), cfg, tc).ws.recompute in ("off", False)
    assert CpuEngine(p.copy(), cfg, TrainConfig(batch_size=2, seq_len=16, recompute="mlp")).ws.recompute == "mlp"


def test_bf16_gradient_rows_padded_for_the_tensor_cores():
    "bf16: a gradient whose rows are not whole 16-byte chunks (a vocabulary of 53, or 4,130) is rounded into rows 16 bytes apart (`padded_rows`: GEMM v8 reads rows that start on 16 bytes); the gradients are the bits of rounding it into contiguous rows, and the gaps are never written."
    from mint.precision import linear_backward_bf16
    from mint.tensor_cores import padded_rows, padded_width
    r = np.random.default_rng(0)
    dy = r.standard_normal((32, 53), dtype=np.float32)
    x16, w16 = to_bf16(r.standard_normal((32, 24), dtype=np.float32)), to_bf16(r.standard_normal((53, 24), dtype=np.float32))
    flat = np.full(32 * padded_width(53), 0xFFFF, np.uint16)
    dy16 = padded_rows(flat, 32, 53)
    assert padded_width(53) == 56 and dy16.shape == (32, 53) and dy16.strides == (112, 2) and np.shares_memory(dy16, flat)
    got = linear_backward_bf16(dy, dy16, x16, w16, has_bias=True)
    ref = linear_backward_bf16(dy, np.empty((32, 53), np.uint16), x16, w16, has_bias=True)
    assert all(np.array_equal(g, e) for g, e in zip(got, ref))
    assert (flat.reshape(32, 56)[:, 53:] == 0xFFFF).all()
    assert padded_rows(flat, 4, 56).flags.c_contiguous                      # whole chunks: contiguous, as before
    with pytest.raises(ValueError, match="padded_rows: 33 rows of 53"):
        padded_rows(flat, 33, 53)


def test_fused_round_and_bias_grad_into_padded_rows(monkeypatch):
    "Device arrays (the simulator without a GPU): the one-read rounding + bias gradient writes a gradient's bf16 rows 16 bytes apart (`padded_rows`, the LM head's layout, as `_linear_back` makes them, pairs through the buffer's uint32 view) with the bits and bias gradient of contiguous rows, and leaves the gaps alone; without the pairs view such rows take the two calls, with the same bits."
    from numba import cuda
    import mint.precision as P
    from mint.precision import to_bf16_and_bias_grad
    from mint.tensor_cores import padded_rows, padded_width
    N, O = 1030, 6                                          # more than 1,024 rows: bias_grad sums in two parts, the fused kernel's case
    dy = cuda.to_device(np.random.default_rng(0).standard_normal((N, O), dtype=np.float32))
    ref16, refdb = to_bf16_and_bias_grad(dy, cuda.to_device(np.zeros((N, O), np.uint16)))
    two_calls = P.to_bf16
    for fused in (True, False):
        monkeypatch.setattr(P, "to_bf16", (lambda *a, **k: pytest.fail("took the two calls")) if fused else two_calls)
        flat = cuda.to_device(np.full(N * padded_width(O), 0xFFFF, np.uint16))
        pairs = padded_rows(flat.view(np.uint32), N, O // 2, 4) if fused else None
        got16, gotdb = to_bf16_and_bias_grad(dy, padded_rows(flat, N, O), pairs=pairs)
        assert np.array_equal(got16.copy_to_host(), ref16.copy_to_host()) and np.array_equal(gotdb.copy_to_host(), refdb.copy_to_host())
        assert (flat.copy_to_host().reshape(N, padded_width(O))[:, O:] == 0xFFFF).all()
