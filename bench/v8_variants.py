"""Variants of GEMM rung v8 (chapter 24's wgmma kernel, `mint.tensor_cores`) in one process on a Hopper GPU: each variant
is v8's device code (TC_V8_LOAD + TC_V8_MAIN + TC_V8_ENTRY) read from a file, launched with its own thread count; each is checked
against float64 (all four operand layouts, ragged edges, split-K; output poisoned with NaN first), then timed against
cuBLAS bf16 (Mint's ctypes provider, fp32 out) at 4096³, 8192³ and the d768 model's products.

    python -c 'import mint.tensor_cores as T; print(T.TC_V8_LOAD + T.TC_V8_MAIN + T.TC_V8_ENTRY, end="")' > /tmp/mine.cu   # then edit
    python bench/v8_variants.py chapter mine=/tmp/mine.cu:384+WS_PREG=40,WS_CREG=232 --out v8.json

A variant is NAME[=FILE][:THREADS][+DEFINES]: the chapter's code without FILE; THREADS per block (256 by default);
DEFINES are C macros put before the source, as NAME=VALUE joined by commas.
"""
from __future__ import annotations
import argparse, datetime, json, os, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np                                                      # noqa: E402
if not hasattr(np, "row_stack"): np.row_stack = np.vstack              # numba-cuda 0.30.4 calls it; numpy >= 2.5 dropped it
from numba import cuda                                                  # noqa: E402
from mint import tensor_cores as TC                                     # noqa: E402
from mint.core import cdiv                                              # noqa: E402
from mint.cublas import cublas_gemm                                     # noqa: E402
from mint.kernels import time_device                                    # noqa: E402

SHAPES = [("4096³ NT", 4096, 4096, 4096, False, True), ("4096³ NN", 4096, 4096, 4096, False, False),
          ("4096³ TN", 4096, 4096, 4096, True, False), ("8192³ NT", 8192, 8192, 8192, False, True),
          ("d768 qkv fwd x.Wt", 16384, 2304, 768, False, True), ("d768 qkv dX dY.W", 16384, 768, 2304, False, False),
          ("d768 qkv dW dYt.X", 2304, 768, 16384, True, False), ("d768 up fwd", 16384, 3072, 768, False, True),
          ("d768 down fwd", 16384, 768, 3072, False, True)]
CHECKS = [(200, 296, 136), (1024, 1024, 1024), (384, 768, 4096), (520, 392, 2056)]     # ragged edges, full tiles, split-K


def build(text: str, threads: int, defines: str):
    "A launcher f(a, b, out, ta, tb) of the variant: v8's plan (block width, k-splits) and its launch, as tc_gemm does (a variant's file keeps v8's entry point: 13 int64 arguments, the per-tile flags of the in-order split sum last)."
    head = "".join(f"#define {d.replace('=', ' ')}\n" for d in defines.split(",") if d)
    kernels = {}
    def kernel(bn, ta, tb):
        key = (bn, ta, tb)
        if key not in kernels:
            name = f"v8x_{abs(hash((text, threads, defines))) % 10**8}_{bn}_{int(ta)}{int(tb)}"
            src = (f"#define MINT_NAME {name}\n" + head + "".join(f"#define MINT_{k} {v}\n" for k, v in
                   dict(V8=1, BN=bn, STAGES=TC.V8_STAGES[bn], TA=int(ta), TB=int(tb)).items())
                   + TC.TC_COMMON + TC.wgmma_asm(bn) + text)
            kernels[key] = TC.v8_kernel(name, src, bn, threads)
        return kernels[key]
    ptr = lambda x: 0 if x is None else x.device_ctypes_pointer.value
    def gemm(a, b, out, bias, ta, tb):
        M, N = out.shape
        K = a.shape[0] if ta else a.shape[1]
        bn, splits = TC.v8_plan(M, N, K)
        k = kernel(bn, ta, tb)
        k_split, splits = TC.v8_k_split(K, splits)      # as tc_gemm: whole slabs a split, none without work
        grid = (cdiv(N, bn), cdiv(M, 128), splits)
        lda, ldb, ldc = a.shape[1], b.shape[1], out.shape[1]
        flags = TC.v8_workspace() if splits > 1 else None     # as tc_gemm (its chain: the splits of a tile sum in order through C)
        k[grid, threads, 0, TC.v8_shared_bytes(bn)](ptr(a), ptr(b), ptr(out), ptr(bias), M, N, K, lda, ldb, ldc, int(bias is not None), k_split, ptr(flags))
        return out
    return gemm


