"""Where a Mint GPU training step spends its time, kernel by kernel: the step launched without a CUDA graph under
`torch.profiler` (CUPTI sees every kernel in the process, numba's and cuBLAS's alike); prints the kernels by total
GPU time, grouped by kernel name, and writes the table to OUT/profile_<config>_<gemm>[_<precision>][_<attention>].txt.

    python bench/profile_step.py --preset d512 --gemm cublas-tf32 --out results/    # needs a CUDA GPU and torch
    python bench/profile_step.py --preset d768 --precision bf16 --gemm cublas-bf16   # bench_scale's configs too

Configs: bench_train_step's presets and bench_scale's (d768, d1024); --precision bf16 runs the tensor-core flash
attention (chapter 26) by itself, as `mint train --precision bf16` does."""
import argparse, re, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402,F401  (puts the repo root on sys.path)
import torch  # noqa: E402
from numba import cuda  # noqa: E402
from bench_train_step import CONFIGS, PD_VOCAB, config, make_batches, LR, MAX_NORM  # noqa: E402
import bench_scale  # noqa: E402
from mint.model import init_params  # noqa: E402
from mint.train import TrainConfig  # noqa: E402
from mint.gpu_train import GpuEngine  # noqa: E402
from mint.gemm import gemm_provider, GEMM_PROVIDERS  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--preset", default="d512", choices=sorted(set(CONFIGS) | set(bench_scale.CONFIGS)))
ap.add_argument("--gemm", default="cublas-tf32", choices=list(GEMM_PROVIDERS))
ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
ap.add_argument("--recompute", action="store_true")
ap.add_argument("--attention", default="flash", choices=["flash", "flash-tc"])   # flash-tc: mint.flash_tc (bf16 tensor cores)
ap.add_argument("--batch-size", type=int, default=32)
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--out", default=".")
ap.add_argument("--cu", default=None, help="tensor-core attention device code to try in place of chapter 26's (mint.flash_tc.FLASH_TC_CU, the "
                                          "default), e.g. a changed copy of it (flash_tc_bench.py --help says how to write one)")
ap.add_argument("--max-registers", default=None, help="register caps of the head_dim <= 64 attention kernels, F/Q/D (forward/dq/dkdv) or one for all")
args = ap.parse_args()
if args.cu or args.max_registers:
    import mint.flash_tc as FT
    if args.cu: FT.FLASH_TC_CU = open(args.cu).read()
    if args.max_registers: from flash_tc_bench import register_caps; FT.MAX_REGISTERS = register_caps(args.max_registers)
cfg = bench_scale.config(args.preset, PD_VOCAB)[0] if args.preset in bench_scale.CONFIGS else config(args.preset, PD_VOCAB)
T = cfg.max_seq_len
tcfg = TrainConfig(batch_size=args.batch_size, seq_len=T, lr=LR, max_grad_norm=MAX_NORM, attention=args.attention,
                   precision=args.precision, recompute=args.recompute)
with gemm_provider(args.gemm):
    engine = GpuEngine(init_params(cfg, seed=0), cfg, tcfg, graphs=False)
batches = make_batches(cfg, args.batch_size, T, 2 + args.steps, seed=1)
with engine, gemm_provider(args.gemm):
    for i, b in enumerate(batches[:2]): engine.step(b, LR, i + 1)          # compiles, one-time constants
    cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i, b in enumerate(batches[2:]): engine.step(b, LR, i + 3)
        cuda.synchronize()
groups = {}
for e in prof.key_averages():
    if e.device_time_total <= 0: continue
    name = re.sub(r"\[abi:[^\]]*\]", "", e.key)                              # numba's mangled suffixes
    g = groups.setdefault(name, [0.0, 0])
    g[0] += e.device_time_total; g[1] += e.count
rows = sorted(groups.items(), key=lambda kv: -kv[1][0])
total = sum(t for t, _ in groups.values())
from mint.flash_tc import attention_provider  # noqa: E402
att = attention_provider(args.precision, args.attention, cfg.head_dim)     # bf16 runs flash-tc by itself
lines = [f"{args.preset}, {args.precision}, GEMM {args.gemm}, attention {att}{', recompute' if args.recompute else ''}, "
         f"batch {args.batch_size}x{T}: {total / args.steps / 1e3:.1f} ms of kernels per step, "
         f"{sum(c for _, c in groups.values()) / args.steps:.0f} launches per step ({args.steps} steps)",
         f"{'ms/step':>8} {'share':>6} {'calls/step':>10}  kernel"]
for name, (t, c) in rows[:45]:
    lines.append(f"{t / args.steps / 1e3:8.2f} {t / total:6.1%} {c / args.steps:10.1f}  {name[:110]}")
text = "\n".join(lines)
print(text)
tag = "" if args.precision == "fp32" else f"_{args.precision}"
tag += "" if args.attention == "flash" or args.precision == "bf16" else f"_{args.attention}"
tag += f"_{Path(args.cu).stem}" if args.cu else ""
out = Path(args.out) / f"profile_{args.preset}_{args.gemm}{tag}{'_recompute' if args.recompute else ''}.txt"
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(text + "\n")
