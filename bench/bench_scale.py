"""Mint at the sizes people train: one command times Mint's paths against PyTorch's in one process, per config, and
prints tokens/s, MFU against the dense peak of the unit each path uses, and peak memory.

    python bench/bench_scale.py                                     # GPU: every config, every path
    python bench/bench_scale.py --configs d768 --steps 5 --rounds 2 --budget-s 100
    python bench/bench_scale.py --bf16-gemm cublas-bf16 tc cublas-tf32   # Mint bf16 with each GEMM provider present
    python bench/bench_scale.py --device cpu --configs tiny          # the machinery on a CPU (NumPy vs PyTorch CPU)

Configs (vocabulary 4130, People's Daily's): medium, large (the presets), d512 (8 heads, 8 layers, seq 256), d768
(12 heads, 12 layers, seq 512), d1024 (32 heads, 18 layers, seq 512, Mint with --recompute); batch 32. --recompute-too
[block] [mlp] adds Mint bf16 with --recompute (block) and/or --recompute mlp beside the same path without it (their
peak memory is the point).
Paths (GPU): Mint fp32 with its hand GEMM, Mint fp32 with cuBLAS TF32, Mint bf16 with each provider of
--bf16-gemm that this checkout has (a provider in mint.gemm.BF16_PROVIDERS multiplies bf16 itself; any other gets
the exact fallback: operands widened to float32, then that provider's GEMM — with cublas-tf32 the products are still
exactly the bf16 products, on the TF32 unit), all with the fused (flash) attention and CUDA graphs; PyTorch eager
FP32 (TF32 off), eager TF32, torch.compile TF32, and bf16 autocast + torch.compile + fused Adam.
MFU: model FLOPs (mint.model.flops_per_token) × tokens/s over the dense peak (mint.core.PEAK_TFLOPS) of the unit the
path's GEMMs run on: fp32 (hand GEMM, cuBLAS FP32), tf32 (cuBLAS TF32, and bf16 through it), bf16 (bf16 providers,
autocast). Peak memory: device memory the Mint engine holds after its warm-up step (workspace, weights, gradients,
Adam moments, the fallback's scratch); PyTorch's max_memory_allocated over its first steps.
Each path's first steps are also a check: from the same weights on the same batches its loss must match the first path's (Mint fp32's by default)
(within 2e-2 for bf16 and TF32, 1e-3 otherwise). Paths that fail (out of memory, a missing provider) are recorded
with the reason; --budget-s skips the paths left once that much time has passed. Results: bench/results/
scale_<device>_<date>.json (rewritten after every path, `complete` true at the end) and the table printed last."""
from __future__ import annotations
import argparse, datetime, json, math, statistics, sys, time, traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from mint.core import ModelConfig, preset, mfu  # noqa: E402
from mint.model import init_params, n_params, flops_per_token  # noqa: E402
from mint.train import TrainConfig, CpuEngine  # noqa: E402
from bench_train_step import make_batches, staged_steps, LR, MAX_NORM, PD_VOCAB  # noqa: E402

CONFIGS = {"tiny": dict(preset="tiny"), "medium": dict(preset="medium"), "large": dict(preset="large"),
           "d512": dict(d_model=512, n_heads=8, n_layers=8, max_seq_len=256),
           "d768": dict(d_model=768, n_heads=12, n_layers=12, max_seq_len=512),
           "d1024": dict(d_model=1024, n_heads=32, n_layers=18, max_seq_len=512, recompute=True)}


def config(name: str, vocab_size: int) -> tuple[ModelConfig, bool]:
    "(ModelConfig, whether Mint uses --recompute) of a config name."
    c = dict(CONFIGS[name])
    rc = c.pop("recompute", False)
    if "preset" in c: return preset(c["preset"], vocab_size), rc
    return ModelConfig(vocab_size=vocab_size, **c), rc


