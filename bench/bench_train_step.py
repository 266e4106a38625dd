"""One training step (forward + backward + clip + Adam) of Mint against PyTorch on the same model, weights and
batches, in one process; prints tokens/s of each and their ratio, and appends a record to bench/results/.

    python bench/bench_train_step.py                       # CPU: Mint's NumPy path vs PyTorch CPU
    python bench/bench_train_step.py --device cuda         # GPU: mint.gpu_train vs PyTorch CUDA (FP32, TF32, compile)

Configs: the presets (tiny, small, medium, large) and d512 (d_model 512, 8 heads, 8 layers, seq 256), batch 32.
What is timed, per step, on both sides (batch_size × seq_len tokens, all counted in the loss):
- Mint CPU: `mint.train.CpuEngine.step` (the model's one wiring on NumPy, clip at 50, Adam, float32 buffers).
- Mint GPU: `mint.gpu_train.GpuEngine.step` (batch upload, forward, backward, clip, Adam on the device, reading the
  loss back), after the engine's warm-up that compiles the kernels; also counted: kernel launches per step and host
  time per step (until the step's last launch is queued).
- PyTorch: batch → tensors, forward (`bench/torch_model.py`, scaled_dot_product_attention), masked mean
  cross-entropy, backward, `clip_grad_norm_(50)`, `torch.optim.Adam` (its defaults for the device), `loss.item()`
  (Mint reads the loss every step too, to stop on a non-finite one).
Rounds of each side alternate (ABBA…); tokens/s is the best round's (other work on the host only slows a round),
and the median is recorded beside it. Both start from the same weights (`mint.model.init_params`, loaded by name) and see the same batches; the losses
of the first two steps are compared as a check that the two compute the same thing.
"""
from __future__ import annotations
import argparse, math, os, statistics, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch_model import MintTorch, load_flat, batch_to_torch, masked_ce  # noqa: E402
from mint.core import ModelConfig, preset, mfu  # noqa: E402
from mint.data import lm_batches  # noqa: E402
from mint.model import init_params, n_params, flops_per_token  # noqa: E402
from mint.train import TrainConfig, CpuEngine, Lookahead  # noqa: E402

LR, MAX_NORM = 1e-3, 50.0
PD_VOCAB = 4130        # `mint train`'s vocabulary: Vocab.build on the training part of People's Daily (min_count 2)
CONFIGS = ["tiny", "small", "medium", "large", "d512"]


def config(name: str, vocab_size: int) -> ModelConfig:
    "A preset, or d512: d_model 512, 8 heads, 8 layers, seq 256 (the issue's largest config)."
    if name == "d512": return ModelConfig(vocab_size=vocab_size, d_model=512, n_heads=8, n_layers=8, max_seq_len=256)
    return preset(name, vocab_size)


def make_batches(cfg, batch_size: int, seq_len: int, n: int, seed: int = 0) -> list:
    "n `mint.data.Batch`es of random windows of a uniform random token stream (speed does not depend on the text)."
    rng = np.random.default_rng(seed)
    stream = rng.integers(0, cfg.vocab_size, 200_000).astype(np.int32)
    it = lm_batches(stream, batch_size, seq_len, rng)
    return [next(it) for _ in range(n)]


def ab_setup(preset_name: str, n_batches: int, batch_size: int = 32) -> tuple:
    "The start of the one-process CPU A/B scripts (ab_cpu_step.py, ab_cpu_exp.py): (cfg, B, T, weights, batches, TrainConfig)."
    cfg = config(preset_name, PD_VOCAB)
    B, T = batch_size, cfg.max_seq_len
    return (cfg, B, T, init_params(cfg, seed=0), make_batches(cfg, B, T, n_batches, seed=1),
            TrainConfig(batch_size=B, seq_len=T, lr=LR, max_grad_norm=MAX_NORM))


