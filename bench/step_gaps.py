"""Where a CUDA-graph training step's wall time goes besides its kernels (issue 17): for the d768 bf16 step, each step's
wall time split into the host's time before the graph is launched (batch checks and uploads), the host's time to queue
the rest (the optimizer's launches), and the wait for the loss; and the GPU time of the graph alone (CUDA events).

  python bench/step_gaps.py [--config d768] [--gemm cublas-bf16] [--steps 8]
"""
import argparse, time
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
        rows = []
        with eng:
            for s in range(1, a.steps + 1):
                t0 = time.perf_counter()
                loss = eng.step(batches[s % 2], 1e-4, s)
                t1 = time.perf_counter()
                rows.append((1e3 * (t1 - t0), 1e3 * (marks["launch"] - t0), 1e3 * (eng.t_issued - marks["launch"]),
                             1e3 * (t1 - eng.t_issued), ev0.elapsed_time(ev1), loss))
    print(f"{a.config} {a.precision} {a.gemm}, batch {B}x{T}: ms per step (steps 3..{a.steps}, medians)")
    med = np.median(np.array([r[:5] for r in rows[2:]]), axis=0)
    print(f"  wall {med[0]:.2f} = host before the graph {med[1]:.2f} + host queueing the rest {med[2]:.2f} + waiting {med[3]:.2f}; "
          f"the graph on the GPU {med[4]:.2f} (events)")
    for i, r in enumerate(rows, 1):
        print(f"  step {i}: wall {r[0]:.2f}, before graph {r[1]:.2f}, queue {r[2]:.2f}, wait {r[3]:.2f}, graph {r[4]:.2f}, loss {r[5]:.4f}")


if __name__ == "__main__":
    main()
