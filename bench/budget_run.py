"""Mint against its PyTorch peer under one time budget: the same data, tokenizer, model, batch and budget; each side
measures its own step speed and fits its whole schedule (warmup + cosine, periodic and final validation) inside the
budget; the headline is each side's best validation (bits per UTF-8 byte) on the whole validation text, as Mint keeps its
best checkpoint; the final weights' validation is shown beside it.

    nice -n 10 python bench/budget_run.py --budget 10m                  # 2-core CPU, tiny, People's Daily
    H200="--budget 5m --device cuda --preset medium --batch-size 64 --gemm cublas-tf32 --peer-compile"   # each side's fastest
    python bench/budget_run.py $H200 --side mint      # one device call
    python bench/budget_run.py $H200 --side torch     # another
    python bench/budget_run.py $H200 --pair           # the table of both

`--side mint|torch` runs one side and appends a record with that one row (a 5-minute budget per side and the start-up
fit one 10-minute device call, both sides do not); `--pair` trains nothing and prints the table of the latest Mint and
PyTorch rows recorded with the same settings (each row names its host and date: two calls may get two machines).

Mint runs `mint.pipeline.train_corpus(..., budget=...)` (what `mint train --budget` runs). The peer is
bench/torch_model.py's `MintTorch` (same initial weights by name, Adam β 0.9/0.999, clip 50, `mint.optim.lr_at`),
timed the same way (`mint.budget.fit_budget`-style: a few steps at lr 0 with a throwaway optimizer, then `mint.budget.plan_steps`),
and re-planned the same way, once, from its own pace at the warmup's end or a fifth of the budget (`mint.budget.replan_steps`,
the warmup kept). Both
bits/byte come from `mint.pipeline.bits_summary` on the same validation text. Appends a record to
bench/results/budget_run.jsonl and prints a table.
"""
from __future__ import annotations
import argparse, itertools, json, math, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from mint import data as D  # noqa: E402
from mint.budget import parse_budget, plan_steps, replan_steps  # noqa: E402
from mint.core import preset, seed_everything, temp_dir  # noqa: E402
from mint.pipeline import bits_summary, load_samples  # noqa: E402
from mint.model import init_params  # noqa: E402
from mint.optim import lr_at, warmup_steps  # noqa: E402
from mint.pipeline import train_corpus  # noqa: E402
from mint.tokenizer import build_tokenizer, encode_corpus  # noqa: E402
from mint.train import TrainConfig  # noqa: E402


