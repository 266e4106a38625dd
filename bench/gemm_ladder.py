"""The GEMM ladder of chapters 20 and 24 on a GPU: every rung of `mint.gemm_ladder` (v1-v5, with a sweep of v5's tile shapes
and split-K factors), the tensor-core rungs v6 and v7 of `mint.tensor_cores` (bf16, with v7's tile shapes), cuBLAS
FP32, TF32 and bf16 through PyTorch and through Mint's ctypes provider (`mint.cublas`), at 1024³-4096³ and at the
GEMMs of the d512 and d768 models. Every result is checked against float64 before it is timed.

Prints a Markdown table last and writes every measurement as JSON (date, device, versions) to
$OUT/gemm_ladder_<device>_<date>.json when $OUT is set, else to bench/results/.

    python bench/gemm_ladder.py                   # checks, the ladder, the sweep (about 5 minutes on an H200)
    python bench/gemm_ladder.py --no-sweep        # checks and the ladder only
    python bench/gemm_ladder.py --budget 300      # stop starting new measurements after 300 s
    python bench/gemm_ladder.py --tc-only         # the tensor-core part only: cuBLAS bf16, v6, v7 (about 1 minute)
"""
from __future__ import annotations
import argparse, datetime, functools, json, os, sys, time, traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib                                  # noqa: E402  (puts the repository root on sys.path)
import numpy as np                               # noqa: E402
if not hasattr(np, "row_stack"): np.row_stack = np.vstack   # numba-cuda 0.30.4 calls it; numpy >= 2.5 dropped it
from numba import cuda, config as nb_config      # noqa: E402
nb_config.CUDA_LOW_OCCUPANCY_WARNINGS = False    # the odd-shape checks launch small grids on purpose
from mint import gemm as G                       # noqa: E402  (training's GEMM: v5, its tiles, the providers)
from mint import gemm_ladder as GL               # noqa: E402  (the rungs v1-v5 and their checks)
from mint.kernels import time_device             # noqa: E402
from mint import tensor_cores as TC              # noqa: E402
from mint.cublas import load_cublas, cublas_gemm  # noqa: E402
from mint.core import cdiv, rel_error            # noqa: E402
import ml_dtypes                                 # noqa: E402

SQUARES = [(f"{s}³", s, s, s, False, False) for s in (1024, 2048, 4096)]
T8X8 = G.GemmConfig(128, 128, 16, 8, 8, vec=4, unroll=4)            # 256 threads, 227 registers: 8 warps per SM
SWEEP_4096 = [   # v5 variants timed at 4096³, most promising first (the budget may cut the tail)
    G.V5_TILES[0],                                                     # 128x128x16/8x4: 512 threads, <= 128 registers
    T8X8,
    G.GemmConfig(128, 128, 8, 8, 8, vec=4, unroll=4),
    G.GemmConfig(128, 128, 8, 8, 4, vec=4, unroll=4, min_blocks=1),
    G.GemmConfig(128, 128, 8, 8, 8, vec=4, unroll=4, min_blocks=2),    # registers capped at 128: 2 blocks/SM
    G.GemmConfig(128, 128, 16, 8, 8, vec=4, unroll=4, min_blocks=2),
    G.GemmConfig(128, 128, 16, 8, 8, vec=4, unroll=2),
    G.GemmConfig(128, 128, 16, 8, 8, vec=1, unroll=4),                 # 32-bit shared reads, unrolled
    G.GemmConfig(64, 64, 16, 4, 4, vec=4, unroll=4),
    G.GemmConfig(128, 128, 16, 8, 8, vec=4, unroll=1),
    G.GemmConfig(128, 64, 16, 8, 4, vec=4, unroll=4),
    G.GemmConfig(64, 128, 16, 8, 8, vec=4, unroll=4),
    G.GemmConfig(64, 64, 32, 4, 4, vec=4, unroll=4),
]
SPLITS = (1, 2, 4, 8, 16)


