"""One training step (forward + backward + clip + Adam) of Mint against PyTorch on the same model, weights and
batches, in one process; prints tokens/s of each and their ratio, and appends a record to bench/results/.

    python bench/bench_train_step.py                       # CPU: Mint's NumPy path vs PyTorch CPU
    python bench/bench_train_step.py --device cuda         # GPU: mint.gpu_train vs PyTorch CUDA (TF32 off and on)

What is timed, per step, on both sides (batch_size × seq_len tokens, all counted in the loss):
- Mint CPU: `mint.model.loss_and_grads` + `mint.optim.grad_sumsq` + `mint.optim.adam_step` (clip at 50, float32 buffers).
- Mint GPU: `mint.gpu_train.train_gpu` for a number of steps (its whole step on the device: batch upload, forward,
  backward, clip, Adam, reading the loss back), after a warm-up call that compiles the kernels.
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
from mint.core import preset  # noqa: E402
from mint.data import lm_batches  # noqa: E402
from mint.model import init_params, loss_and_grads, n_params  # noqa: E402
from mint.optim import AdamConfig, adam_step, grad_sumsq  # noqa: E402

LR, MAX_NORM = 1e-3, 50.0
PD_VOCAB = 4130        # `mint train`'s vocabulary: Vocab.build on the training part of People's Daily (min_count 2)


def make_batches(cfg, batch_size: int, seq_len: int, n: int, seed: int = 0) -> list:
    "n `mint.data.Batch`es of random windows of a uniform random token stream (speed does not depend on the text)."
    rng = np.random.default_rng(seed)
    stream = rng.integers(0, cfg.vocab_size, 200_000).astype(np.int32)
    it = lm_batches(stream, batch_size, seq_len, rng)
    return [next(it) for _ in range(n)]


class MintCPU:
    "Mint's NumPy training step on a flat float32 buffer."
    name = "Mint (NumPy)"
    def __init__(self, cfg, params):
        self.cfg, self.params = cfg, params.copy()
        self.grads, self.m, self.v = (np.zeros_like(self.params) for _ in range(3))
        self.acfg, self.t = AdamConfig(lr=LR, max_grad_norm=MAX_NORM), 0

    def step(self, batch) -> float:
        loss = loss_and_grads(self.params, self.grads, self.cfg, batch)
        self.t += 1
        adam_step(self.params, self.grads, self.m, self.v, LR, self.t, self.acfg, sumsq=grad_sumsq(self.grads))
        return loss

    def run(self, batches) -> tuple[float, float]:
        "(seconds, last loss) for one step on each batch."
        t0 = time.perf_counter()
        for b in batches: loss = self.step(b)
        return time.perf_counter() - t0, loss


class TorchPeer:
    "The same step in PyTorch: forward, masked CE, backward, clip_grad_norm_, Adam, loss.item()."
    def __init__(self, cfg, params, device: str, label: str, compile: bool = False):
        self.name, self.device = label, device
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


class MintGPU:
    "Mint's GPU path: `mint.gpu_train.train_gpu` run for len(batches) steps (no checkpoint, no periodic validation)."
    name = "Mint (numba.cuda)"
    def __init__(self, cfg, params):
        try:
            from mint import gpu_train
        except ImportError as e:
            raise SystemExit(f"--device cuda: Mint's GPU path is not importable ({e}). It comes from nbs/15_gpu_train.ipynb "
                             f"(`nbdev-export`); until it exists only the CPU benchmark can run.")
        if not hasattr(gpu_train, "train_gpu"):
            raise SystemExit("--device cuda: mint.gpu_train has no train_gpu(params, cfg, tcfg, batches, val, vocab, "
                             "out_dir, meta, progress) (the contract mint.train calls); update bench_train_step.py")
        from mint.core import gpu_available
        if not gpu_available(): raise SystemExit("--device cuda: numba sees no CUDA GPU (or NUMBA_ENABLE_CUDASIM is set)")
        self.cfg, self.params, self.train_gpu = cfg, params.copy(), gpu_train.train_gpu

    def run(self, batches) -> tuple[float, float]:
        from mint.train import TrainConfig
        B, T = batches[0].input_ids.shape
        n = len(batches)
        tcfg = TrainConfig(steps=n, batch_size=B, seq_len=T, lr=LR, warmup=0, max_grad_norm=MAX_NORM,
                           eval_every=n, eval_batches=1)
        t0 = time.perf_counter()
        res = self.train_gpu(self.params, self.cfg, tcfg, iter(batches), batches[:1], None, None, None, False)
        wall = time.perf_counter() - t0
        if res.steps != n: raise RuntimeError(f"train_gpu stopped after {res.steps} of {n} steps: {res.stopped}")
        # its own clock covers the steps only (not setup or the final validation); fall back to the wall clock
        secs = n * B * T / res.tokens_per_s if res.tokens_per_s and math.isfinite(res.tokens_per_s) else wall
        return secs, float(res.history["loss"][-1]) if res.history.get("loss") else math.nan


def set_tf32(on: bool):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def bench_preset(name: str, args) -> dict:
    cfg = preset(name, vocab_size=args.vocab_size)
    B = args.batch_size
    T = args.seq_len or cfg.max_seq_len
    steps = args.steps or (dict(tiny=8, small=5, medium=3, large=2)[name] if args.device == "cpu" else 50)
    warm = args.warmup
    params = init_params(cfg, seed=0)
    batches = make_batches(cfg, B, T, warm + steps * args.rounds, seed=1)
    if args.device == "cpu":
        sides = [MintCPU(cfg, params), TorchPeer(cfg, params, "cpu", "PyTorch CPU")]
        if args.compile: sides.append(TorchPeer(cfg, params, "cpu", "PyTorch CPU + compile", compile=True))
    else:
        sides = [MintGPU(cfg, params), TorchPeer(cfg, params, "cuda", "PyTorch CUDA, TF32 off"),
                 TorchPeer(cfg, params, "cuda", "PyTorch CUDA, TF32 on")]
        if args.compile: sides.append(TorchPeer(cfg, params, "cuda", "PyTorch CUDA, TF32 on + compile", compile=True))
    tf32 = lambda s: set_tf32("TF32 on" in s.name) if args.device == "cuda" else None

    # check: the first two steps from the same weights on the same batches give the same loss
    first = {}
    for s in sides:
        tf32(s)
        if isinstance(s, MintGPU):
            first[s.name] = None
            s.run(batches[:max(warm, 2)])               # compiles the kernels
        else:
            first[s.name] = [s.step(b) for b in batches[:2]] + [s.step(b) for b in batches[2:warm]]
    ref = first[sides[0].name] or first[sides[1].name]
    for s in sides:
        if first[s.name] is not None and "TF32 on" not in s.name:
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
    # the best round is the headline (as timeit): other work on the host only ever slows a round down
    res = {s.name: dict(tokens_per_s=tok / min(times[s.name]), step_ms=1e3 * min(times[s.name]) / steps,
                        median_tokens_per_s=tok / statistics.median(times[s.name]), round_seconds=[round(t, 4) for t in times[s.name]])
           for s in sides}
    mint = res[sides[0].name]
    for s in sides[1:]:
        res[s.name]["mint_over_this"] = mint["tokens_per_s"] / res[s.name]["tokens_per_s"]
        res[s.name]["mint_over_this_median"] = mint["median_tokens_per_s"] / res[s.name]["median_tokens_per_s"]
    return dict(preset=name, config=cfg.to_dict(), n_params=n_params(cfg), batch_size=B, seq_len=T, steps_per_round=steps,
                rounds=args.rounds, warmup_steps=warm, first_losses={k: v[:2] if v else None for k, v in first.items()},
                results=res)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--presets", nargs="+", default=["tiny", "small", "medium"], choices=["tiny", "small", "medium", "large"])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=None, help="default: the preset's max_seq_len")
    ap.add_argument("--vocab-size", type=int, default=PD_VOCAB)
    ap.add_argument("--steps", type=int, default=None, help="timed steps per round (default: 8/5/3/2 on CPU, 50 on GPU)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds; the best is the headline, the median is kept too")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (at least 2: they are the loss check)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile'd PyTorch")
    ap.add_argument("--name", default=None, help="results file bench/results/<name>.jsonl (default train_step_<device>)")
    ap.add_argument("--no-record", action="store_true", help="print only; append nothing to bench/results/")
    args = ap.parse_args(argv)
    args.warmup = max(args.warmup, 2)
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
            rows.append(dict(preset=name, params=r["n_params"], shape=f"{r['batch_size']}×{r['seq_len']}", side=side,
                             tps=v["tokens_per_s"], med=v["median_tokens_per_s"], ms=v["step_ms"],
                             ratio=v.get("mint_over_this"), ratio_med=v.get("mint_over_this_median")))
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