class MintSide:
    "Mint's training step (`GpuEngine.step`, or `CpuEngine` with device cpu) with a precision, GEMM provider, recompute."
    def __init__(self, cfg, params, B, T, device, precision="fp32", gemm="mint", recompute=False):
        from mint.gemm import BF16_PROVIDERS, GEMM_PROVIDERS
        from mint.report import gemm_unit
        if gemm not in GEMM_PROVIDERS: raise LookupError(f"GEMM provider {gemm!r} is not in this checkout ({', '.join(GEMM_PROVIDERS)})")
        self.unit = gemm_unit(gemm)                      # the unit its GEMMs run on: the peak its MFU divides by, as the report's
        how = "" if precision == "fp32" or gemm in BF16_PROVIDERS else " (widened)"
        self.name = (f"Mint {precision}, GEMM {gemm}{how}" if device == "cuda" else f"Mint {precision} (NumPy{' emulation' if precision == 'bf16' else ''})") + ({"mlp": ", recompute mlp"}.get(recompute, ", recompute") if recompute else "")
        self.precision, self.device = precision, device
        tcfg = TrainConfig(batch_size=B, seq_len=T, lr=LR, max_grad_norm=MAX_NORM, precision=precision, recompute=recompute,
                           attention="flash" if device == "cuda" else "unfused")
        self.t = 0
        if device == "cpu":
            self.engine, self.gemm = CpuEngine(params.copy(), cfg, tcfg), None
            self.peak_bytes = self.engine.ws.nbytes + 16 * params.size      # workspace + weights, gradients, m, v
            return
        from numba import cuda
        from mint.gpu_train import GpuEngine
        from mint.gemm import gemm_provider
        self.gemm = lambda: gemm_provider(gemm)
        ctx = cuda.current_context()
        import gc; gc.collect(); ctx.deallocations.clear()  # the previous path's buffers freed now, not during this one's setup
        free0 = ctx.get_memory_info()[0]
        with self.gemm():
            self.engine = GpuEngine(params.copy(), cfg, tcfg)
        self.peak_bytes = free0 - ctx.get_memory_info()[0]

    def run(self, batches) -> tuple[float, float]:
        t0 = time.perf_counter()
        if self.device == "cpu":
            for b in batches:
                self.t += 1; loss = self.engine.step(b, LR, self.t)
        else: self.t, loss = staged_steps(self.engine, batches, self.t, self.gemm())
        return time.perf_counter() - t0, loss

    def close(self):
        self.engine = None
        if self.device == "cuda":
            from mint.precision import clear_scratch
            clear_scratch()


class TorchSide:
    "The same step in PyTorch: FP32 / TF32 eager or compiled, or bf16 autocast + torch.compile + fused Adam."
    def __init__(self, cfg, params, device, mode: str):
        import torch
        from torch_model import MintTorch, load_flat
        self.torch, self.device, self.mode = torch, device, mode
        self.name = {"fp32": "PyTorch eager FP32", "tf32": "PyTorch eager TF32", "compile": "PyTorch compile TF32",
                     "bf16": "PyTorch bf16 autocast + compile, fused Adam"}[mode]
        self.precision = "bf16" if mode == "bf16" else "fp32"
        self.unit = {"fp32": "fp32", "tf32": "tf32", "compile": "tf32", "bf16": "bf16"}[mode]
        self.model = load_flat(MintTorch(cfg, "sdpa"), params, cfg).to(device)
        fused = dict(fused=True) if mode == "bf16" and device == "cuda" else {}
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, **fused)
        self.fwd = torch.compile(self.model) if mode in ("compile", "bf16") else self.model
        self.peak_bytes = None

    def _tf32(self):
        on = self.mode in ("tf32", "compile")
        self.torch.backends.cuda.matmul.allow_tf32 = on
        self.torch.backends.cudnn.allow_tf32 = on

    def step(self, batch) -> float:
        from torch_model import batch_to_torch, masked_ce
        torch = self.torch
        tb = batch_to_torch(batch, self.device)
        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.mode == "bf16"):
            logits = self.fwd(tb["input_ids"], tb["pos"], tb["seg"])
            loss = masked_ce(logits.float(), tb["targets"], tb["loss_mask"])
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), MAX_NORM)
        self.opt.step()
        return loss.item()

    def run(self, batches) -> tuple[float, float]:
        self._tf32()
        if self.device == "cuda": self.torch.cuda.synchronize()
        t0 = time.perf_counter()
        for b in batches: loss = self.step(b)
        if self.device == "cuda": self.torch.cuda.synchronize()
        return time.perf_counter() - t0, loss

    def close(self):
        self.model = self.opt = self.fwd = None
        if self.device == "cuda": self.torch.cuda.empty_cache()