class Run:
    "Measurements, failures and a time budget: `due()` is False once the budget is spent; each record is also appended to `log`."
    def __init__(self, budget: float, log: Path | None = None):
        self.t0, self.budget, self.records, self.failures, self.skipped, self.log = time.time(), budget, [], [], 0, log
    def due(self) -> bool:
        if time.time() - self.t0 < self.budget: return True
        self.skipped += 1
        return False
    def add(self, rec: dict) -> dict:
        rec["elapsed_s"] = round(time.time() - self.t0, 1)
        self.records.append(rec)
        if self.log:      # a run cut short by a time limit still leaves what it measured
            with open(self.log, "a") as f: f.write(json.dumps(rec, default=str) + "\n")
        return rec
    def fail(self, what: str, e: BaseException) -> None:
        msg = f"{what}: {type(e).__name__}: {e}"
        print("FAILED", msg, flush=True)
        self.failures.append({"what": what, "error": msg, "trace": traceback.format_exc()[-2000:]})


def torch_gemm_bench(M, N, K, ta, tb, tf32: bool) -> dict:
    "cuBLAS through torch.matmul on the same device memory (zero copy), TF32 off or on; checked and timed like gemm_bench."
    import torch
    a, b, _, ref = GL.bench_problem(M, N, K, ta, tb, False, 0)
    out = cuda.to_device(np.full((M, N), np.nan, np.float32))
    A, B, C = (torch.as_tensor(x, device="cuda") for x in (a, b, out))
    opA, opB = (A.T if ta else A), (B.T if tb else B)
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        run = lambda: torch.matmul(opA, opB, out=C)
        run(); torch.cuda.synchronize()
        err = rel_error(out.copy_to_host(), ref)
        t = time_device(run)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return dict(version="torch-tf32" if tf32 else "torch-fp32", config=None, split_k=1, M=M, N=N, K=K, trans_a=ta,
                trans_b=tb, bias=False, time=t, tflops=2 * M * N * K / t / 1e12, max_err=err)


def checks(run: Run, shape=(301, 257, 263), split_shape=(129, 67, 1000), have_cupy: bool = True) -> None:
    "Every rung (this device's tile shapes), split-K and both cuBLAS providers against NumPy at odd shapes, four transpose modes."
    cases = [(f"v{v} {shape}", lambda v=v: GL.check_version(v, *shape, tol=1e-4)) for v in (1, 2, 3, 4, 5)]
    cases += [(f"v5 split 7 {split_shape}", lambda: GL.check_version(5, *split_shape, split_k=7, tol=1e-4))]
    for prov, tol in (("cublas", 1e-4), ("cublas-tf32", 5e-3), ("cublas-bf16", 1e-2), ("tc", 1e-2)) if have_cupy else ():
        def prov_check(prov=prov, tol=tol):
            with G.gemm_provider(prov):
                for n, (ta, tb) in enumerate(GL.TRANS_MODES):
                    a, b, bb, ref = GL.gemm_problem(*shape, ta, tb, bias=n % 2 == 0, seed=n)
                    got = G.launch_gemm(cuda.to_device(a), cuda.to_device(b), None,
                                        None if bb is None else cuda.to_device(bb), ta, tb).copy_to_host()
                    err = rel_error(got, ref)
                    assert err < tol, f"{prov} trans_a={ta} trans_b={tb}: {err:.2e}"
            print(f"{prov}: 4 transpose modes within {tol:.0e} of NumPy", flush=True)
        cases.append((f"provider {prov}", prov_check))
    if not G.simulator_enabled(): cases += tc_checks()
    for what, fn in cases:
        if not run.due(): return
        t = time.time()
        try:
            fn()
            run.add(dict(kind="check", what=what, ok=True, seconds=round(time.time() - t, 1)))
        except Exception as e:
            run.fail(what, e)
            run.add(dict(kind="check", what=what, ok=False))


