"""Tensor-core flash attention (mint.flash_tc) on a GPU: correctness against the FP32 fused kernels (mint.flash_attention),
the NumPy emulation and the float64 unfused reference, and timings against PyTorch's scaled_dot_product_attention (flash
backend, bf16) in the same process. Usage: python bench/flash_tc_bench.py [--out results.json] [--quick]"""
import argparse, json, math, time, datetime, sys
import numpy as np
from mint.core import gpu_info
from mint.flash_tc import (flash_tc_forward, flash_tc_backward, flash_tc_forward_emu, flash_tc_backward_emu, bf16_bits, bf16_value)
from mint.flash_attention import flash_attention_forward, flash_attention_backward
from mint.attention import attention_forward_ref, attention_backward_ref
from numba import cuda

def register_caps(text):
    "'128/168/168' (forward/dq/dkdv) or '168' (all three) -> a mint.flash_tc.MAX_REGISTERS dict; 0 = no cap."
    c = [int(x) or None for x in str(text).split("/")]
    return dict(zip(("fwd", "dq", "dkdv"), c * 3 if len(c) == 1 else c))

def rel(a, b): return float(np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b))

def check(B, T, H, hd, use_seg, layout, rng):
    "One correctness case: relative errors of out, lse, dq, dk, dv of the tensor-core kernels against three references."
    qkv = bf16_bits(rng.standard_normal((3, B, T, H, hd)))
    q, k, v = qkv
    seg = None
    if use_seg:
        cut = sorted(rng.choice(np.arange(1, T), 2, replace=False))
        seg = np.zeros((B, T), np.int32); seg[:, cut[0]:] = 1; seg[:, cut[1]:] = 2; seg[0, -5:] = -1   # 3 packed docs + padding
    dout = rng.standard_normal((B, T, H, hd)).astype(np.float32)
    if layout == "fused-f32":        # q|k|v inside one [B,T,3,H,hd] float32 row, as the qkv GEMM writes it (rounded on load)
        rows = cuda.to_device(np.ascontiguousarray(bf16_value(qkv).transpose(1, 2, 0, 3, 4)))
        dq_, dk_, dv_ = rows[:, :, 0], rows[:, :, 1], rows[:, :, 2]
    else:
        dq_, dk_, dv_ = (cuda.to_device(a) for a in (q, k, v))
    segd = None if seg is None else cuda.to_device(seg)
    out = cuda.to_device(np.full((B, T, H, hd), np.nan, np.float32)); lse = cuda.to_device(np.full((B, H, T), np.nan, np.float32))
    grads = [cuda.to_device(np.full((B, T, H, hd), np.nan, np.float32)) for _ in range(3)]
    flash_tc_forward(dq_, dk_, dv_, segd, out=out, lse=lse)
    flash_tc_backward(cuda.to_device(dout), dq_, dk_, dv_, out, lse, segd, *grads)
    got = [out.copy_to_host(), lse.copy_to_host()] + [g.copy_to_host() for g in grads]
    again = [out.copy_to_host()]
    flash_tc_backward(cuda.to_device(dout), dq_, dk_, dv_, out, lse, segd, *grads)
    deterministic = all(np.array_equal(a, g.copy_to_host()) for a, g in zip(got[2:], grads))
    d16 = cuda.to_device(np.full((B, T, H, hd), 0xFFFF, np.uint16))              # the dout16 path (training's): same bits
    flash_tc_backward(cuda.to_device(dout), dq_, dk_, dv_, out, lse, segd, *grads, dout16=d16)
    deterministic = deterministic and all(np.array_equal(a, g.copy_to_host()) for a, g in zip(got[2:], grads))
    dout16_exact = bool(np.array_equal(d16.copy_to_host(), bf16_bits(dout)))
    Q, K, V = (bf16_value(a) for a in (q, k, v))                                  # the same bf16 values in float32 ...
    fo, fl = flash_attention_forward(*(cuda.to_device(a) for a in (Q, K, V)), segd)  # ... through the FP32 fused kernels
    fg = flash_attention_backward(cuda.to_device(dout), *(cuda.to_device(a) for a in (Q, K, V)), fo, fl, segd)
    fp32 = [fo.copy_to_host(), fl.copy_to_host()] + [g.copy_to_host() for g in fg]
    Q64, K64, V64 = (a.astype(np.float64) for a in (Q, K, V))
    ro, probs = attention_forward_ref(Q64, K64, V64, seg)                        # the unfused float64 reference
    rg = attention_backward_ref(dout.astype(np.float64), Q64, K64, V64, probs)
    eo, el = flash_tc_forward_emu(q, k, v, seg)
    eg = flash_tc_backward_emu(dout, q, k, v, eo, el, seg)
    seen = fl.copy_to_host() > -1e29
    names = ["out", "lse", "dq", "dk", "dv"]
    row = dict(B=B, T=T, H=H, head_dim=hd, seg=use_seg, layout=layout, all_finite=bool(all(np.isfinite(g).all() for g in got)),
               deterministic=deterministic, dout16_exact=dout16_exact)
    for n, g, f, r, e in zip(names, got, fp32, [ro, None] + list(rg), [eo, el] + list(eg)):
        if n == "lse": g, f, e = g[seen], f[seen], e[seen]
        row[f"{n}_vs_fp32"] = rel(g, f)
        row[f"{n}_vs_emu"] = rel(g, e)
        if r is not None: row[f"{n}_vs_f64"] = rel(g, r)
    return row