class MintCPU:
    "Mint's NumPy training step: `mint.train.CpuEngine.step` on a copy of the weights."
    name = "Mint (NumPy)"
    precision = "fp32"
    def __init__(self, cfg, params, batch_size, seq_len, attention="unfused"):
        tcfg = TrainConfig(batch_size=batch_size, seq_len=seq_len, lr=LR, max_grad_norm=MAX_NORM, attention=attention)
        self.engine, self.t = CpuEngine(params.copy(), cfg, tcfg), 0

    def step(self, batch) -> float:
        self.t += 1
        return self.engine.step(batch, LR, self.t)

    def run(self, batches) -> tuple[float, float]:
        "(seconds, last loss) for one step on each batch."
        t0 = time.perf_counter()
        for b in batches: loss = self.step(b)
        return time.perf_counter() - t0, loss


class TorchPeer:
    "The same step in PyTorch: forward, masked CE, backward, clip_grad_norm_, Adam, loss.item()."
    def __init__(self, cfg, params, device: str, label: str, compile: bool = False):
        self.name, self.device = label, device
        self.precision = "tf32" if "TF32 on" in label else "fp32"
        self.model = load_flat(MintTorch(cfg, "sdpa"), params, cfg).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8)
        self.fwd = torch.compile(self.model) if compile else self.model

    def step(self, batch) -> float:
        tb = batch_to_torch(batch, self.device)
        logits = self.fwd(tb["input_ids"], tb["pos"], tb["seg"])
        loss = masked_ce(logits, tb["targets"], tb["loss_mask"])
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), MAX_NORM)
        self.opt.step()
        return loss.item()

    def sync(self):
        if self.device == "cuda": torch.cuda.synchronize()

    def run(self, batches) -> tuple[float, float]:
        self.sync()
        t0 = time.perf_counter()
        for b in batches: loss = self.step(b)
        self.sync()
        return time.perf_counter() - t0, loss


GEMM_LABEL = {"mint": "", "cublas": ", cuBLAS FP32", "cublas-tf32": ", cuBLAS TF32"}


class MintGPU:
    "Mint's GPU path: `mint.gpu_train.GpuEngine.step` (everything on the device); counts launches and host time per step."
    def __init__(self, cfg, params, batch_size, seq_len, attention="unfused", gemm="mint", graphs=True):
        from mint.core import gpu_available
        if not gpu_available(): raise SystemExit("--device cuda: numba sees no CUDA GPU (or NUMBA_ENABLE_CUDASIM is set)")
        from numba import cuda
        from mint.gpu_train import GpuEngine
        from mint.gemm import gemm_provider
        self.name = "Mint (numba.cuda)" + {"flash": ", flash attention", "flash-tc": ", tensor-core flash attention (bf16)"}.get(attention, "") + GEMM_LABEL[gemm]
        self.precision = "tf32" if gemm == "cublas-tf32" else "fp32"
        self.gemm = lambda: gemm_provider(gemm)          # the GEMM provider of this side's steps (and its CUDA graph)
        ctx = cuda.current_context()
        free0 = ctx.get_memory_info()[0]
        tcfg = TrainConfig(batch_size=batch_size, seq_len=seq_len, lr=LR, max_grad_norm=MAX_NORM, attention=attention)
        self.engine, self.t = GpuEngine(params.copy(), cfg, tcfg, graphs), 0
        self.peak_bytes = free0 - ctx.get_memory_info()[0]      # what the engine holds: workspace, params, grads, m, v
        self.launches, self.host_s = [], []

    def step(self, batch) -> float:
        self.t += 1
        t0 = time.perf_counter()
        with self.engine, self.gemm():
            loss = self.engine.step(batch, LR, self.t)
        self.host_s.append(self.engine.t_issued - t0)
        self.launches.append(self.engine.counts["launches"][-1] if self.engine.counts["launches"] else None)
        return loss

    def run(self, batches) -> tuple[float, float]:
        t0 = time.perf_counter()
        self.t, loss = staged_steps(self.engine, batches, self.t, self.gemm())
        return time.perf_counter() - t0, loss


def staged_steps(engine, batches, t: int, ctx) -> tuple[int, float]:
    "Training steps over `batches` inside `engine` and `ctx` (a GEMM provider), each lent the next batch as mint.train.run_training does: (the last step number, the last loss)."
    it, loss = Lookahead(batches), None
    with engine, ctx:
        for b in it:
            t += 1
            loss = engine.step(b, LR, t, it.peek)
    return t, loss