def tc_checks() -> list:
    "v6 (bf16, TF32) and v7 (every tile) at odd shapes in four transpose modes with bias, against float64 of their operands."
    cases = []
    for s in ((301, 257, 263), (130, 72, 262), (64, 128, 4096)):
        for name, kw, tol in (("v6 bf16", dict(version=6), 1e-4), ("v6 tf32", dict(version=6, tf32=True), 5e-3),
                              *[(f"v7 {c}", dict(version=7, config=c), 1e-4) for c in TC.V7_TILES]):
            def case(s=s, kw=kw, tol=tol, name=name):
                worst = 0.0
                for n, (ta, tb) in enumerate(GL.TRANS_MODES):
                    r = TC.tc_check(M=s[0], N=s[1], K=s[2], trans_a=ta, trans_b=tb, seed=n, **kw)
                    assert r["nan"] == 0 and r["err"] < tol, f"{name} {s} trans_a={ta} trans_b={tb}: {r}"
                    worst = max(worst, r["err"])
                print(f"{name:36s} {s}: 4 transpose modes, worst relative error {worst:.1e}", flush=True)
            cases.append((f"{name} {s}", case))
    return cases


@functools.lru_cache(maxsize=1)
def tc_operands(M, N, K, ta, tb):
    "Random bf16 operands on the device (stored per the flags) and their float64 values on the host."
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((K, M) if ta else (M, K), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K) if tb else (K, N), dtype=np.float32).astype(ml_dtypes.bfloat16)
    return cuda.to_device(a.view(np.uint16)), cuda.to_device(b.view(np.uint16)), a, b


def tc_bench(version, M, N, K, ta, tb, config=None) -> dict:
    "cuBLAS bf16 ('cublas-bf16', 'torch-bf16') or a tensor-core rung (6, 7) on bf16 operands: checked on 64 sampled rows against float64, then timed."
    da, db, a, b = tc_operands(M, N, K, ta, tb)
    out = cuda.to_device(np.full((M, N), np.nan, np.float32))
    if version == "cublas-bf16": run = lambda: cublas_gemm(da, db, out, None, ta, tb, mode="bf16")
    elif version == "torch-bf16":
        import torch
        A, B = (torch.as_tensor(x, device="cuda").view(torch.bfloat16) for x in (da, db))
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        C = torch.as_tensor(out, device="cuda")
        run = lambda: C.copy_(torch.matmul(opA, opB))          # bf16 output as torch gives it, widened (a copy more)
    else: run = lambda: TC.tc_gemm(da, db, out, None, ta, tb, version, config)
    run(); cuda.synchronize()
    idx = np.random.default_rng(1).choice(M, min(64, M), replace=False)
    ref = (a.T if ta else a)[idx].astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    err = rel_error(out.copy_to_host()[idx], ref)
    t = time_device(run)
    return dict(version=version if isinstance(version, str) else f"v{version}", config=str(config) if config else None,
                split_k=1, M=M, N=N, K=K, trans_a=ta, trans_b=tb, bias=False, time=t, tflops=2 * M * N * K / t / 1e12,
                max_err=err)


def tc_ladder(run: Run, shapes, have_torch: bool) -> None:
    "cuBLAS bf16 (ours and torch's), v7 with its own tile choice and every tile, v6 at the square shapes."
    for label, M, N, K, ta, tb in shapes:
        for v in ("cublas-bf16",) + (("torch-bf16",) if have_torch else ()):
            measure(run, lambda v=v: tc_bench(v, M, N, K, ta, tb), label, role="tc")
        measure(run, lambda: tc_bench(7, M, N, K, ta, tb), label, role="tc")
        for c in TC.V7_TILES:
            measure(run, lambda c=c: tc_bench(7, M, N, K, ta, tb, c), label, role="tc-sweep")
        if M == N == K: measure(run, lambda: tc_bench(6, M, N, K, ta, tb), label, role="tc")


