"""The peer's run of `mint train`: the same model trained in PyTorch on the same data pipeline, for the same time
budget, to give the validation loss Mint's run is compared with.

    python bench/torch_train_peoples_daily.py                     # mint train's defaults (TrainConfig), CPU
    python bench/torch_train_peoples_daily.py --device cuda --preset medium

Everything but the arithmetic is Mint's, with `mint train`'s defaults: `mint.data.load_peoples_daily` →
`split_tail(0.05)` → `Vocab.build` on the training part → `encode_corpus` → `lm_batches` (seeded as `mint train`,
so the same batches in the same order) and `lm_eval_batches` for validation; the initial weights are
`mint.model.init_params(cfg, seed)` loaded by name; Adam (β 0.9/0.999, ε 1e-8), global-norm clip 50, the warmup +
cosine schedule of `mint.optim.lr_at`; periodic validation on 16 batches, a final one on all. The run appends a
record to bench/results/peoples_daily_torch.jsonl.
"""
from __future__ import annotations
import argparse, itertools, math, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch_model import MintTorch, load_flat, batch_to_torch, loss_of_batch  # noqa: E402
from mint import data as D  # noqa: E402
from mint.core import preset, seed_everything  # noqa: E402
from mint.model import init_params, n_params  # noqa: E402
from mint.train import TrainConfig  # noqa: E402
from mint.optim import lr_at, warmup_steps  # noqa: E402
from mint.vocab import Vocab  # noqa: E402


@torch.no_grad()
def evaluate(model, batches, device, limit=None) -> float:
    "Mean masked cross-entropy (nats/token) over `batches` (the first `limit`), weighted by counted tokens (as mint.train.evaluate)."
    model.eval()
    tot = n = 0.0
    for b in itertools.islice(batches, limit):
        c = float(b.loss_mask.sum())
        if c == 0: continue
        tot += float(loss_of_batch(model, batch_to_torch(b, device))) * c; n += c
    model.train()
    return tot / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny", choices=["tiny", "small", "medium", "large"])
    dflt = TrainConfig()  # mint train's defaults, from the one place that defines them
    ap.add_argument("--steps", type=int, default=dflt.steps, help=f"steps of the lr schedule (default {dflt.steps}, as mint train)")
    ap.add_argument("--batch-size", type=int, default=dflt.batch_size)
    ap.add_argument("--seq-len", type=int, default=None, help="default: the preset's max_seq_len")
    ap.add_argument("--lr", type=float, default=dflt.base_lr)
    ap.add_argument("--warmup", type=int, default=None, help="default steps/10 (mint.optim.warmup_steps)")
    ap.add_argument("--clip", type=float, default=50.0)
    ap.add_argument("--eval-every", type=int, default=dflt.eval_every)
    ap.add_argument("--eval-batches", type=int, default=16, help="batches per periodic validation (the final one uses all)")
    ap.add_argument("--time-limit", type=float, default=0.0, help="minutes (default none, as mint train; 0 = none)")
    ap.add_argument("--max", type=int, default=None, dest="max_lines", help="use at most N lines of the corpus")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--tf32", action="store_true", help="on CUDA: allow TF32 matmuls (default off: float32 like Mint)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-record", action="store_true", help="append nothing to bench/results/")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available(): raise SystemExit("--device cuda: PyTorch sees no CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = args.tf32
    t_start = time.perf_counter()

    texts = D.load_peoples_daily(max_lines=args.max_lines)
    train_s, val_s = D.split_tail(texts, 0.05)
    vocab = Vocab.build(train_s)
    cfg = preset(args.preset, len(vocab))
    T = args.seq_len or cfg.max_seq_len
    seed_everything(args.seed); torch.manual_seed(args.seed)
    tr, va = D.encode_corpus(train_s, vocab), D.encode_corpus(val_s, vocab)
    batches = D.lm_batches(tr, args.batch_size, T, np.random.default_rng(args.seed))
    val = list(D.lm_eval_batches(va, args.batch_size, T))
    model = load_flat(MintTorch(cfg, "sdpa"), init_params(cfg, args.seed), cfg).to(args.device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    warm = args.warmup if args.warmup is not None else warmup_steps(args.steps)
    print(f"data: {len(train_s):,} train / {len(val_s):,} validation lines; {tr.size:,} / {va.size:,} tokens; vocab {len(vocab):,}")
    print(f"model: {n_params(cfg):,} parameters {cfg}; PyTorch {torch.__version__} on {args.device}"
          f" ({torch.get_num_threads()} CPU threads)")

    hist = dict(step=[], loss=[], val_step=[], val_loss=[])
    best, stopped, step, tokens = math.inf, "done", 0, 0
    limit = args.time_limit * 60 if args.time_limit else None
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        b = next(batches)
        lr = lr_at(step - 1, args.steps, args.lr, warm)
        for g in opt.param_groups: g["lr"] = lr
        loss = loss_of_batch(model, batch_to_torch(b, args.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        loss = loss.item()
        if not math.isfinite(loss): stopped = f"non-finite loss at step {step}"; break
        tokens += b.loss_mask.size
        hist["step"].append(step); hist["loss"].append(loss)
        if step % args.eval_every == 0 and step < args.steps:
            v = evaluate(model, val, args.device, args.eval_batches)
            hist["val_step"].append(step); hist["val_loss"].append(v); best = min(best, v)
            print(f"step {step:5d}  loss {loss:.3f}  val {v:.3f}  lr {lr:.1e}  {tokens / (time.perf_counter() - t0):,.0f} tok/s", flush=True)
        if limit and time.perf_counter() - t0 > limit:
            stopped = f"time limit ({limit:.0f} s) reached at step {step}"; break
    secs = time.perf_counter() - t0
    final = evaluate(model, val, args.device)
    hist["val_step"].append(step); hist["val_loss"].append(final); best = min(best, final)
    rep = dict(stopped=stopped, steps=step, val_loss=best, last_val_loss=final, perplexity=math.exp(best),
               tokens_per_s=tokens / secs, train_seconds=secs, total_seconds=time.perf_counter() - t_start,
               unigram_entropy=D.unigram_entropy(va), n_params=n_params(cfg), vocab_size=len(vocab))
    print(f"{stopped}: {step} steps in {secs:.0f} s ({rep['tokens_per_s']:,.0f} tokens/s, PyTorch on {args.device})")
    print(f"validation loss {best:.3f} nats/char (perplexity {rep['perplexity']:.1f}); final {final:.3f}; "
          f"unigram entropy of the same text {rep['unigram_entropy']:.3f} nats/char")
    if not args.no_record:
        path = benchlib.record("peoples_daily_torch", dict(bench="peoples_daily_torch", device=args.device,
                               host=benchlib.host_info(args.device), args=vars(args), config=cfg.to_dict(),
                               batch_size=args.batch_size, seq_len=T, report=rep, history=hist))
        print(f"recorded in {path.relative_to(benchlib.ROOT)}")
    return rep


if __name__ == "__main__":
    main()
