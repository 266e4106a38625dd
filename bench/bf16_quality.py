"""Does bf16 train as well as fp32? Mint fp32, Mint bf16 and PyTorch bf16 autocast (and PyTorch fp32) train the same
model from the same weights on the same People's Daily batches, and their validation losses are compared.

    python bench/bf16_quality.py --device cuda                          # medium and large, 2,000 steps (the issue's check)
    python bench/bf16_quality.py --device cpu --configs tiny --steps 300 --max 20000   # the short CPU version

Pipeline (as `mint train` and bench/torch_train_peoples_daily.py): `load_peoples_daily` → `split_tail(0.05)` →
`Vocab.build` → `encode_corpus` → `lm_batches` seeded with --seed; validation on the first --val-batches batches of
`lm_eval_batches`, once at the end. Schedule: TrainConfig's defaults (lr 3e-3, warmup steps/10, cosine), clip 50,
Adam β 0.9/0.999, ε 1e-8. Mint runs `mint.train.train` (or `train_gpu`) with TrainConfig(precision=...); PyTorch
runs bench/torch_model.py under `torch.autocast(bfloat16)` (logits and loss in fp32, as Mint) with fp32 master weights.
Checks: Mint bf16's validation loss within --tol (1%) of Mint fp32's and of PyTorch bf16's. Appends a record to
bench/results/bf16_quality.jsonl (or --out) and prints a table last."""
from __future__ import annotations
import argparse, itertools, json, math, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import numpy as np  # noqa: E402
from mint import data as D  # noqa: E402
from mint.core import preset  # noqa: E402
from mint.model import init_params, n_params  # noqa: E402
from mint.optim import lr_at  # noqa: E402
from mint.train import TrainConfig, train  # noqa: E402
from mint.vocab import Vocab  # noqa: E402


def torch_run(cfg, params, tcfg, batches, val, device, bf16: bool) -> tuple[float, float]:
    "(validation loss, seconds) of PyTorch training with mint's schedule; bf16: autocast, fp32 masters."
    import torch
    from torch_model import MintTorch, load_flat, batch_to_torch, masked_ce
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    model = load_flat(MintTorch(cfg, "sdpa"), params, cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=tcfg.base_lr, betas=(0.9, 0.999), eps=1e-8)
    def loss_of(b):
        tb = batch_to_torch(b, device)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            logits = model(tb["input_ids"], tb["pos"], tb["seg"])
        return masked_ce(logits.float(), tb["targets"], tb["loss_mask"])
    t0 = time.perf_counter()
    for step in range(1, tcfg.steps + 1):
        for g in opt.param_groups: g["lr"] = lr_at(step - 1, tcfg.steps, tcfg.base_lr, tcfg.warmup_steps)
        loss = loss_of(next(batches))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.max_grad_norm)
        opt.step()
    secs = time.perf_counter() - t0
    tot = n = 0.0
    with torch.no_grad():
        for b in val:
            c = float(b.loss_mask.sum()); tot += float(loss_of(b)) * c; n += c
    return tot / n, secs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--configs", nargs="+", default=["medium", "large"], choices=["tiny", "small", "medium", "large"])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=None, help="default: the preset's max_seq_len")
    ap.add_argument("--val-batches", type=int, default=32)
    ap.add_argument("--max", type=int, default=None, dest="max_lines", help="use at most N lines of the corpus")
    ap.add_argument("--gemm", default="cublas-tf32", help="GPU: Mint's GEMM provider (default cublas-tf32: exact for bf16 operands)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch runs")
    ap.add_argument("--tol", type=float, default=0.01, help="relative tolerance of the checks (default 1%%)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="folder of bf16_quality.jsonl (default bench/results)")
    args = ap.parse_args(argv)
    texts = D.load_peoples_daily(max_lines=args.max_lines)
    train_s, val_s = D.split_tail(texts, 0.05)
    vocab = Vocab.build(train_s)
    tr, va = D.encode_corpus(train_s, vocab), D.encode_corpus(val_s, vocab)
    host = benchlib.host_info(args.device)
    print(f"device: {host['device']}; {tr.size:,} training / {va.size:,} validation tokens; vocab {len(vocab):,}", flush=True)
    runs, rows = [], []
    for name in args.configs:
        cfg = preset(name, len(vocab))
        T = args.seq_len or cfg.max_seq_len
        val = list(itertools.islice(D.lm_eval_batches(va, args.batch_size, T), args.val_batches))
        batches = lambda: D.lm_batches(tr, args.batch_size, T, np.random.default_rng(args.seed))
        res = {}
        for prec in ("fp32", "bf16"):
            tcfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=T, eval_every=args.steps, precision=prec, seed=args.seed)
            t0 = time.perf_counter()
            if args.device == "cuda":
                from mint.gpu_train import train_gpu
                from mint.gemm import gemm_provider
                with gemm_provider(args.gemm):
                    r = train_gpu(init_params(cfg, args.seed), cfg, tcfg, batches(), val, vocab, progress=False)
            else:
                r = train(init_params(cfg, args.seed), cfg, tcfg, batches(), val, vocab, progress=False)
            res[f"Mint {prec}"] = dict(val_loss=r.best_val, seconds=time.perf_counter() - t0)
            print(f"  {name} Mint {prec}: validation {r.best_val:.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)
        if not args.no_torch:
            tcfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=T, seed=args.seed)
            for bf in (False, True):
                v, s = torch_run(cfg, init_params(cfg, args.seed), tcfg, batches(), val, args.device, bf)
                res[f"PyTorch {'bf16 autocast' if bf else 'fp32'}"] = dict(val_loss=v, seconds=s)
                print(f"  {name} PyTorch {'bf16' if bf else 'fp32'}: validation {v:.4f} ({s:.0f} s)", flush=True)
        m32, m16 = res["Mint fp32"]["val_loss"], res["Mint bf16"]["val_loss"]
        checks = {"bf16 vs fp32": abs(m16 - m32) / m32}
        if "PyTorch bf16 autocast" in res: checks["Mint bf16 vs PyTorch bf16"] = abs(m16 - res["PyTorch bf16 autocast"]["val_loss"]) / m16
        runs.append(dict(config=name, model=cfg.to_dict(), n_params=n_params(cfg), seq_len=T, results=res,
                         relative_gaps=checks, passed={k: v <= args.tol for k, v in checks.items()}))
        for k, v in res.items():
            rows.append(dict(config=name, side=k, val=v["val_loss"], secs=v["seconds"],
                             gap=(v["val_loss"] - m32) / m32 * 100))
    rec = dict(bench="bf16_quality", device=args.device, host=host, args=vars(args), runs=runs)
    out = Path(args.out) if args.out else benchlib.RESULTS
    out.mkdir(parents=True, exist_ok=True)
    import datetime
    rec = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **rec}
    with open(out / "bf16_quality.jsonl", "a") as f: f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"\n{host['device']}, {args.steps} steps, batch {args.batch_size}, validation on {args.val_batches} batches:")
    print(benchlib.table(rows, [("config", "config", ""), ("side", "run", ""), ("val", "validation loss", ".4f"),
                                ("gap", "vs Mint fp32 %", "+.2f"), ("secs", "train s", ".0f")]))
    for r in runs:
        print(f"{r['config']}: " + "; ".join(f"{k} {v:.2%} ({'pass' if r['passed'][k] else 'FAIL'})" for k, v in r["relative_gaps"].items()))
    return 0 if all(all(r["passed"].values()) for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