def sides_of(cfg, rc, args):
    "(label, factory) of every path for this config, in order."
    out = []
    if args.device == "cpu":
        out += [(f"mint fp32", lambda p, B, T: MintSide(cfg, p, B, T, "cpu", recompute=rc)),
                (f"mint bf16", lambda p, B, T: MintSide(cfg, p, B, T, "cpu", "bf16", recompute=rc)),
                ("torch fp32", lambda p, B, T: TorchSide(cfg, p, "cpu", "fp32"))]
        return out
    if "fp32" in args.mint:
        out.append(("mint fp32 mint", lambda p, B, T: MintSide(cfg, p, B, T, "cuda", "fp32", "mint", rc)))
    if "tf32" in args.mint:
        out.append(("mint fp32 cublas-tf32", lambda p, B, T: MintSide(cfg, p, B, T, "cuda", "fp32", "cublas-tf32", rc)))
    if "bf16" in args.mint:
        for i, g in enumerate(args.bf16_gemm):
            out.append((f"mint bf16 {g}", lambda p, B, T, g=g: MintSide(cfg, p, B, T, "cuda", "bf16", g, rc)))
            modes = [] if args.recompute_too is None or i or rc else args.recompute_too or ["block"]   # given alone: block
            for mode in modes:                                      # the memory levers, beside the same path without them
                out.append((f"mint bf16 {g} recompute" + ("-mlp" if mode == "mlp" else ""),
                            lambda p, B, T, g=g, mode=mode: MintSide(cfg, p, B, T, "cuda", "bf16", g, mode)))
    peer = [(f"torch {m}", lambda p, B, T, m=m: TorchSide(cfg, p, "cuda", m)) for m in args.torch]
    return peer + out if args.peer_first else out + peer


def bench_config(name, args, t_start, save=lambda run: None) -> dict:
    "Every path of one config; `save(run)` is called with the run so far after each path (the JSON survives a kill)."
    cfg, rc = config(name, args.vocab_size)
    B, T = args.batch_size, cfg.max_seq_len
    params = init_params(cfg, seed=0)
    batches = make_batches(cfg, B, T, args.warmup + args.steps * args.rounds, seed=1)
    device_name = None
    if args.device == "cuda":
        import torch
        device_name = torch.cuda.get_device_name(0)
    fpt = flops_per_token(cfg, T)
    res, ref = {}, None
    run = dict(config=name, model=cfg.to_dict(), recompute=rc, n_params=n_params(cfg), batch_size=B, seq_len=T,
               flops_per_token=fpt, results=res)
    for label, make in sides_of(cfg, rc, args):
        if time.perf_counter() - t_start > args.budget_s:
            res[label] = dict(skipped=f"time budget of {args.budget_s:.0f} s spent"); continue
        side = None
        try:
            if args.device == "cuda":
                import torch
                torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            side = make(params, B, T)
            first = [side.run([b])[1] for b in batches[:args.warmup]]
            setup_s = time.perf_counter() - t0
            peak = side.peak_bytes
            if isinstance(side, TorchSide) and args.device == "cuda": peak = torch.cuda.max_memory_allocated()
            if ref is None: ref = first
            tol = 2e-2 if side.unit != "fp32" or side.precision == "bf16" else 1e-3
            d = max(abs(a - b) for a, b in zip(first[:2], ref[:2]))
            times = [side.run(batches[args.warmup + r * args.steps: args.warmup + (r + 1) * args.steps])[0]
                     for r in range(args.rounds)]
            tps = args.steps * B * T / min(times)
            res[label] = dict(name=side.name, unit=side.unit, tokens_per_s=tps, step_ms=1e3 * min(times) / args.steps,
                              median_tokens_per_s=args.steps * B * T / statistics.median(times),
                              mfu=mfu(tps, fpt, device_name, side.unit) if device_name else None,
                              peak_memory_MiB=None if peak is None else peak / 2**20, first_losses=first[:2],
                              loss_vs_mint_fp32=d, loss_check=bool(d <= tol), setup_s=round(setup_s, 1))
        except Exception as e:
            res[label] = dict(error=f"{type(e).__name__}: {str(e)[:300]}")
            if args.verbose: traceback.print_exc()
        finally:
            if side is not None: side.close()
            side = None
        r = res[label]
        print(f"  {name} {label}: " + (f"{r['tokens_per_s']:,.0f} tok/s, MFU {100 * (r['mfu'] or 0):.1f}%" if "tokens_per_s" in r
                                       else r.get("error") or r.get("skipped")), flush=True)
        save(run)
    return run


COLS = [("config", "config", ""), ("params", "params", ","), ("path", "path", ""), ("unit", "unit", ""),
        ("tps", "tokens/s", ",.0f"), ("ms", "ms/step", ".1f"), ("mfu", "MFU %", ".1f"), ("mem", "peak MiB", ",.0f"),
        ("ratio", "÷ best PyTorch", ".2f"), ("note", "note", "")]