def set_tf32(on: bool):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def bench_preset(name: str, args) -> dict:
    cfg = config(name, args.vocab_size)
    B = args.batch_size
    T = args.seq_len or cfg.max_seq_len
    steps = args.steps or (dict(tiny=8, small=5, medium=3, large=2, d512=1)[name] if args.device == "cpu" else 30)
    warm = args.warmup
    params = init_params(cfg, seed=0)
    batches = make_batches(cfg, B, T, warm + steps * args.rounds, seed=1)
    if args.device == "cpu":
        sides = [MintCPU(cfg, params, B, T), TorchPeer(cfg, params, "cpu", "PyTorch CPU")]
        if args.compile: sides.append(TorchPeer(cfg, params, "cpu", "PyTorch CPU + compile", compile=True))
    else:
        g = not args.no_graphs
        sides = [MintGPU(cfg, params, B, T, graphs=g)]
        if args.flash: sides.append(MintGPU(cfg, params, B, T, attention="flash", graphs=g))
        for gm in args.gemm:                               # the second GEMM provider, with the best attention asked for
            sides.append(MintGPU(cfg, params, B, T, attention="flash" if args.flash else "unfused", gemm=gm, graphs=g))
        for gm in (args.gemm or ["mint"]) if args.flash_tc else []:   # mint.flash_tc: bf16 tensor cores, no swap01 glue
            sides.append(MintGPU(cfg, params, B, T, attention="flash-tc", gemm=gm, graphs=g))
        sides += [TorchPeer(cfg, params, "cuda", "PyTorch CUDA eager, TF32 off"),
                  TorchPeer(cfg, params, "cuda", "PyTorch CUDA eager, TF32 on")]
        if not args.no_compile: sides.append(TorchPeer(cfg, params, "cuda", "PyTorch CUDA compile, TF32 on", compile=True))
    tf32 = lambda s: set_tf32("TF32 on" in s.name) if args.device == "cuda" else None
    device_name = torch.cuda.get_device_name(0) if args.device == "cuda" else None

    # check: the first steps from the same weights on the same batches give the same loss; the peers' peak memory
    first, peak = {}, {}
    for s in sides:
        tf32(s)
        if isinstance(s, TorchPeer) and args.device == "cuda": torch.cuda.reset_peak_memory_stats()
        first[s.name] = [s.step(b) for b in batches[:warm]]
        if isinstance(s, TorchPeer) and args.device == "cuda": peak[s.name] = torch.cuda.max_memory_allocated()
        if isinstance(s, MintGPU): peak[s.name] = s.peak_bytes
    ref = first[sides[0].name]
    for s in sides:
        if s.precision != "tf32":
            d = max(abs(a - b) for a, b in zip(first[s.name][:2], ref[:2]))
            if d > 1e-3: raise RuntimeError(f"{s.name}: first-step losses {first[s.name][:2]} differ from {ref[:2]} by {d:.1e}")

    times = {s.name: [] for s in sides}
    for r in range(args.rounds):
        chunk = batches[warm + r * steps: warm + (r + 1) * steps]
        for s in (sides if r % 2 == 0 else sides[::-1]):     # alternate the order: drift hits both alike
            tf32(s)
            secs, _ = s.run(chunk)
            times[s.name].append(secs)
    tok = steps * B * T
    fpt = flops_per_token(cfg, T)
    # the best round is the headline (as timeit): other work on the host only ever slows a round down
    res = {}
    for s in sides:
        tps = tok / min(times[s.name])
        res[s.name] = dict(tokens_per_s=tps, step_ms=1e3 * min(times[s.name]) / steps,
                           median_tokens_per_s=tok / statistics.median(times[s.name]),
                           round_seconds=[round(t, 4) for t in times[s.name]],
                           mfu=mfu(tps, fpt, device_name, s.precision), peak_memory_MiB=peak.get(s.name, 0) / 2**20 or None)
        if isinstance(s, MintGPU):
            res[s.name].update(launches_per_step=statistics.median(x for x in s.launches if x is not None),
                               host_ms_per_step=1e3 * statistics.median(s.host_s))
    mint = res[sides[0].name]
    for s in sides[1:]:
        res[s.name]["mint_over_this"] = mint["tokens_per_s"] / res[s.name]["tokens_per_s"]
        res[s.name]["mint_over_this_median"] = mint["median_tokens_per_s"] / res[s.name]["median_tokens_per_s"]
    return dict(preset=name, config=cfg.to_dict(), n_params=n_params(cfg), batch_size=B, seq_len=T, steps_per_round=steps,
                rounds=args.rounds, warmup_steps=warm, flops_per_token=fpt, first_losses={k: v[:2] for k, v in first.items()},
                results=res)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--presets", nargs="+", default=None, choices=CONFIGS,
                    help="configs (default: tiny small medium on CPU; tiny medium large d512 on a GPU)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=None, help="default: the preset's max_seq_len")
    ap.add_argument("--vocab-size", type=int, default=PD_VOCAB)
    ap.add_argument("--steps", type=int, default=None, help="timed steps per round (default: 8/5/3/2/1 on CPU, 30 on GPU)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds; the best is the headline, the median is kept too")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (at least 3: the loss check, launch counts)")
    ap.add_argument("--compile", action="store_true", help="CPU: also time torch.compile'd PyTorch")
    ap.add_argument("--no-compile", action="store_true", help="GPU: skip torch.compile'd PyTorch")
    ap.add_argument("--flash", action="store_true", help="GPU: also time Mint with the fused (flash) attention kernels")
    ap.add_argument("--flash-tc", action="store_true", help="GPU: also time Mint with the bf16 tensor-core attention (mint.flash_tc; no swap01 glue), per --gemm")
    ap.add_argument("--gemm", nargs="+", default=[], choices=["cublas", "cublas-tf32"],
                    help="GPU: also time Mint with these GEMM providers (cuBLAS through cupy, `mint.gemm.set_gemm_provider`)")
    ap.add_argument("--no-graphs", action="store_true", help="GPU: launch Mint's kernels one by one (no CUDA graph of the step)")
    ap.add_argument("--name", default=None, help="results file bench/results/<name>.jsonl (default train_step_<device>)")
    ap.add_argument("--no-record", action="store_true", help="print only; append nothing to bench/results/")
    args = ap.parse_args(argv)
    args.warmup = max(args.warmup, 3)
    args.presets = args.presets or (["tiny", "small", "medium"] if args.device == "cpu" else ["tiny", "medium", "large", "d512"])
    if args.device == "cuda" and not torch.cuda.is_available(): raise SystemExit("--device cuda: PyTorch sees no CUDA GPU")
    host = benchlib.host_info(args.device)
    load = host.get("loadavg_1_5_15", [0])[0]
    if load > 0.5 * (host["cpus_usable"] or 1):
        print(f"warning: load average {load} on {host['cpus_usable']} cores: other work is running, timings will be noisy")
    print(f"device: {host['device']}; numpy {host['numpy']}, numba {host['numba']}, torch {host['torch']} "
          f"({host['torch_threads']} threads); batch {args.batch_size}")
    runs, rows = [], []
    for name in args.presets:
        r = bench_preset(name, args)
        runs.append(r)
        for side, v in r["results"].items():
            rows.append(benchlib.train_row(r, side, v))
        print(f"  {name}: " + ", ".join(f"{k} {v['tokens_per_s']:,.0f} tok/s" for k, v in r["results"].items()), flush=True)
    print()
    print(benchlib.table(rows, benchlib.TRAIN_STEP_COLS))
    if not args.no_record:
        path = benchlib.record(args.name or f"train_step_{args.device}",
                               dict(bench="train_step", device=args.device, host=host, lr=LR, max_grad_norm=MAX_NORM,
                                    vocab_size=args.vocab_size, runs=runs,
                                    loadavg_end=[round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None))
        print(f"\nrecorded in {path.relative_to(benchlib.ROOT)}")


if __name__ == "__main__":
    main()