def tc_table(records: list[dict], shapes) -> str:
    "Markdown: per shape, cuBLAS bf16 and each tensor-core rung's TFLOP/s, v7 ÷ cuBLAS bf16 and the best v7 tile."
    rows = []
    for label, M, N, K, ta, tb in shapes:
        at = [r for r in records if r.get("kind") == "time" and r["label"] == label and r.get("role", "").startswith("tc")]
        get = lambda v, role="tc": next((r["tflops"] for r in at if r["version"] == v and r["role"] == role), None)
        best = max((r for r in at if r["version"] == "v7"), key=lambda r: r["tflops"], default=None)
        row = dict(shape=f"{label} ({M}×{N}×{K}{', Aᵀ' if ta else ''}{', Bᵀ' if tb else ''})", cublas=get("cublas-bf16"),
                   torch=get("torch-bf16"), v6=get("v6"), v7=get("v7"), best=best and best["tflops"],
                   best_cfg=best and best["config"])
        row["frac"] = row["cublas"] and row["v7"] and row["v7"] / row["cublas"]
        row["frac_best"] = row["cublas"] and row["best"] and row["best"] / row["cublas"]
        rows.append(row)
    cols = [("shape", "GEMM (M×N×K)", ""), ("cublas", "cuBLAS bf16", ".1f"), ("torch", "torch bf16", ".1f"),
            ("v6", "v6", ".1f"), ("v7", "v7", ".1f"), ("frac", "v7 ÷ cuBLAS", ".2f"), ("best", "best v7", ".1f"),
            ("frac_best", "best ÷ cuBLAS", ".2f"), ("best_cfg", "best v7 tile", "")]
    return benchlib.table(rows, cols)


def measure(run: Run, fn, label: str, **meta):
    "One timed measurement, recorded with `meta`; failures are recorded, not raised."
    if not run.due(): return None
    try:
        r = fn()
    except Exception as e:
        run.fail(f"{label} {meta}", e)
        return None
    tol = 5e-3 if "tf32" in str(r["version"]) else (1e-2 if "bf16" in str(r["version"]) else 1e-4)
    if not r["max_err"] <= tol:
        run.fail(f"{label} {meta}", AssertionError(f"relative error {r['max_err']:.2e} > {tol:.0e}"))
    rec = run.add(dict(kind="time", label=label, **meta, **r))
    split = f" split {rec['split_k']}" if rec.get("split_k", 1) > 1 else ""
    print(f"{label:28s} {str(rec['version']):12s} {str(rec.get('config') or ''):34s}{split:9s} "
          f"{rec['tflops']:7.2f} TFLOP/s  {rec['time'] * 1e6:10.1f} µs  err {rec['max_err']:.1e}  [{rec['elapsed_s']:.0f} s]",
          flush=True)
    return rec


def ladder(run: Run, shapes, have_torch: bool, have_cupy: bool) -> None:
    "cuBLAS (torch and cupy, FP32 and TF32) and v1-v5 with their default tiles at every shape."
    for label, M, N, K, ta, tb in shapes:
        kw = dict(M=M, N=N, K=K, trans_a=ta, trans_b=tb)
        if have_torch:
            for tf32 in (False, True):
                measure(run, lambda: torch_gemm_bench(M, N, K, ta, tb, tf32), label, role="cublas")
        if have_cupy:
            for prov in ("cublas", "cublas-tf32", "cublas-bf16"):
                measure(run, lambda: GL.gemm_bench(prov, None, **kw), label, role="cupy")
        for v in (1, 2, 3, 4, 5):
            measure(run, lambda: GL.gemm_bench(v, None, **kw), label, role="ladder")


def sweep_square(run: Run, square, configs) -> None:
    "v5 tile variants at one square shape (and v4 with v5's tile: the same kernel without fastmath)."
    label, M, N, K, ta, tb = square
    for cfg in configs:
        measure(run, lambda: GL.gemm_bench(5, cfg, M, N, K, ta, tb), label, role="sweep")
    measure(run, lambda: GL.gemm_bench(4, configs[0], M, N, K, ta, tb), label, role="sweep-nofastmath")