def rows_of(runs) -> list[dict]:
    rows = []
    for r in runs:
        best = max((v["tokens_per_s"] for k, v in r["results"].items() if k.startswith("torch") and "tokens_per_s" in v), default=None)
        for k, v in r["results"].items():
            row = dict(config=r["config"] + (" (recompute mlp)" if k.endswith(" recompute-mlp") else
                                             " (recompute)" if (r["recompute"] or k.endswith(" recompute")) and k.startswith("mint") else ""),
                       params=r["n_params"], path=v.get("name", k), unit=v.get("unit"))
            if "tokens_per_s" in v:
                row.update(tps=v["tokens_per_s"], ms=v["step_ms"], mfu=None if v["mfu"] is None else 100 * v["mfu"],
                           mem=v["peak_memory_MiB"], ratio=v["tokens_per_s"] / best if best else None,
                           note="" if v["loss_check"] else f"first loss off by {v['loss_vs_mint_fp32']:.1e}")
            else: row["note"] = v.get("error") or v.get("skipped")
            rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--configs", nargs="+", default=None, choices=list(CONFIGS), help="default: medium large d512 d768 d1024 (cuda), tiny (cpu)")
    ap.add_argument("--mint", nargs="+", default=["fp32", "tf32", "bf16"], choices=["fp32", "tf32", "bf16"],
                    help="Mint's paths: fp32 hand GEMM, fp32 cuBLAS TF32, bf16 with each --bf16-gemm provider")
    ap.add_argument("--bf16-gemm", nargs="+", default=["cublas-bf16", "tc", "cublas-tf32"],
                    help="GEMM providers for Mint bf16 (those missing from this checkout are recorded as missing)")
    ap.add_argument("--recompute-too", nargs="*", choices=["block", "mlp"], default=None, metavar="MODE",
                    help="also run Mint bf16 with the first --bf16-gemm provider and --recompute MODE (block, mlp; given alone: block), "
                         "for configs that do not recompute already")
    ap.add_argument("--torch", nargs="+", default=["fp32", "tf32", "compile", "bf16"], choices=["fp32", "tf32", "compile", "bf16"])
    ap.add_argument("--peer-first", action="store_true", help="run PyTorch's paths before Mint's (a --budget-s cut then keeps the peer; "
                    "the first losses are checked against PyTorch's first path instead of Mint fp32's)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--vocab-size", type=int, default=PD_VOCAB)
    ap.add_argument("--steps", type=int, default=20, help="timed steps per round")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds; the best is the headline, the median is kept")
    ap.add_argument("--warmup", type=int, default=3, help="untimed first steps (compilation, CUDA-graph capture, the loss check)")
    ap.add_argument("--budget-s", type=float, default=math.inf, help="skip the paths left after this many seconds")
    ap.add_argument("--out", default=None, help="folder for the JSON (default bench/results)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    args.warmup = max(args.warmup, 2)
    args.configs = args.configs or (["medium", "large", "d512", "d768", "d1024"] if args.device == "cuda" else ["tiny"])
    if args.device == "cuda":
        from mint.core import gpu_available
        if not gpu_available(): raise SystemExit("--device cuda: numba sees no CUDA GPU (or NUMBA_ENABLE_CUDASIM is set)")
    host = benchlib.host_info(args.device)
    print(f"device: {host['device']}; torch {host['torch']}, numba-cuda {host['numba_cuda']}; batch {args.batch_size}", flush=True)
    t_start = time.perf_counter()
    date = datetime.datetime.now(datetime.timezone.utc)
    out = Path(args.out) if args.out else benchlib.RESULTS
    out.mkdir(parents=True, exist_ok=True)
    dev = (host.get("gpu") or "cpu").split()[-1].lower() if args.device == "cuda" else "cpu"
    path = out / f"scale_{dev}_{date:%Y-%m-%dT%H%M}.json"
    runs = []

    def save(run=None):
        "Write the JSON with every row so far (called after each path, so a killed run keeps what it measured)."
        done = runs + ([run] if run is not None else [])
        doc = dict(bench="scale", date=date.isoformat(timespec="seconds"), device=args.device, host=host, lr=LR,
                   args={k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in vars(args).items()},
                   complete=run is None, runs=done)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False)); tmp.replace(path)

    for n in args.configs: runs.append(bench_config(n, args, t_start, save))
    save()
    print(f"\nrecorded in {path}\n")
    print(f"{host['device']}, {date:%Y-%m-%d}, batch {args.batch_size}, {args.steps} steps × {args.rounds} rounds (best round):")
    print(benchlib.table(rows_of(runs), COLS))


if __name__ == "__main__":
    main()
