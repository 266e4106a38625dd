"""Start-up cost, cold and warm (issue 18, item 3 "compile once"): seconds from process start to the end of the first
training step of a 1-step `mint train` run, and to the first token of generation (what `mint generate` does), each in a
fresh Python process, once with an empty numba cache (cold) and once more with the cache the cold run left (warm).

    python bench/bench_startup.py                    # CPU (the NumPy + numba.njit path), 3 rounds, medians
    python bench/bench_startup.py --device cuda --preset medium --rounds 1
                                                     # a GPU (about a minute a round on an H200): numba.cuda kernels
                                                     # cached with cache=True; factory-made ones (GEMM tiles, flash
                                                     # attention) compile in every process

Each round gets its own empty cache folder (NUMBA_CACHE_DIR, so the package's own cache is neither used nor touched),
runs train cold, train warm, generate cold, generate warm, and the table shows the median of the rounds: the host may be
shared with other work (its load average is recorded), and the medians of several rounds are what to compare. Besides
wall-clock seconds, the child's CPU seconds (user + system, its own threads) at the same moment are shown: they are
less disturbed by other processes on a busy host. The training corpus is the first --lines lines of People's Daily
written to a plain-text file, so reading the corpus does not hide the compile cost (the default corpus takes seconds
to parse on every run, warm or cold); the run is otherwise `mint train --steps 1`'s (the same `train_corpus` call), and
"process s" is the child's whole life, validation and report included. Results append to bench/results/startup_<device>.jsonl.
"""
from __future__ import annotations
import argparse, json, os, resource, statistics, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _compiles() -> tuple[int, int, list]:
    "(loaded from the disk cache, compiled, names of the compiled) over every numba dispatcher of mint alive: the module-level ones and those factories made (GEMM tiles, flash attention: closures, found through the garbage collector)."
    import gc
    hits = misses = 0
    names = []
    for f in gc.get_objects():
        try:
            if not (hasattr(f, "_cache_misses") and hasattr(f, "_cache_hits")): continue
        except Exception: continue                       # lazy modules (six.moves) import on any attribute lookup
        mod = getattr(getattr(f, "py_func", None), "__module__", "") or ""
        if not mod.startswith("mint."): continue
        h, m = sum(f._cache_hits.values()), sum(f._cache_misses.values())
        hits += h; misses += m
        if m: names.append(f"{mod}.{f.py_func.__qualname__}")
    return hits, misses, sorted(names)


def _mark(what: str, t0: float):
    "Print one result line: seconds since the parent started the child, its CPU seconds, numba's cache loads and compiles (and what compiled)."
    wall, cpu = time.time() - t0, _cpu_s()
    hits, misses, names = _compiles()
    print("STARTUP " + json.dumps({"what": what, "wall_s": wall, "cpu_s": cpu, "loaded": hits, "compiled": misses,
                                   "compiled_names": names}), flush=True)


def child_train(a):
    "A 1-step `mint train` run (the same pipeline call as the CLI's), timing the end of its first step."
    t0 = float(os.environ["MINT_BENCH_T0"])
    from mint.pipeline import train_corpus
    from mint.train import TrainConfig
    _mark("imported", t0)
    if a.device == "cuda":
        from numba import cuda
        cuda.current_context()                              # what the run does first on the GPU, timed on its own
        _mark("context", t0)

    class FirstStep:
        def after_step(self, step, hist):
            if step == 1: _mark("first_step", t0)

    rep = train_corpus(a.data, a.preset, TrainConfig(steps=1, batch_size=a.batch_size, eval_batches=2), a.out,
                       device=a.device, progress=False, overwrite=True, callbacks=[FirstStep()], log=lambda *x, **k: None)
    _mark("run_end", t0)
    return rep["exit_code"]


def child_generate(a):
    "What `mint generate --prompt P --max-new-tokens 1` does (load, decoder, prefill, sample), timing the first token."
    t0 = float(os.environ["MINT_BENCH_T0"])
    import numpy as np
    from mint.checkpoint import load_checkpoint
    from mint.generate import Decoder, stream, check_prompt
    from mint.vocab import EOS
    _mark("imported", t0)
    ck = load_checkpoint(a.ckpt)
    ids = [EOS, *check_prompt(ck.vocab, a.prompt).tolist()]
    dec = Decoder(ck.params, ck.config, device=a.device)
    for _ in stream(dec, ids, 1, 0.7, 50, 0.9, np.random.default_rng(0)):
        _mark("first_token", t0)
    return 0


