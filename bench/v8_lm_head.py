"""The LM head's three products on the tensor cores, with their operands in rows padded to 16 bytes as training lays
them out (`mint.tensor_cores.padded_rows`: the vocabulary's 4,130 bf16 columns are 8,260 bytes, so three rows in
four of a contiguous [tokens, vocab] gradient start off 16 bytes, and GEMM v8 could not read it; since 2026-12-07 its
loaders zero-fill a chunk past a row's end and training pads the rows). For the d512 and d768 models: the forward
x·Wᵀ, dx = dy·W and dW = dyᵀ·x, each checked against float64 on sampled rows, then timed as CUDA graphs of
`--per-graph` copies: cuBLAS bf16, v7, and v8 at `v8_plan`'s plan and every (block width, splits ≤ 4) plan.
Prints TFLOP/s and v8 ÷ cuBLAS; JSON to $OUT/v8_lm_head.json (else bench/results/).

    python bench/v8_lm_head.py --per-graph 10
"""
from __future__ import annotations
import argparse, datetime, json, os, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np                                                      # noqa: E402
if not hasattr(np, "row_stack"): np.row_stack = np.vstack              # numba-cuda 0.30.4 calls it; numpy >= 2.5 dropped it
from mint import tensor_cores as TC                                     # noqa: E402  (before numba: it checks for a GPU)
from numba import cuda                                                  # noqa: E402
from mint.core import rel_error                                         # noqa: E402
from mint.cublas import cublas_gemm                                     # noqa: E402
from mint.gemm import model_shapes                                      # noqa: E402
from mint.kernels import time_device, capture                           # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-graph", type=int, default=10, help="copies of the product recorded back to back in each graph (default 10)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per number (the median; default 5)")
    a = ap.parse_args()
    dev = cuda.get_current_device()
    out = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               device=dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name), per_graph=a.per_graph, rows=[])
    dest = Path(os.environ.get("OUT", "bench/results")) / "v8_lm_head.json"
    rep = lambda f: (lambda: [f() for _ in range(a.per_graph)])
    for label, M, N, K, ta, tb in [s for s in model_shapes() if "lm_head" in s[0]]:
        _, _, a16, b16, _ = TC.tc_problem(M, N, K, ta, tb, seed=M + N + K)
        da, db = TC.to_device_rows(a16, True), TC.to_device_rows(b16, True)     # NaN bits in the gaps
        c = cuda.device_array((M, N), np.float32)
        assert TC.v8_fits(da, db, ta, tb), (label, "v8 should take padded rows")
        idx = np.random.default_rng(0).choice(M, 64, replace=False)
        ref = TC.tc_reference(a16, b16, ta, tb, idx)
        flop, row = 2.0 * M * N * K, dict(shape=label, M=M, N=N, K=K, trans_a=ta, trans_b=tb, plan=list(TC.v8_plan(M, N, K)))
        runs = {"cublas-bf16": lambda: cublas_gemm(da, db, c, None, ta, tb, mode="bf16"), "v7": lambda: TC.tc_gemm(da, db, c, None, ta, tb, 7),
                "v8": lambda: TC.tc_gemm(da, db, c, None, ta, tb, 8)}
        for bn in TC.V8_STAGES:
            for sp in (1, 2, 3, 4):
                if sp == 1 or (K // sp >= 256 and TC.cdiv(M, 128) * TC.cdiv(N, bn) * sp <= 2 * TC._sm_count()):
                    runs[f"v8_bn{bn}_s{sp}"] = (lambda bn=bn, sp=sp: TC.tc_gemm(da, db, c, None, ta, tb, 8, plan=(bn, sp)))
        for name, fn in runs.items():
            c.copy_to_device(np.full((M, N), np.nan, np.float32))
            fn(); cuda.synchronize()
            got = c.copy_to_host()
            assert not np.isnan(got).any() and rel_error(got[idx], ref) < 1e-4, (label, name, rel_error(got[idx], ref))
            row[name] = flop / (time_device(capture(rep(fn)).launch, rounds=a.rounds) / a.per_graph) / 1e12
        cb = row["cublas-bf16"]
        best = max((v, k) for k, v in row.items() if k.startswith("v8_bn"))
        row.update(best_v8=best[0], best_v8_plan=best[1])
        out["rows"].append(row)
        print(f"{label:24s} cuBLAS bf16 {cb:5.0f} | v7 {row['v7']:5.0f} ({row['v7'] / cb:.2f}x) | v8 plan {tuple(row['plan'])} {row['v8']:5.0f} "
              f"({row['v8'] / cb:.2f}x) | best v8 {best[1]} {best[0]:5.0f} ({best[0] / cb:.2f}x)  TFLOP/s", flush=True)
        dest.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", dest)


if __name__ == "__main__":
    main()
