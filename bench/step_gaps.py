"""Where a CUDA-graph training step's wall time goes besides its kernels (issue 17): for the d768 bf16 step, each step's
wall time split into the host's time before the graph is launched (batch checks and uploads), the host's time to queue
the rest (the optimizer's launches), and the wait for the loss; and the GPU time of the graph alone (CUDA events).

  python bench/step_gaps.py [--config d768] [--gemm cublas-bf16] [--steps 8]
  --torch-between 10: then 10 steps of PyTorch bf16 + compile (bench_scale's peer) in the same process, and the same
      measurement again: does the peer's presence slow Mint's step (bench_scale timed 45.1 ms where this script saw 42.9)?
  --lm-head: the LM head's three GEMMs (cuBLAS bf16) with the logits' rows V apart and padded to a multiple of 8
"""
import argparse, gc, sys, time
from pathlib import Path
import numpy as np
import mint  # noqa: F401  (before numba)
from numba import cuda
from mint.core import ModelConfig
from mint.data import Batch
from mint.gemm import gemm_provider
from mint.gpu_train import GpuEngine
from mint.loop import TrainConfig
from mint.model import init_params

CONFIGS = {"d768": dict(d_model=768, n_heads=12, n_layers=12, max_seq_len=512),
           "medium": dict(d_model=128, n_heads=4, n_layers=4, max_seq_len=128),
           "tiny": dict(d_model=32, n_heads=2, n_layers=1, max_seq_len=8)}         # the simulator's check of this script


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="d768", choices=list(CONFIGS))
    ap.add_argument("--gemm", default="cublas-bf16")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--torch-between", type=int, default=0)
    ap.add_argument("--lm-head", action="store_true")
    a = ap.parse_args()
    cfg = ModelConfig(vocab_size=4130, **CONFIGS[a.config])
    B, T = a.batch_size, cfg.max_seq_len
    tcfg = TrainConfig(batch_size=B, seq_len=T, lr=1e-4, precision=a.precision, attention="flash")
    rng = np.random.default_rng(0)
    batches = [Batch(ids, np.roll(ids, -1, 1), np.ones((B, T), np.float32), np.broadcast_to(np.arange(T, dtype=np.int32), (B, T)), None)
               for ids in (rng.integers(0, 4130, (B, T)).astype(np.int32) for _ in range(2))]
    with gemm_provider(a.gemm):
        eng = GpuEngine(init_params(cfg, 0), cfg, tcfg)
        marks = {}
        compute = eng.compute
        ev0, ev1 = cuda.event(), cuda.event()
        def timed_compute(v):
            marks["launch"] = time.perf_counter()
            ev0.record(); out = compute(v); ev1.record()
            return out
        eng.compute = timed_compute
        gc_ms = []
        def on_gc(phase, info, t=[0.0]):
            if phase == "start": t[0] = time.perf_counter()
            else: gc_ms.append(1e3 * (time.perf_counter() - t[0]))
        gc.callbacks.append(on_gc)
        measure(eng, batches, a, marks, ev0, ev1, gc_ms, "alone", ahead=False)
        measure(eng, batches, a, marks, ev0, ev1, gc_ms, "alone")
        if a.torch_between:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from bench_scale import TorchSide
            peer = TorchSide(cfg, init_params(cfg, 0), "cuda", "bf16")
            peer.run(batches * 2)
            t, _ = peer.run(batches * (a.torch_between // 2))
            print(f"PyTorch bf16 + compile: {1e3 * t / (2 * (a.torch_between // 2)):.2f} ms a step", flush=True)
            measure(eng, batches, a, marks, ev0, ev1, gc_ms, "after PyTorch ran (its model still held)")
            peer.close(); del peer
            measure(eng, batches, a, marks, ev0, ev1, gc_ms, "after PyTorch closed")
        if a.lm_head: lm_head_probe(cfg, B, T)


def measure(eng, batches, a, marks, ev0, ev1, gc_ms, what, ahead=True):
    "`a.steps` steps, each lent the next batch (`upcoming`, as mint.train.run_training does) when `ahead`."
    rows, n_gc = [], len(gc_ms)
    what += ", the next batch staged during each step" if ahead else ", each batch loaded by its own step"
    with eng:
        for s in range(1, a.steps + 1):
            t0 = time.perf_counter()
            loss = eng.step(batches[s % 2], 1e-4, s, (lambda s=s: batches[(s + 1) % 2]) if ahead else None)
            t1 = time.perf_counter()
            rows.append((1e3 * (t1 - t0), 1e3 * (marks["launch"] - t0), 1e3 * (eng.t_issued - marks["launch"]),
                         1e3 * (t1 - eng.t_issued), ev0.elapsed_time(ev1), loss))
    print(f"{a.config} {a.precision} {a.gemm}, {what}: ms per step (steps 3..{a.steps}, medians); "
          f"{len(gc_ms) - n_gc} garbage collections took {sum(gc_ms[n_gc:]):.1f} ms")
    med = np.median(np.array([r[:5] for r in rows[2:]]), axis=0)
    print(f"  wall {med[0]:.2f} = host before the graph {med[1]:.2f} + host queueing the rest {med[2]:.2f} + waiting {med[3]:.2f}; "
          f"the graph on the GPU {med[4]:.2f} (events)")
    for i, r in enumerate(rows, 1):
        print(f"  step {i}: wall {r[0]:.2f}, before graph {r[1]:.2f}, queue {r[2]:.2f}, wait {r[3]:.2f}, graph {r[4]:.2f}, loss {r[5]:.4f}")


def lm_head_probe(cfg, B, T, reps=20):
    "The three GEMMs of the LM head (logits, dx, dW) in bf16 on cuBLAS, logits' rows V and V rounded up to 8 apart."
    from mint.precision import gemm_bf16
    N, d, V = B * T, cfg.d_model, cfg.vocab_size
    rng = np.random.default_rng(0)
    x16 = cuda.to_device(rng.integers(0, 2**14, (N, d)).astype(np.uint16))
    w16 = cuda.to_device(rng.integers(0, 2**14, (V, d)).astype(np.uint16))
    dx, dw = cuda.device_array((N, d), np.float32), cuda.device_array((V, d), np.float32)
    for Vp in (V, -(-V // 8) * 8):
        logits = cuda.device_array((N, Vp), np.float32)[:, :V]
        dy16 = cuda.to_device(rng.integers(0, 2**14, (N, Vp)).astype(np.uint16))[:, :V]
        cases = {"logits = x·Wᵀ": lambda: gemm_bf16(x16, w16, logits, None, False, True),
                 "dx = dy·W": lambda: gemm_bf16(dy16, w16, dx, None, False, False),
                 "dW = dyᵀ·x": lambda: gemm_bf16(dy16, x16, dw, None, True, False)}
        out = []
        for name, f in cases.items():
            f(); cuda.synchronize()
            e0, e1 = cuda.event(), cuda.event()
            e0.record()
            for _ in range(reps): f()
            e1.record(); e1.synchronize()
            out.append(f"{name} {1e3 * cuda.event_elapsed_time(e0, e1) / reps:.1f} µs")
        print(f"LM head GEMMs, rows {Vp} apart: " + ", ".join(out), flush=True)

if __name__ == "__main__":
    main()
