"""The probe that found GEMM rung v8 (Hopper's warpgroup MMA, `wgmma.mma_async`, sm_90a) reached from numba.

Its first two H200 runs (2026-12-03, `bench/results/h200_2026-12-03_wgmma/probe1.*`, `probe2.*`) timed the kernel while
it was being written; its source now lives in chapter 24 (`mint.tensor_cores.TC_V8`, `tc_source(8, ...)`), so this
script checks and times that one source: both block widths (128x256 and 128x128) in all four operand layouts against
float64 (output poisoned with NaN first), then TFLOP/s against cuBLAS bf16 (Mint's ctypes provider, fp32 out) in the
same process, at 4096^3, 8192^3 and the d768 model's products. JSON to $OUT/wgmma_probe.json (else bench/results/).

    python bench/wgmma_probe.py
"""
from __future__ import annotations
import datetime, json, os, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np                                                      # noqa: E402
if not hasattr(np, "row_stack"): np.row_stack = np.vstack              # numba-cuda 0.30.4 calls it; numpy >= 2.5 dropped it
from numba import cuda                                                  # noqa: E402
from mint import tensor_cores as TC                                     # noqa: E402
from mint.cublas import cublas_gemm                                     # noqa: E402
from mint.kernels import time_device                                       # noqa: E402

LAYOUTS = ((False, True), (False, False), (True, False), (True, True))
SHAPES = [("4096³ NT", 4096, 4096, 4096, False, True), ("8192³ NT", 8192, 8192, 8192, False, True),
          ("4096³ NN", 4096, 4096, 4096, False, False), ("4096³ TN", 4096, 4096, 4096, True, False),
          ("d768 qkv fwd x.Wt", 16384, 2304, 768, False, True), ("d768 qkv dX dY.W", 16384, 768, 2304, False, False),
          ("d768 qkv dW dYt.X", 2304, 768, 16384, True, False), ("d768 up fwd", 16384, 3072, 768, False, True),
          ("d768 down fwd", 16384, 768, 3072, False, True)]


def main():
    dev = cuda.get_current_device()
    out = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), device=str(dev.name), checks=[], timings=[])
    for n, (ta, tb) in enumerate(LAYOUTS):
        for s in ((200, 296, 136), (1024, 1024, 1024), (384, 768, 4096)):
            r = TC.tc_check(8, *s, ta, tb, seed=n)
            out["checks"].append(dict(M=s[0], N=s[1], K=s[2], ta=ta, tb=tb, **r))
            assert r["nan"] == 0 and r["err"] < 1e-4, (s, ta, tb, r)
    print(f"v8: {len(out['checks'])} products checked, worst error {max(c['err'] for c in out['checks']):.1e}", flush=True)
    for label, M, N, K, ta, tb in SHAPES:
        a, b, a16, b16, _ = TC.tc_problem(M, N, K, ta, tb, seed=1)
        da, db, dc = cuda.to_device(a16), cuda.to_device(b16), cuda.device_array((M, N), np.float32)
        flop = 2.0 * M * N * K
        row = dict(shape=label, M=M, N=N, K=K, ta=ta, tb=tb, v8_plan=TC.v8_plan(M, N, K),
                   cublas_bf16=flop / time_device(lambda: cublas_gemm(da, db, dc, None, ta, tb, mode="bf16")) / 1e12,
                   v8=flop / time_device(lambda: TC.tc_gemm(da, db, dc, None, ta, tb, 8)) / 1e12,
                   v7=flop / time_device(lambda: TC.tc_gemm(da, db, dc, None, ta, tb, 7)) / 1e12)
        out["timings"].append(row)
        print(f"| {label:20s} | cuBLAS bf16 {row['cublas_bf16']:6.1f} | v8 {row['v8']:6.1f} ({row['v8'] / row['cublas_bf16']:.2f}x) | v7 {row['v7']:6.1f} |", flush=True)
    # the two block widths on their own at 4096³ (NT, one split): V8_SPEED, the relative speed v8_plan weighs them by
    a, b, a16, b16, _ = TC.tc_problem(4096, 4096, 4096, False, True, seed=1)
    da, db, dc = cuda.to_device(a16), cuda.to_device(b16), cuda.device_array((4096, 4096), np.float32)
    ptr = lambda x: x.device_ctypes_pointer.value
    widths = {}
    for bn in TC.V8_STAGES:
        k = TC.make_tc_kernel(8, False, None, False, True, bn)
        run = lambda: k[(4096 // bn, 32, 1), 256, 0, TC.v8_shared_bytes(bn)](ptr(da), ptr(db), ptr(dc), 0, 4096, 4096, 4096,
                                                                            4096, 4096, 4096, 0, 4096, 0)
        widths[bn] = 2.0 * 4096 ** 3 / time_device(run) / 1e12
    out["block_widths_4096"] = {str(bn): dict(tflops=t, relative=t / widths[256]) for bn, t in widths.items()}
    print("v8 block widths at 4096³ NT:", ", ".join(f"128x{bn} {t:.1f} TFLOP/s ({t / widths[256]:.2f})" for bn, t in widths.items()),
          f"(V8_SPEED now {TC.V8_SPEED})", flush=True)
    dest = Path(os.environ.get("OUT", "bench/results")) / "wgmma_probe.json"
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", dest)


if __name__ == "__main__":
    main()