def sweep_model(run: Run, model, tiles) -> None:
    "Every v5 candidate tile, and split-K factors where the tiles do not fill the GPU, at the model's shapes."
    sms = G._sm_count()
    for label, M, N, K, ta, tb in model:
        for cfg in tiles:
            blocks = cdiv(M, cfg.bm) * cdiv(N, cfg.bn)
            for s in SPLITS:
                if s > 1 and (blocks >= sms or cdiv(K, cfg.bk) < 4 * s): continue
                measure(run, lambda: GL.gemm_bench(5, cfg, M, N, K, ta, tb, split_k=s), label, role="sweep")


def table(records: list[dict], shapes) -> str:
    "Markdown: per shape, cuBLAS FP32/TF32 and each rung's TFLOP/s with its fraction of cuBLAS FP32, and the best v5 sweep entry."
    rows = []
    for label, M, N, K, ta, tb in shapes:
        at = [r for r in records if r.get("kind") == "time" and r["label"] == label]
        get = lambda role, v: next((r for r in at if r.get("role") == role and r["version"] == v), None)
        fp32 = get("cublas", "torch-fp32") or get("cupy", "cublas")
        tf32 = get("cublas", "torch-tf32") or get("cupy", "cublas-tf32")
        row = dict(shape=f"{label} ({M}×{N}×{K}{', Aᵀ' if ta else ''}{', Bᵀ' if tb else ''})",
                   fp32=fp32 and fp32["tflops"], tf32=tf32 and tf32["tflops"])
        for v in (1, 2, 3, 4, 5):
            r = get("ladder", v)
            row[f"v{v}"] = r and r["tflops"]
        best = max((r for r in at if r["version"] == 5), key=lambda r: r["tflops"], default=None)
        row["best"] = best and best["tflops"]
        row["best_cfg"] = best and f"{best['config']}{' split ' + str(best['split_k']) if best['split_k'] > 1 else ''}"
        base = row["fp32"]
        row["frac5"] = base and row["v5"] and row["v5"] / base
        row["frac_best"] = base and row["best"] and row["best"] / base
        rows.append(row)
    cols = [("shape", "GEMM (M×N×K)", ""), ("fp32", "cuBLAS FP32", ".1f"), ("tf32", "cuBLAS TF32", ".1f"),
            ("v1", "v1", ".2f"), ("v2", "v2", ".2f"), ("v3", "v3", ".1f"), ("v4", "v4", ".1f"), ("v5", "v5", ".1f"),
            ("frac5", "v5 ÷ cuBLAS", ".2f"), ("best", "best v5", ".1f"), ("frac_best", "best ÷ cuBLAS", ".2f"),
            ("best_cfg", "best v5 tile", "")]
    return benchlib.table(rows, cols)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=float, default=420, help="seconds after which no new measurement starts (default 420)")
    p.add_argument("--no-sweep", action="store_true", help="skip the v5 tile and split-K sweep")
    p.add_argument("--no-checks", action="store_true", help="skip the correctness checks at odd shapes")
    p.add_argument("--tc-only", action="store_true", help="only the tensor-core part: its checks, cuBLAS bf16, v6 and v7")
    p.add_argument("--tiny", action="store_true", help="tiny shapes and the simulator's tiles: a smoke test of this script "
                   "that also runs under NUMBA_ENABLE_CUDASIM=1 (its times mean nothing)")
    p.add_argument("--out", default=os.environ.get("OUT") or str(benchlib.RESULTS), help="folder for the JSON ($OUT, else bench/results)")
    args = p.parse_args(argv)
    if not args.tiny and (G.simulator_enabled() or not cuda.is_available()):
        print("gemm_ladder: needs a CUDA GPU (and NUMBA_ENABLE_CUDASIM unset); --tiny runs a smoke test anywhere", file=sys.stderr)
        return 2
    out = Path(args.out); out.mkdir(parents=True, exist_ok=True)
    run = Run(args.budget, out / "gemm_ladder_records.jsonl" if os.environ.get("OUT") else None)
    host = benchlib.host_info("cpu" if G.simulator_enabled() else "cuda")
    have_torch = False
    if not G.simulator_enabled():
        try:
            import torch
            have_torch = torch.cuda.is_available()
            if have_torch and torch.cuda.current_stream().cuda_stream != 0:
                print("torch's current stream is not the default stream: its timings would not queue behind the sleep kernel")
                have_torch = False
        except ImportError:
            pass
    try:
        import cupy
        host["cupy"] = cupy.__version__
    except ImportError:
        host["cupy"] = None
    try:
        load_cublas(); have_cupy = True              # cuBLAS through ctypes (cupy only helps find the library)
    except RuntimeError as e:
        print(e); have_cupy = False
    print(f"device {host.get('device')}, numba {host['numba']}, numba-cuda {host['numba_cuda']}, numpy {host['numpy']}, "
          f"torch {host['torch']}, cupy {host.get('cupy')}, {G._sm_count()} multiprocessors", flush=True)
    if args.tiny:
        squares, model = [("9³", 9, 9, 9, False, False)], [("tiny x·Wᵀ", 13, 11, 9, False, True), ("tiny dW", 8, 8, 96, True, False)]
        check_shapes, sweep_cfgs, tiles = ((13, 11, 9), (9, 7, 40)), list(G.V5_TILES_SIM), G.V5_TILES_SIM
    else:
        squares, model = SQUARES, G.model_shapes()
        check_shapes, sweep_cfgs, tiles = ((301, 257, 263), (129, 67, 1000)), SWEEP_4096, G.V5_TILES + (T8X8,)
    big = squares[-1]
    tc = not G.simulator_enabled() and have_cupy
    if args.tc_only:
        if not args.no_checks:
            for what, fn in tc_checks():
                try: fn(); run.add(dict(kind="check", what=what, ok=True))
                except Exception as e: run.fail(what, e); run.add(dict(kind="check", what=what, ok=False))
        tc_ladder(run, [big] + model, have_torch)
        return finish(run, host, args, out, squares, model)
    if not args.no_checks: checks(run, *check_shapes, have_cupy=have_cupy)
    if tc: tc_ladder(run, [big] + model, have_torch)
    ladder(run, [big] + model, have_torch, have_cupy)          # the headline shape and the model's GEMMs first,
    if not args.no_sweep:                                       # then the sweeps, then the smaller squares
        sweep_square(run, big, sweep_cfgs)
        sweep_model(run, model, tiles)
    ladder(run, squares[:-1], have_torch, have_cupy)
    return finish(run, host, args, out, squares, model)