def bench_ms(fn, reps=20, warm=3):
    import torch
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(5):
        s.record()
        for _ in range(reps): fn()
        e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    return float(np.median(ts))

def mint_graph(fn, n=10):
    "A CUDA graph of n calls of fn (mint.kernels.capture): replays have no Python launch gaps."
    from mint.kernels import capture
    fn(); g = capture(lambda: [fn() for _ in range(n)])
    return lambda: g.launch()

def torch_graph(fn, n=10):
    import torch
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    return g.replay

def timing(B, T, H, hd, fp32_too):
    import torch
    from torch.nn.attention import sdpa_kernel, SDPBackend
    import torch.nn.functional as F
    g = torch.Generator(device="cuda").manual_seed(0)
    qkv = torch.randn((3, B, T, H, hd), device="cuda", dtype=torch.bfloat16, generator=g)
    dout16 = torch.randn((B, T, H, hd), device="cuda", dtype=torch.bfloat16, generator=g)
    q, k, v = (x.clone().requires_grad_(True) for x in qkv)
    def sdpa_f():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    def sdpa_fb():
        o = sdpa_f(); torch.autograd.grad(o, (q, k, v), dout16.transpose(1, 2))
    with torch.no_grad(): t_sf_eager = bench_ms(sdpa_f)
    t_sfb_eager = bench_ms(sdpa_fb)
    try:
        with torch.no_grad(): t_sf = bench_ms(torch_graph(sdpa_f)) / 10
        t_sfb = bench_ms(torch_graph(sdpa_fb)) / 10
    except Exception as e:                                                        # record eager numbers, say why
        print("torch graph failed:", repr(e)[:200]); t_sf, t_sfb = t_sf_eager, t_sfb_eager
    as_nb = lambda t: cuda.as_cuda_array(t.view(torch.int16)).view(np.uint16)
    mq, mk, mv = (as_nb(x) for x in qkv)
    dout = cuda.as_cuda_array(dout16.float())
    out, lse = cuda.device_array((B, T, H, hd), np.float32), cuda.device_array((B, H, T), np.float32)
    grads = [cuda.device_array((B, T, H, hd), np.float32) for _ in range(3)]
    scratch, d16 = cuda.device_array((B, H, T), np.float32), cuda.device_array((B, T, H, hd), np.uint16)
    fwd = lambda: flash_tc_forward(mq, mk, mv, None, out=out, lse=lse)
    bwd = lambda: flash_tc_backward(dout, mq, mk, mv, out, lse, None, *grads, scratch=scratch, dout16=d16)   # as training calls it
    t_mf_eager, t_mb_eager = bench_ms(fwd), bench_ms(bwd)
    try: t_mf = bench_ms(mint_graph(fwd)) / 10; t_mb = bench_ms(mint_graph(bwd)) / 10
    except Exception as e:
        print("mint graph failed:", repr(e)[:200]); t_mf, t_mb = t_mf_eager, t_mb_eager
    flops_f = 4 * B * H * hd * T * T / 2                                          # causal: half the T x T products
    row = dict(B=B, T=T, H=H, head_dim=hd, timed="CUDA graphs of 10 calls, median of 5x20 replays (eager: Python launches)",
               sdpa_fwd_eager_ms=t_sf_eager, sdpa_fwd_bwd_eager_ms=t_sfb_eager, mint_tc_fwd_eager_ms=t_mf_eager, mint_tc_bwd_eager_ms=t_mb_eager,
               sdpa_fwd_ms=t_sf, sdpa_fwd_bwd_ms=t_sfb, mint_tc_fwd_ms=t_mf, mint_tc_bwd_ms=t_mb,
               mint_tc_fwd_bwd_ms=t_mf + t_mb, fwd_ratio=t_sf / t_mf, fwd_bwd_ratio=t_sfb / (t_mf + t_mb),
               mint_tc_fwd_tflops=flops_f / t_mf / 1e9, sdpa_fwd_tflops=flops_f / t_sf / 1e9,
               mint_tc_fwd_bwd_tflops=3.5 * flops_f / (t_mf + t_mb) / 1e9, sdpa_fwd_bwd_tflops=3.5 * flops_f / t_sfb / 1e9)
    if fp32_too:                                                                  # the rung before: FP32 fused kernels
        fq, fk, fv = (cuda.as_cuda_array(x.float()) for x in qkv)
        fo, fl = cuda.device_array((B, T, H, hd), np.float32), cuda.device_array((B, H, T), np.float32)
        ff = lambda: flash_attention_forward(fq, fk, fv, None, out=fo, lse=fl)
        fb = lambda: flash_attention_backward(dout, fq, fk, fv, fo, fl, None, *grads, scratch=scratch)
        row["mint_fp32_fwd_bwd_ms"] = bench_ms(ff, reps=3, warm=1) + bench_ms(fb, reps=3, warm=1)   # eager: the kernels take ms
    return row

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--out", default=None); ap.add_argument("--quick", action="store_true")
    ap.add_argument("--check-only", action="store_true", help="one correctness case; exit 1 unless it passes")
    ap.add_argument("--cu", default=None, help="time other device code in place of chapter 26's (mint.flash_tc.FLASH_TC_CU, the default): e.g. a changed copy "
                    "written by python -c 'import mint.flash_tc as F; print(F.FLASH_TC_CU, end=\"\")' > /tmp/flash_tc.cu")
    ap.add_argument("--max-registers", default=None, help="register caps of the head_dim <= 64 kernels, F/Q/D (forward/dq/dkdv) or one for all (v2 wants 168)")
    args = ap.parse_args()
    import mint.flash_tc as FT
    if args.cu: FT.FLASH_TC_CU = open(args.cu).read()
    if args.max_registers: FT.MAX_REGISTERS = register_caps(args.max_registers)
    if args.check_only:
        c = check(2, 200, 3, 64, True, "bthd", np.random.default_rng(1))
        ok = c["all_finite"] and c["deterministic"] and c["dout16_exact"] and max(c[n + "_vs_fp32"] for n in ("out", "dq", "dk", "dv")) < 1e-2
        print(json.dumps(c)); print("check", "passed" if ok else "FAILED"); sys.exit(0 if ok else 1)
    import torch
    t0 = time.time()
    rng = np.random.default_rng(17)
    checks = []
    for B, T, H, hd, s, lay in [(2, 200, 3, 64, False, "bthd"), (2, 200, 3, 64, True, "bthd"), (2, 131, 2, 128, True, "bthd"),
                                (2, 150, 2, 64, True, "fused-f32")]:
        checks.append(check(B, T, H, hd, s, lay, rng)); print(json.dumps(checks[-1]), flush=True)
    print(f"checks done {time.time() - t0:.1f}s", flush=True)
    times = []
    for B, T, H, hd in [(16, 512, 16, 64), (8, 1024, 16, 64), (16, 512, 8, 128), (8, 1024, 8, 128)][: 2 if args.quick else 4]:
        times.append(timing(B, T, H, hd, fp32_too=(T == 512 and hd == 64))); print(json.dumps(times[-1]), flush=True)
    rec = dict(date=datetime.date.today().isoformat(), device=gpu_info(), torch=torch.__version__, checks=checks, timings=times)
    if args.out: open(args.out, "w").write(json.dumps(rec, indent=1))
    print(f"{'case':28s} {'out':>8s} {'lse':>8s} {'dq':>8s} {'dk':>8s} {'dv':>8s}  (rel. error vs FP32 fused)")
    for c in checks:
        print(f"{str((c['T'], c['head_dim'], c['seg'], c['layout'])):28s} " + " ".join(f"{c[n + '_vs_fp32']:8.1e}" for n in ("out", "lse", "dq", "dk", "dv")),
              "det" if c["deterministic"] else "NONDET", "" if c["all_finite"] else "NONFINITE")
    print(f"{'T':>5s} {'hd':>4s} {'sdpa f':>8s} {'mint f':>8s} {'sdpa f+b':>9s} {'mint f+b':>9s} {'ratio f+b':>9s} {'mint f TF/s':>11s}")
    for r in times:
        print(f"{r['T']:5d} {r['head_dim']:4d} {r['sdpa_fwd_ms']:8.3f} {r['mint_tc_fwd_ms']:8.3f} {r['sdpa_fwd_bwd_ms']:9.3f} "
              f"{r['mint_tc_fwd_bwd_ms']:9.3f} {r['fwd_bwd_ratio']:9.2f} {r['mint_tc_fwd_tflops']:11.1f}")
    print(f"total {time.time() - t0:.1f}s")
