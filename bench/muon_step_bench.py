"""The optimizer step alone, on a model's flat buffers: AdamW (`adam_step`) against Muon (`mint.muon.muon_step`) launched
kernel by kernel (`MuonPlan(graphs=False)`) and with its matrices' update replayed as one CUDA graph (the default),
same weights and gradients; and whether they agree.

    python bench/muon_step_bench.py --device cuda --preset medium      # GPU (the training step's buffers at medium)
    python bench/muon_step_bench.py --preset tiny                      # CPU (NumPy; no graphs there)

Timed: `--reps` steps after 3 untimed ones (the first compiles and allocates, the second records the graph), each
step = grad_sumsq + the optimizer step, as `GpuEngine.update` calls them; ms per step is the median (GPU: synchronized
after each step). Checked: after 3 steps with 3 learning rates from the same start, the graph replay against kernel
by kernel, and the device against NumPy (relative error of the weights and the momentum/Adam buffers). Appends a
record to bench/results/muon_step.jsonl and prints a table.
"""
from __future__ import annotations
import argparse, statistics, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from mint.core import preset, rel_error  # noqa: E402
from mint.model import init_params, n_params  # noqa: E402
from mint.muon import MuonPlan, muon_step  # noqa: E402
from mint.optim import AdamConfig, adam_step, grad_sumsq  # noqa: E402


def make(kind: str, cfg, dev: bool):
    "A step function f(bufs, lr, step) for 'adam', 'muon-eager' or 'muon-graph', and its buffers (params, grads, m, v)."
    n = n_params(cfg)
    p, g = init_params(cfg, seed=0), np.random.default_rng(1).standard_normal(n).astype(np.float32)
    host = [p, g, np.zeros(n, np.float32), np.zeros(n, np.float32)]
    acfg = AdamConfig(max_grad_norm=1.0, weight_decay=0.01)
    plan = None if kind == "adam" else MuonPlan(cfg, graphs=kind == "muon-graph")
    if dev:
        from numba import cuda
        bufs, s, rej = [cuda.to_device(a) for a in host], cuda.device_array(1, np.float64), cuda.to_device(np.zeros(1, np.int64))
        def f(lr, step):
            grad_sumsq(bufs[1], out=s)
            if plan is None: adam_step(*bufs, lr, step, acfg, sumsq=s, rejected=rej)
            else: muon_step(*bufs, lr, step, acfg, sumsq=s, rejected=rej, plan=plan)
        return f, bufs, cuda.synchronize, lambda: [b.copy_to_host() for b in bufs]
    bufs = host
    def f(lr, step):
        s = grad_sumsq(bufs[1])
        if plan is None: adam_step(*bufs, lr, step, acfg, sumsq=s)
        else: muon_step(*bufs, lr, step, acfg, sumsq=s, plan=plan)
    return f, bufs, lambda: None, lambda: [b.copy() for b in bufs]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--preset", default="medium")
    ap.add_argument("--vocab-size", type=int, default=4130)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args(argv)
    dev = a.device == "cuda"
    cfg = preset(a.preset, vocab_size=a.vocab_size)
    kinds = ["adam", "muon-eager", "muon-graph"] if dev else ["adam", "muon-eager"]
    rows, after = [], {}
    for kind in kinds:
        f, bufs, sync, read = make(kind, cfg, dev)
        for k in range(3): f(1e-3 / (k + 1), k + 1)              # compile and allocate; record the graph; replay once
        sync(); after[kind] = read()
        ts = []
        for k in range(a.reps):
            t = time.perf_counter(); f(1e-4, 4 + k); sync(); ts.append(time.perf_counter() - t)
        rows.append(dict(step=kind, ms=statistics.median(ts) * 1e3, best_ms=min(ts) * 1e3))
    ref = make("muon-eager", cfg, False)                          # NumPy, the same three steps
    for k in range(3): ref[0](1e-3 / (k + 1), k + 1)
    ref_bufs = ref[3]()
    for r in rows:
        r["ratio"] = r["ms"] / rows[0]["ms"]
        if r["step"] != "adam":
            x = after[r["step"]]
            r["vs_numpy"] = max(rel_error(x[i], ref_bufs[i]) for i in (0, 2))
            if dev and r["step"] == "muon-graph": r["vs_eager"] = max(rel_error(x[i], after["muon-eager"][i]) for i in (0, 2))
    path = benchlib.record("muon_step", dict(bench="muon_step", args=vars(a), n_params=n_params(cfg),
                                             matrices=len(MuonPlan(cfg).matrices), host=benchlib.host_info(a.device), rows=rows))
    print(benchlib.table(rows, [("step", "optimizer step", ""), ("ms", "ms/step (median)", ".3f"), ("best_ms", "best", ".3f"),
                                ("ratio", "÷ AdamW", ".1f"), ("vs_numpy", "rel. err vs NumPy", ".1e"), ("vs_eager", "graph vs eager", ".1e")]))
    print(f"{a.preset}: {n_params(cfg):,} parameters, {len(MuonPlan(cfg).matrices)} Muon matrices; recorded in {path.relative_to(benchlib.ROOT)}")
    bad = [r["step"] for r in rows if r.get("vs_numpy", 0) > 1e-4 or r.get("vs_eager", 0) > 1e-5]
    if bad: raise SystemExit(f"Muon steps disagree: {bad}")


if __name__ == "__main__":
    main()