def torch_run(a, budget_s: float) -> dict:
    "The peer: measure, plan, train, validate; returns its numbers (bits from the same validation text as Mint's)."
    import torch
    from torch_model import MintTorch, load_flat, batch_to_torch, loss_of_batch
    from torch_train_peoples_daily import evaluate
    t_start = time.perf_counter()
    kind, samples, _, _ = load_samples(a.data, max_samples=a.max_lines)          # what Mint's train_corpus reads
    if kind != "lm": raise SystemExit(f"--data {a.data}: a {kind} corpus; the budget race is for plain text (language modelling)")
    train_s, val_s = D.split_tail(samples, 0.05)
    vocab = build_tokenizer(a.tokenizer, train_s, a.vocab_size)
    cfg = preset(a.preset, len(vocab))
    T, B = cfg.max_seq_len, a.batch_size
    seed_everything(a.seed); torch.manual_seed(a.seed)
    tr, va = encode_corpus(train_s, vocab), encode_corpus(val_s, vocab)
    val = list(D.lm_eval_batches(va, B, T))
    model = load_flat(MintTorch(cfg, "sdpa"), init_params(cfg, a.seed), cfg).to(a.device)
    cuda = a.device == "cuda"
    if cuda and a.gemm in ("cublas-tf32", "tf32"):     # like with like: the peer's matmuls in TF32 when Mint's are
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    if a.peer_compile: model = torch.compile(model)   # compiled once; its compile time counts against the budget

    def make_opt(m): return torch.optim.Adam(m.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, fused=cuda)
    def step(m, opt, b, lr):
        for g in opt.param_groups: g["lr"] = lr
        loss = loss_of_batch(m, batch_to_torch(b, a.device))
        opt.zero_grad(set_to_none=True); loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 50.0); opt.step()
        return loss.item()
    t0 = time.perf_counter()                       # measuring counts against the budget, as in mint.budget
    # the probe trains the model itself at lr 0 with a throwaway optimizer (Adam at lr 0 leaves every weight as it is;
    # the moments go with the optimizer), so a compiled model compiles once, here, inside the budget
    popt = make_opt(model)
    sample = D.lm_batches(tr, B, T, np.random.default_rng(a.seed + 1))
    for b in itertools.islice(sample, 3): step(model, popt, b, 0.0)
    t1, n = time.perf_counter(), 0
    for b in sample:                               # as mint.budget.fit_budget: >= 8 steps and 5% of the budget (<= 30 s)
        step(model, popt, b, 0.0); n += 1
        if n >= 8 and time.perf_counter() - t1 >= min(0.05 * budget_s, 30.0): break
    step_s = (time.perf_counter() - t1) / n
    evaluate(model, val, a.device, 1)              # the first validation batch compiles (eval mode), not timed
    t2 = time.perf_counter(); evaluate(model, val, a.device, 2); val_batch_s = (time.perf_counter() - t2) / 2
    del popt
    eval_batches = min(16, len(val))
    left = budget_s - (time.perf_counter() - t0)
    S = plan_steps(left, step_s, val_batch_s, 10**9, eval_batches, len(val))
    if S < 1:
        raise SystemExit(f"the peer's budget of {budget_s:.0f} s was spent before its first step ({time.perf_counter() - t0:.0f} s measuring"
                         f"{', compile included' if a.peer_compile else ''}; a step {step_s:.3f} s, a validation batch {val_batch_s:.3f} s): "
                         f"give a larger --budget{' or leave out --peer-compile' if a.peer_compile else ''}")
    every = max(S // 20, 1)                        # about twenty validations, as mint.budget.fit_budget
    S = plan_steps(left, step_s, val_batch_s, every, eval_batches, len(val))
    opt, warm, first = make_opt(model), warmup_steps(S), S
    batches = D.lm_batches(tr, B, T, np.random.default_rng(a.seed))
    s, val_t, mark, replan, reason = 0, 0.0, None, None, "done"   # as mint.budget.Replan: the pace from step 5, validations left out
    trail = []                                     # (step, training loss) about 40 times, and (step, None, val) per validation
    while s < S:
        loss = step(model, opt, next(batches), lr_at(s, S, a.lr, warm)); s += 1
        if s % max(S // 40, 1) == 0: trail.append((s, round(loss, 4)))
        if s % every == 0 and s < S:
            tv = time.perf_counter(); v = evaluate(model, val, a.device, eval_batches); val_t += time.perf_counter() - tv
            trail.append((s, None, round(v, 4)))
            if replan: val_batch_s = (time.perf_counter() - tv) / eval_batches   # as Mint's time limit: the last validation's cost
        now = time.perf_counter()
        if s == 5: mark = (s, now - val_t)
        if replan is None and mark and s - mark[0] >= 10 and (now - t0 >= 0.2 * budget_s or s >= warm):
            pace = (now - val_t - mark[1]) / (s - mark[0])
            S = max(replan_steps(s, budget_s - (now - t0), pace, val_batch_s, every, eval_batches, len(val)), s)
            replan = dict(step=s, at_s=now - t0, step_s=pace, steps=S)
        if now - t0 > budget_s - len(val) * val_batch_s - (replan or {}).get("step_s", step_s):   # the safety net Mint's time limit is
            S, reason = s, "time_limit"; break
    final = evaluate(model, val, a.device)            # the final weights on the whole validation text
    secs = time.perf_counter() - t0
    # the headline is the best whole-set validation, as Mint's best checkpoint (chapter 36's `outranks`): the periodic
    # validations count when they cover the whole set (eval_batches = all of it), and the final one always
    vals = [(t[0], t[2]) for t in trail if len(t) == 3] if eval_batches == len(val) else []
    best_step, best = min(vals + [(S, final)], key=lambda x: x[1])
    return dict(side="PyTorch", first_plan=first, replan=replan, reason=reason, steps=S, step_s=step_s, seconds=secs, total_seconds=time.perf_counter() - t_start,
                val_loss=best, best_step=best_step, last_val_loss=final, **bits_summary(best, va, val_s), trail=trail)


def mint_run(a, budget_s: float) -> dict:
    from mint.gemm import gemm_provider
    t0 = time.perf_counter()
    out = temp_dir() / "run"
    with gemm_provider(a.gemm): rep = train_corpus(a.data, a.preset, TrainConfig(batch_size=a.batch_size, lr=a.lr, seed=a.seed),
                       out, max_samples=a.max_lines, device=a.device, progress=False,
                       log=lambda *x, **k: None, tokenizer=a.tokenizer, vocab_size=a.vocab_size, budget=budget_s)
    b = rep["budget"]
    hist = json.loads((out / "history.json").read_text(encoding="utf-8"))
    trail = [(s, None, round(v, 4)) for s, v in zip(hist["val_step"], hist["val_loss"])]   # as the peer's: (step, None, val)
    replan = dict(step=b["replan_step"], at_s=b["replan_at_s"], step_s=b["replan_step_s"], steps=b["replanned_steps"]) if b["replanned_steps"] else None
    # Like with like: the peer scores its final weights on the whole validation set. A budget run's periodic validations
    # use a 16-batch subset; the loop compares only validations of the same batches and the whole set outranks a subset
    # (`mint.train.outranks`), so the run's best, and its `bits`, are its final whole-set validation. Records before
    # 2026-12-03 hold the best subset's bits (their val_loss is the final whole-set one).
    if rep["best_batches"] != rep["val_batches"]:
        raise SystemExit(f"Mint's best validation is on {rep['best_batches']} of the {rep['val_batches']} batches ({rep['stopped']}): not comparable")
    return dict(side="Mint", first_plan=b["steps"], replan=replan, reason=rep["reason"], steps=rep["steps"], step_s=b["step_s"], seconds=b["used_s"],
                total_seconds=time.perf_counter() - t0, val_loss=rep["val_loss"], best_batches=rep["best_batches"],
                best_step=rep["best_step"], last_val_loss=rep["last_val_loss"], **rep["bits"], trail=trail)


def settings(a) -> dict:
    "The arguments that make two records comparable (all but --side and --pair), as recorded."
    return {k: v for k, v in vars(a).items() if k not in ("side", "pair")}


def whole_set(row: dict) -> dict:
    "A Mint row as scored on the whole validation text. Rows recorded before 2026-12-03 (no `best_batches`) hold the bits of the best 16-batch subset validation while their `val_loss` is the final whole-set one; their units are rescaled to `val_loss` (each unit is nats/token times a factor of the whole text: `mint.pipeline.units`). Later rows are returned as they are."
    if row.get("side") != "Mint" or "best_batches" in row or not row.get("nats_per_token"): return row
    k = row["val_loss"] / row["nats_per_token"]
    return {**row, **{u: row[u] * k for u in ("nats_per_token", "bits_per_char", "bits_per_byte")}, "rescaled": True}


def latest_pair(a) -> list[dict]:
    "The latest recorded Mint row and the latest PyTorch row whose record has these settings, each with its record's date and host."
    found = {}
    path = benchlib.RESULTS / "budget_run.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        args = {"gemm": "mint", "peer_compile": False, "data": "peoples_daily", **rec["args"]}      # records from before these options
        if {k: v for k, v in args.items() if k not in ("side", "pair")} != settings(a): continue
        for r in map(whole_set, rec["rows"]):
            found[r["side"]] = {**r, "side": f"{r['side']} ({rec['date'][:16]}, {rec['host'].get('device', '?')}){' *' if r.get('rescaled') else ''}"}
    missing = [s for s in ("Mint", "PyTorch") if s not in found]
    if missing: raise SystemExit(f"{path}: no {' or '.join(missing)} row recorded with {settings(a)}")
    return [found["Mint"], best_of_trail(found["PyTorch"], found["Mint"].get("best_batches"))]


def best_of_trail(row: dict, n_val: int | None) -> dict:
    "A PyTorch row recorded on 2026-12-03 before the peer kept its best validation (its `val_loss` is the final weights'): scored, as Mint's best checkpoint is, by the best whole-set validation of its trail, when its periodic validations covered the whole set (`n_val`, the Mint row's validation batches, ≤ 16 = the peer's eval_batches). Units rescale with nats/token. Other rows are returned as they are."
    vals = [(t[0], t[2]) for t in row.get("trail", []) if len(t) == 3]
    if "best_step" in row or not vals or not n_val or n_val > 16: return row
    best_step, best = min(vals + [(row["steps"], row["val_loss"])], key=lambda x: x[1])
    k = best / row["nats_per_token"]
    return {**row, **{u: row[u] * k for u in ("nats_per_token", "bits_per_char", "bits_per_byte")}, "val_loss": best,
            "best_step": best_step, "last_val_loss": row["val_loss"], "side": row["side"] + " †"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", default="10m")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--tokenizer", default="char", choices=["char", "bpe"])
    ap.add_argument("--vocab-size", type=int, default=None)
    ap.add_argument("--data", default="peoples_daily", help="the corpus, as `mint train --data` takes it (default peoples_daily); "
                    "plain text only; bench/poetry_corpus.py builds a 30M-character one that five minutes on an H200 do not exhaust")
    ap.add_argument("--max", type=int, default=None, dest="max_lines", help="first N lines of the corpus (default all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gemm", default="mint", choices=["mint", "cublas", "cublas-tf32", "cublas-bf16", "tc"],
                    help="Mint's GPU matrix products (mint train --gemm); with cublas-tf32 the peer's matmuls are TF32 too")
    ap.add_argument("--peer-compile", action="store_true", help="torch.compile the peer (its compile time counts against the budget)")
    ap.add_argument("--side", default="both", choices=["both", "mint", "torch"], help="run one side only (one record with its row)")
    ap.add_argument("--pair", action="store_true", help="train nothing: print the latest Mint and PyTorch rows recorded with these settings")
    a = ap.parse_args(argv)
    budget_s = parse_budget(a.budget)
    if a.pair: rows = latest_pair(a)
    else:
        rows = ([mint_run(a, budget_s)] if a.side in ("both", "mint") else []) + ([torch_run(a, budget_s)] if a.side in ("both", "torch") else [])
        path = benchlib.record("budget_run", dict(bench="budget_run", budget_s=budget_s, args=settings(a),
                                                  host=benchlib.host_info(a.device), rows=rows))
    for r in rows: r["replan_step_s"] = r["replan"]["step_s"] if r["replan"] else float("nan")
    print(benchlib.table(rows, [("side", "side", ""), ("first_plan", "planned", ","), ("steps", "steps", ","), ("reason", "ended", ""),
                                ("step_s", "s/step measured", ".3f"), ("replan_step_s", "s/step in the run", ".3f"),
                                ("seconds", "budget used (s)", ".0f"), ("best_step", "best at step", ","),
                                ("last_val_loss", "final weights' val", ".4f"), ("val_loss", "best val (nats/token)", ".4f"),
                                ("bits_per_byte", "bits/byte", ".4f"), ("unigram_bits_per_byte", "unigram", ".4f"),
                                ("lzma_bits_per_byte", "lzma -9e", ".4f")]))
    if any(r.get("rescaled") for r in rows):
        print("* recorded before 2026-12-03 with the bits of its best 16-batch validation: shown here on the whole text (its val_loss)")
    if any(r["side"].endswith("†") for r in rows):
        print("† recorded before the peer kept its best validation: scored here by the best whole-set validation of its trail, as Mint's best checkpoint")
    if not a.pair: print(f"recorded in {path.relative_to(benchlib.ROOT)}")


if __name__ == "__main__":
    main()