def run_child(args: list[str], cache_dir: Path, env_extra: dict) -> dict:
    "Run this script as a child with NUMBA_CACHE_DIR=cache_dir; return its STARTUP marks and total wall seconds."
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), **env_extra}
    t0 = time.time()
    env["MINT_BENCH_T0"] = repr(t0)
    p = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True)
    total = time.time() - t0
    if p.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    marks = {m["what"]: m for m in (json.loads(l[8:]) for l in p.stdout.splitlines() if l.startswith("STARTUP "))}
    return {"total_s": total, **{f"{k}_{q}": v[q] for k, v in marks.items() for q in ("wall_s", "cpu_s", "loaded", "compiled", "compiled_names")},
            "cache_files": sum(1 for _ in cache_dir.rglob("*.nbi"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--rounds", type=int, default=3, help="cold+warm rounds; the table shows medians (default 3)")
    ap.add_argument("--lines", type=int, default=2000, help="lines of People's Daily in the training file (default 2000)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--no-record", action="store_true")
    # child modes (this script runs itself)
    ap.add_argument("--child", choices=["train", "generate"], help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--ckpt", help=argparse.SUPPRESS)
    ap.add_argument("--prompt", default="中国", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child == "train": return child_train(a)
    if a.child == "generate": return child_generate(a)

    from mint.data import load_peoples_daily
    env_extra = {"NUMBA_ENABLE_CUDASIM": "0"} if a.device == "cuda" else {}
    rows, rounds = [], []
    with tempfile.TemporaryDirectory(prefix="mint_startup_") as tmp:
        tmp = Path(tmp)
        data = tmp / "corpus.txt"
        data.write_text("\n".join(load_peoples_daily(max_lines=a.lines)) + "\n", encoding="utf-8")
        train = ["--child", "train", "--data", str(data), "--preset", a.preset, "--device", a.device,
                 "--batch-size", str(a.batch_size)]
        for r in range(a.rounds):
            cache = tmp / f"cache{r}"; cache.mkdir()
            out = tmp / f"run{r}"
            res = {}
            for kind in ("cold", "warm"):
                res[f"train_{kind}"] = run_child([*train, "--out", str(out)], cache, env_extra)
            gcache = tmp / f"gcache{r}"; gcache.mkdir()
            gen = ["--child", "generate", "--ckpt", str(out / "best.safetensors"), "--device", a.device]
            for kind in ("cold", "warm"):
                res[f"generate_{kind}"] = run_child(gen, gcache, env_extra)
            rounds.append(res)
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(
                f"{k} {v.get('first_step_wall_s', v.get('first_token_wall_s')):.1f} s" for k, v in res.items()), flush=True)

    def med(key, q):
        vals = [x[key].get(q) for x in rounds if x[key].get(q) is not None]
        return statistics.median(vals) if vals else None

    for what, mark in (("train", "first_step"), ("generate", "first_token")):
        c, w = med(f"{what}_cold", f"{mark}_wall_s"), med(f"{what}_warm", f"{mark}_wall_s")
        cc, wc = med(f"{what}_cold", f"{mark}_cpu_s"), med(f"{what}_warm", f"{mark}_cpu_s")
        rows.append(dict(what=f"{'mint train --steps 1: first step' if what == 'train' else 'generate: first token'}",
                         cold=c, warm=w, ratio=c / w, cold_cpu=cc, warm_cpu=wc, ratio_cpu=cc / wc,
                         cold_total=med(f"{what}_cold", "total_s"), warm_total=med(f"{what}_warm", "total_s"),
                         files=med(f"{what}_cold", "cache_files"), compiled_cold=med(f"{what}_cold", f"{mark}_compiled"),
                         compiled_warm=med(f"{what}_warm", f"{mark}_compiled")))
    cols = [("what", "time to", ""), ("cold", "cold s", ".2f"), ("warm", "warm s", ".2f"), ("ratio", "cold ÷ warm", ".2f"),
            ("cold_cpu", "cold CPU s", ".2f"), ("warm_cpu", "warm CPU s", ".2f"), ("ratio_cpu", "cold ÷ warm (CPU s)", ".2f"),
            ("cold_total", "cold process s", ".1f"), ("warm_total", "warm process s", ".1f"),
            ("files", "cache indexes", ".0f"), ("compiled_cold", "compiled cold", ".0f"),
            ("compiled_warm", "compiled warm", ".0f")]
    info = benchlib.host_info(a.device)
    if not a.no_record:
        path = benchlib.record(f"startup_{a.device}", dict(host=info, preset=a.preset, lines=a.lines, batch_size=a.batch_size,
                                                            rounds=rounds, medians=rows))
        print(f"recorded: {path}")
    print(f"\n{info['device']}, load average {info.get('loadavg_1_5_15')}, median of {a.rounds} rounds, preset {a.preset}\n")
    print(benchlib.table(rows, cols))
    last = rounds[-1]
    for what, mark in (("train", "first_step"), ("generate", "first_token")):
        for kind in ("cold", "warm"):
            r = last[f"{what}_{kind}"]
            phases = ", ".join(f"{m} {r[m + '_wall_s']:.2f} s" for m in ("imported", "context", mark) if f"{m}_wall_s" in r)
            print(f"{what} {kind} (last round): {phases}; compiled {len(r.get(mark + '_compiled_names') or [])}: "
                  f"{', '.join(r.get(mark + '_compiled_names') or []) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
