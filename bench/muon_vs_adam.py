"""Muon against AdamW on People's Daily at equal batch, schedule and data: how many steps Muon needs to reach AdamW's
final validation loss (issue 19's target: <= 0.7x).

    nice -n 10 python bench/muon_vs_adam.py                      # tiny, CPU: 400 steps of batch 16
    python bench/muon_vs_adam.py --device cuda --preset medium --steps 2000 --batch-size 64

Both runs are `mint.train.train` (or `train_gpu`) with the same `TrainConfig` but `optimizer`, the same initial
weights, the same batches in the same order (`lm_batches` seeded alike) and the same validation batches (the first
`--eval-batches` of `lm_eval_batches` at every validation, so the curves are comparable point by point). Appends one
record to bench/results/muon_vs_adam.jsonl and prints a table.
"""
from __future__ import annotations
import argparse, math, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from mint import data as D  # noqa: E402
from mint.core import preset  # noqa: E402
from mint.model import init_params  # noqa: E402
from mint.train import TrainConfig, train  # noqa: E402
from mint.vocab import Vocab  # noqa: E402


def steps_to(hist: dict, target: float) -> int | None:
    "The first validation step whose loss is <= target (None if never)."
    return next((s for s, v in zip(hist["val_step"], hist["val_loss"]) if v <= target), None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--eval-batches", type=int, default=16)
    ap.add_argument("--max-lines", type=int, default=None, help="use the first N lines of the corpus (default all)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    tr_txt, va_txt = D.split_tail(D.load_peoples_daily(max_lines=a.max_lines), 0.05)
    voc = Vocab.build(tr_txt)
    cfg = preset(a.preset, len(voc))
    tr, va = D.encode_corpus(tr_txt, voc), D.encode_corpus(va_txt, voc)
    T = cfg.max_seq_len
    val = list(D.lm_eval_batches(va, a.batch_size, T))[:a.eval_batches]
    runs = {}
    for opt in ("adam", "muon"):
        tc = TrainConfig(steps=a.steps, batch_size=a.batch_size, lr=a.lr, eval_every=a.eval_every,
                         eval_batches=a.eval_batches, seed=a.seed, optimizer=opt)
        params = init_params(cfg, seed=a.seed)
        batches = D.lm_batches(tr, a.batch_size, T, np.random.default_rng(a.seed))
        t0 = time.perf_counter()
        if a.device == "cuda":
            from mint.gpu_train import train_gpu
            res = train_gpu(params, cfg, tc, batches, val, voc, None, progress=False)
        else:
            res = train(params, cfg, tc, batches, val, voc, None, progress=False)
        runs[opt] = dict(final_val=res.last_val, best_val=res.best_val, seconds=time.perf_counter() - t0,
                         tokens_per_s=res.tokens_per_s, val_step=res.history["val_step"], val_loss=res.history["val_loss"])
        print(f"{opt}: final val {res.last_val:.4f} nats/char in {runs[opt]['seconds']:.0f} s", file=sys.stderr)
    target = runs["adam"]["final_val"]
    reach = steps_to(runs["muon"], target)
    rec = dict(benchmark="muon_vs_adam", preset=a.preset, device=a.device, steps=a.steps, batch_size=a.batch_size,
               lr=a.lr, eval_every=a.eval_every, eval_batches=a.eval_batches, seq_len=T, vocab_size=len(voc),
               corpus_lines=a.max_lines or "all", adam_final_val=target, muon_final_val=runs["muon"]["final_val"],
               muon_steps_to_adam_final=reach, ratio=None if reach is None else reach / a.steps,
               host=benchlib.host_info(a.device), runs=runs)
    path = benchlib.record("muon_vs_adam", rec)
    print(benchlib.table([dict(opt=k, final=v["final_val"], s=v["seconds"], tok=v["tokens_per_s"]) for k, v in runs.items()],
                         [("opt", "optimizer", "s"), ("final", "final val (nats/char)", ".4f"), ("s", "seconds", ".0f"),
                          ("tok", "tokens/s", ",.0f")]))
    print(f"Muon reaches AdamW's final {target:.4f} at step {reach} of {a.steps}"
          + ("" if reach is None else f" ({reach / a.steps:.2f}x)") + f"; recorded in {path.relative_to(benchlib.ROOT) if hasattr(benchlib, 'ROOT') else path}")


if __name__ == "__main__":
    main()
