"""Why GEMM v8's split-K products time slowly (chapter 24): each product timed launch by launch (as the probe and the
chapter time it, from Python) and replayed as one CUDA graph (as training runs it), with cuBLAS bf16 the same two ways, and v8 forced to every (block width, splits) plan (graphs). Prints TFLOP/s and ratios;
JSON to $OUT/v8_splitk.json (else bench/results/).

    python bench/v8_splitk.py
    python bench/v8_splitk.py --only "d512 qkv dW" --splits 1 2 3 4 5 6 8     # plans beyond those v8_plan may pick
"""
from __future__ import annotations
import argparse, datetime, json, os, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np                                                      # noqa: E402
if not hasattr(np, "row_stack"): np.row_stack = np.vstack              # numba-cuda 0.30.4 calls it; numpy >= 2.5 dropped it
from numba import cuda                                                  # noqa: E402
from mint import tensor_cores as TC                                     # noqa: E402
from mint.cublas import cublas_gemm                                     # noqa: E402
from mint.kernels import time_device, capture                           # noqa: E402

SHAPES = [("d768 qkv dW dYt.X", 2304, 768, 16384, True, False), ("d512 gate-up dW", 3072, 512, 8192, True, False),
          ("d768 gate-up dW", 4608, 768, 16384, True, False), ("d768 out dW", 768, 768, 16384, True, False),
          ("d512 qkv dW", 1536, 512, 8192, True, False), ("d768 down dW", 768, 3072, 16384, True, False),
          ("4096³ NT", 4096, 4096, 4096, False, True)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", type=int, nargs="+", default=[1, 2, 3, 4], help="k-splits swept per block width (default 1 2 3 4: v8_plan's range)")
    ap.add_argument("--only", nargs="+", default=None, help="the products to time, by label (default all seven)")
    ap.add_argument("--per-graph", type=int, default=1, help="copies of the product recorded back to back in each graph, the time divided by them "
                    "(default 1; training's step is one graph, so the gaps between graph launches are not its)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per number (the median; default 3)")
    a = ap.parse_args()
    unknown = set(a.only or ()) - {s[0] for s in SHAPES}
    if unknown: ap.error(f"--only: no product {sorted(unknown)}; the products are {[s[0] for s in SHAPES]}")
    dev = cuda.get_current_device()
    out = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), device=str(dev.name), rows=[])
    for label, M, N, K, ta, tb in SHAPES:
        if a.only and label not in a.only: continue
        _, _, a16, b16, _ = TC.tc_problem(M, N, K, ta, tb, seed=1)
        da, db, dc = cuda.to_device(a16), cuda.to_device(b16), cuda.device_array((M, N), np.float32)
        flop = 2.0 * M * N * K
        v8 = lambda: TC.tc_gemm(da, db, dc, None, ta, tb, 8)
        cub = lambda: cublas_gemm(da, db, dc, None, ta, tb, mode="bf16")
        v8(); cub(); cuda.synchronize()
        rep = lambda f: (lambda: [f() for _ in range(a.per_graph)])          # a graph of per_graph copies
        g8, gc = capture(rep(v8)), capture(rep(cub))
        tg = lambda g: time_device(g.launch, rounds=a.rounds) / a.per_graph
        plan = TC.v8_plan(M, N, K)
        row = dict(shape=label, M=M, N=N, K=K, plan=plan,
                   v8_launches=flop / time_device(v8) / 1e12, v8_graph=flop / tg(g8) / 1e12,
                   cublas_launches=flop / time_device(cub) / 1e12, cublas_graph=flop / tg(gc) / 1e12)
        keep = TC.v8_plan                                # every (block width, splits) the plan could pick, as graphs
        try:
            for bn in TC.V8_STAGES:
                for sp in a.splits:
                    if sp > 1 and K // sp < 256: continue
                    TC.v8_plan = lambda M, N, K, sms=None, p=(bn, sp): p
                    v8(); cuda.synchronize()             # its workspace allocated outside the capture
                    row[f"graph_bn{bn}_s{sp}"] = flop / tg(capture(rep(v8))) / 1e12
        finally: TC.v8_plan = keep
        row["v8_one_split_graph"] = row.get(f"graph_bn{plan[0]}_s1")
        out["rows"].append(row)
        print(f"{label:20s} plan {plan}: v8 {row['v8_launches']:6.1f} launched, {row['v8_graph']:6.1f} graph"
              + (f", one split {row['v8_one_split_graph']:6.1f} graph" if row["v8_one_split_graph"] else "")
              + f" | cuBLAS {row['cublas_launches']:6.1f} / {row['cublas_graph']:6.1f} | graph ratio {row['v8_graph'] / row['cublas_graph']:.2f}",
              flush=True)
        print("    graphs by (block width, splits): " + ", ".join(f"{k[8:]} {v:.0f}" for k, v in row.items() if k.startswith("graph_bn")), flush=True)
    out["splits"], out["per_graph"], out["rounds"] = a.splits, a.per_graph, a.rounds
    dest = Path(os.environ.get("OUT", "bench/results")) / "v8_splitk.json"
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", dest)


if __name__ == "__main__":
    main()
