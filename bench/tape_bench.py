"""What the tape (chapter 43, `mint.autograd`) costs against the one wiring (`mint.model`): the same model, weights and
batch, forward + loss + backward (no optimizer step), in one process; time per step, launches, memory.

    python bench/tape_bench.py                                   # CPU: tiny, batch 8 x 64, float32 NumPy
    python bench/tape_bench.py --device cuda --preset tiny medium --batch-size 8 32

What is compared, per step (both read the loss back, both fill the flat gradient buffer):
- the wiring: `mint.model.loss_and_grads` on a `Workspace` (CPU), or `loss_forward` + `backward` on a
  `mint.gpu_train.device_workspace` with unfused attention, the tape's kind (GPU);
- the tape: `mint.autograd.tape_grads` (records every op, allocates each output and gradient, reverse pass) on the
  same side.
Reported: ms per step (the best and the median of `--reps` after a warm-up that compiles the kernels), the gradients' relative error
between the two (a check that they compute the same thing), calls of the op launchers (CPU: the functions each path
calls, counted by wrapping them; GPU: kernel launches, counted by `mint.counters.TransferCounter`), device
allocations per step (GPU), the bytes kept for the backward (the wiring: its workspace, allocated once; the tape: the
outputs and saved arrays it holds until the reverse pass, plus the gradients it allocates), and peak bytes NumPy
allocated in a step (CPU, tracemalloc). Appends a record to bench/results/tape_cost.jsonl and prints a table.
"""
from __future__ import annotations
import argparse, statistics, sys, time, tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
import mint.autograd as tape_mod  # noqa: E402
import mint.model as wiring  # noqa: E402
from mint.core import preset, rel_error, on_device  # noqa: E402
from mint.data import Batch  # noqa: E402
from mint.model import init_params, loss_and_grads, loss_forward, backward, views, Workspace, workspace_bytes  # noqa: E402


def batch(cfg, B: int, T: int, seed: int = 1) -> Batch:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, cfg.vocab_size, (B, T), dtype=np.int32)
    return Batch(ids, np.roll(ids, -1, 1), np.ones((B, T), np.float32), np.broadcast_to(np.arange(T, dtype=np.int32), (B, T)).copy(), None)


def timed(f, reps: int, sync=lambda: None) -> tuple[float, float]:
    "(best, median) seconds of `f()` over `reps` calls, after one untimed call (compiling, caches); other work on the machine only slows a call, so the best is the figure, as in bench_train_step.py."
    f(); sync()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); sync(); ts.append(time.perf_counter() - t)
    return min(ts), statistics.median(ts)


def run_cpu(cfg, B, T, reps) -> list[dict]:
    params, b = init_params(cfg), batch(cfg, B, T)
    grads, ws = np.zeros_like(params), Workspace(cfg, B, T)
    wire = lambda: loss_and_grads(params, grads, cfg, b, ws)
    tape = lambda: tape_mod.tape_grads(params, cfg, b)
    rows = []
    for side, f in (("wiring", wire), ("tape", tape)):
        ms, med = (x * 1e3 for x in timed(f, reps))
        names, mod = (tape_mod.TAPE_LAUNCHERS, tape_mod) if side == "tape" else (tape_mod.WIRING_LAUNCHERS, wiring)
        with tape_mod.count_launches(mod, names) as n: f()
        tracemalloc.start(); f(); peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
        rows.append(dict(side=side, ms=ms, med_ms=med, launches=sum(n.values()), peak_alloc=peak))
    _, g_tape = tape(); wire()
    loss, tp, _ = tape_mod.tape_loss(params, cfg, b); tp.backward(loss)
    rows[0].update(kept=workspace_bytes(cfg, B, T), grad_err=0.0)
    rows[1].update(kept=tp.nbytes(exclude=[params]) + tp.grad_nbytes(), grad_err=rel_error(g_tape, grads))
    return rows


