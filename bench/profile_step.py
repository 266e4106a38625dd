"""Where a Mint GPU training step spends its time, kernel by kernel: the step launched without a CUDA graph under
`torch.profiler` (CUPTI sees every kernel in the process, numba's and cuBLAS's alike); prints the kernels by total
GPU time and writes the table to OUT/profile_<config>_<gemm>.txt.

    python bench/profile_step.py --preset d512 --gemm cublas-tf32 --out results/    # needs a CUDA GPU and torch
"""
import argparse, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402,F401  (puts the repo root on sys.path)
import torch  # noqa: E402
from numba import cuda  # noqa: E402
from bench_train_step import CONFIGS, PD_VOCAB, config, make_batches, MintGPU  # noqa: E402
from mint.model import init_params  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--preset", default="d512", choices=CONFIGS)
ap.add_argument("--gemm", default="cublas-tf32", choices=["mint", "cublas", "cublas-tf32"])
ap.add_argument("--attention", default="flash", choices=["flash", "flash-tc"])   # flash-tc: mint.flash_tc (bf16 tensor cores)
ap.add_argument("--batch-size", type=int, default=32)
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--out", default=".")
args = ap.parse_args()
cfg = config(args.preset, PD_VOCAB)
T = cfg.max_seq_len
side = MintGPU(cfg, init_params(cfg, seed=0), args.batch_size, T, attention=args.attention, gemm=args.gemm, graphs=False)
batches = make_batches(cfg, args.batch_size, T, 2 + args.steps, seed=1)
for b in batches[:2]: side.step(b)                     # compiles, one-time constants
cuda.synchronize()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for b in batches[2:]: side.step(b)
    cuda.synchronize()
rows = [e for e in prof.key_averages() if e.device_time_total > 0]
rows.sort(key=lambda e: -e.device_time_total)
total = sum(e.device_time_total for e in rows)
lines = [f"{args.preset}, GEMM {args.gemm}, attention {args.attention}, batch {args.batch_size}x{T}: {total / args.steps / 1e3:.1f} ms of "
         f"kernels per step, {sum(e.count for e in rows) / args.steps:.0f} launches per step ({args.steps} steps)", f"{'ms/step':>8} {'share':>6} {'calls/step':>10}  kernel"]
for e in rows[:40]:
    lines.append(f"{e.device_time_total / args.steps / 1e3:8.2f} {e.device_time_total / total:6.1%} "
                 f"{e.count / args.steps:10.1f}  {e.key[:110]}")
text = "\n".join(lines)
print(text)
out = Path(args.out) / (f"profile_{args.preset}_{args.gemm}" + ("" if args.attention == "flash" else f"_{args.attention}") + ".txt")
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(text + "\n")