def check(gemm, M, N, K, ta, tb, seed):
    a, b, a16, b16, bias = TC.tc_problem(M, N, K, ta, tb, seed)
    out = cuda.to_device(np.full((M, N), np.nan, np.float32))
    gemm(cuda.to_device(a16), cuda.to_device(b16), out, cuda.to_device(bias), ta, tb)
    got = out.copy_to_host()
    exact = TC.tc_reference(a16, b16, ta, tb) + bias
    gemm(cuda.to_device(a16), cuda.to_device(b16), out, cuda.to_device(bias), ta, tb)     # again: the same bits
    return dict(err=float(np.linalg.norm(np.nan_to_num(got, nan=1e30) - exact) / np.linalg.norm(exact)), nan=int(np.isnan(got).sum()),
                repeat_same=bool(np.array_equal(got, out.copy_to_host())))


def run(spec, cublas_tflops):
    name, threads, defines = spec, 256, ""
    if "+" in name: name, defines = name.split("+", 1)
    if ":" in name: name, t = name.rsplit(":", 1); threads = int(t)
    if "=" in name: label, path = name.split("=", 1); text = open(path).read()
    else: label, text = name, TC.TC_V8_LOAD + TC.TC_V8_MAIN + TC.TC_V8_ENTRY
    row = dict(variant=spec, label=label, threads=threads, defines=defines)
    t0 = time.time()
    try:
        gemm = build(text, threads, defines)
        checks = [dict(M=M, N=N, K=K, ta=ta, tb=tb, **check(gemm, M, N, K, ta, tb, seed=n))
                  for n, (ta, tb) in enumerate(((False, True), (False, False), (True, False), (True, True))) for M, N, K in CHECKS]
        worst = max(c["err"] for c in checks)
        row.update(ok=bool(worst < 1e-4 and all(c["nan"] == 0 and c["repeat_same"] for c in checks)), worst_err=worst,
                   compile_check_s=round(time.time() - t0, 1))
        if not row["ok"]: row["bad"] = [c for c in checks if not (c["err"] < 1e-4 and c["nan"] == 0 and c["repeat_same"])][:4]
    except Exception as e:
        row.update(ok=False, error=repr(e)[:600]); return row
    if not row["ok"]: return row
    row["timings"] = []
    for label_, M, N, K, ta, tb in SHAPES:
        a, b, a16, b16, _ = TC.tc_problem(M, N, K, ta, tb, seed=1)
        da, db, dc = cuda.to_device(a16), cuda.to_device(b16), cuda.device_array((M, N), np.float32)
        flop = 2.0 * M * N * K
        if label_ not in cublas_tflops:
            cublas_tflops[label_] = flop / time_device(lambda: cublas_gemm(da, db, dc, None, ta, tb, mode="bf16"), rounds=5) / 1e12
        t = flop / time_device(lambda: gemm(da, db, dc, None, ta, tb), rounds=5) / 1e12
        row["timings"].append(dict(shape=label_, tflops=t, cublas_bf16=cublas_tflops[label_], ratio=t / cublas_tflops[label_]))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="+"); ap.add_argument("--out", default=None)
    a = ap.parse_args()
    dev = cuda.get_current_device()
    rows, cub = [], {}
    for v in a.variants:
        rows.append(run(v, cub)); print(json.dumps(rows[-1]), flush=True)
        if a.out:                                        # after each variant: a run cut short keeps what it measured
            Path(a.out).write_text(json.dumps(dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                                                   device=str(dev.name), cublas_bf16_tflops=cub, rows=rows), indent=1) + "\n")
    print(f"{'variant':44s} " + " ".join(f"{s[0][:10]:>10s}" for s in SHAPES))
    for r in rows:
        if not r.get("ok"): print(f"{r['variant'][:44]:44s} FAILED {r.get('error', '')[:100]} {r.get('bad', '')}"[:400]); continue
        print(f"{r['variant'][:44]:44s} " + " ".join(f"{t['tflops']:5.0f} {t['ratio']:.2f}" for t in r["timings"]))
    print(f"{'cuBLAS bf16':44s} " + " ".join(f"{cub.get(s[0], 0):5.0f}     " for s in SHAPES))


if __name__ == "__main__":
    main()