def run_cuda(cfg, B, T, reps) -> list[dict]:
    from numba import cuda
    from mint.counters import TransferCounter
    from mint.gpu_train import device_workspace
    params, b = init_params(cfg), batch(cfg, B, T)
    dP, dG = cuda.to_device(params), cuda.to_device(np.zeros_like(params))
    vb = device_workspace(cfg, B, T, attention="unfused").load_batch(b)
    W, G = views(dP, cfg), views(dG, cfg)
    def wire():
        loss = loss_forward(W, cfg, vb); backward(W, G, cfg, vb)
        return float(loss.copy_to_host()[0])
    tape = lambda: tape_mod.tape_grads(dP, cfg, b)
    rows = []
    for side, f in (("wiring", wire), ("tape", tape)):
        ms, med = (x * 1e3 for x in timed(f, reps, cuda.synchronize))
        with TransferCounter() as c: f(); cuda.synchronize()
        rows.append(dict(side=side, ms=ms, med_ms=med, launches=c.counts["launches"], allocs=c.counts["alloc"], alloc_bytes=c.counts["alloc_bytes"]))
    wire(); _, g_tape = tape()
    loss, tp, _ = tape_mod.tape_loss(dP, cfg, b); tp.backward(loss)
    rows[0].update(kept=workspace_bytes(cfg, B, T, attention="unfused"), grad_err=0.0)
    rows[1].update(kept=tp.nbytes(exclude=[dP]) + tp.grad_nbytes(), grad_err=rel_error(g_tape.copy_to_host(), dG.copy_to_host()))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--preset", nargs="+", default=["tiny"])
    ap.add_argument("--batch-size", nargs="+", type=int, default=[8], help="one per preset (or one for all)")
    ap.add_argument("--seq-len", type=int, default=None, help="default: the preset's max_seq_len")
    ap.add_argument("--vocab-size", type=int, default=512)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args(argv)
    sizes = a.batch_size * len(a.preset) if len(a.batch_size) == 1 else a.batch_size
    if len(sizes) != len(a.preset): raise SystemExit(f"--batch-size: give one, or one per preset ({len(a.preset)}), got {len(sizes)}")
    rows = []
    for name, B in zip(a.preset, sizes):
        cfg = preset(name, vocab_size=a.vocab_size)
        T = a.seq_len or cfg.max_seq_len
        got = (run_cuda if a.device == "cuda" else run_cpu)(cfg, B, T, a.reps)
        for r in got: r.update(preset=name, shape=f"{B}x{T}", ratio=r["ms"] / got[0]["ms"], kept_mib=r["kept"] / 2**20)
        rows += got
    path = benchlib.record("tape_cost", dict(bench="tape_cost", args=vars(a), host=benchlib.host_info(a.device), rows=rows))
    cols = [("preset", "config", ""), ("shape", "B×T", ""), ("side", "path", ""), ("ms", "ms/step (best)", ".1f"), ("med_ms", "median", ".1f"), ("ratio", "÷ wiring", ".1f"),
            ("launches", "launches/step" if a.device == "cuda" else "launcher calls/step", ",.0f"), ("kept_mib", "MiB kept for backward", ".2f"),
            ("grad_err", "grad rel. err", ".1e")]
    if a.device == "cuda": cols.insert(7, ("allocs", "allocations/step", ",.0f"))
    else:
        for r in rows: r["peak_mib"] = r["peak_alloc"] / 2**20
        cols.insert(7, ("peak_mib", "peak MiB allocated", ".2f"))
    print(benchlib.table(rows, cols))
    print(f"recorded in {path.relative_to(benchlib.ROOT)}")
    bad = [r for r in rows if not r["grad_err"] < 1e-4]
    if bad: raise SystemExit(f"the tape's gradients differ from the wiring's: {[(r['preset'], r['grad_err']) for r in bad]}")


if __name__ == "__main__":
    main()