def finish(run: Run, host: dict, args, out: Path, squares, model) -> int:
    "Resource report, the JSON record, the failures and the tables; the exit code."
    res = []
    if not G.simulator_enabled():
        for key, kern in G.made_kernels().items():
            if not kern.overloads: continue
            try: res.append(dict(key=" ".join(map(str, key)), **GL.kernel_resources(kern)))
            except Exception as e: res.append(dict(key=" ".join(map(str, key)), error=str(e)))
    for r in res:
        if " False False" in r["key"]: print("resources", r)
    date = datetime.datetime.now(datetime.timezone.utc)
    doc = dict(bench="gemm_ladder", date=date.isoformat(timespec="seconds"), device=host.get("device"), host=host,
               sm_count=G._sm_count(), tiny=args.tiny, wall_s=round(time.time() - run.t0, 1), skipped_for_budget=run.skipped,
               failures=run.failures, resources=res, records=run.records)
    slug = "sim" if G.simulator_enabled() else (host.get("gpu") or "gpu").replace("NVIDIA ", "").replace(" ", "_").lower()
    path = out / f"gemm_ladder_{slug}_{date:%Y-%m-%d}.json"
    tmp = path.with_suffix(".tmp"); tmp.write_text(json.dumps(doc, indent=1, default=str)); tmp.replace(path)
    print(f"\nwrote {path.name}: {len(run.records)} records, {len(run.failures)} failures, "
          f"{run.skipped} skipped for the budget, {doc['wall_s']} s")
    for f in run.failures: print("FAILED", f["what"], f["error"][:300])
    if not args.tc_only: print(table(run.records, squares + model))
    if any(r.get("role", "").startswith("tc") for r in run.records): print(tc_table(run.records, squares[-1:] + model))
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
