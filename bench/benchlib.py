"""What every benchmark here shares: where it ran (host, device, versions), appending a JSON record to
bench/results/<name>.jsonl, and printing a table."""
from __future__ import annotations
import datetime, json, os, platform, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
if str(ROOT) not in sys.path: sys.path.insert(1, str(ROOT))     # `import mint` without `pip install -e .`
# Both sides run under the OpenMP setting `mint` runs under (mint.core sets it: OpenMP threads sleep after a parallel
# loop instead of spinning on the cores BLAS needs next). It must be set before torch loads the OpenMP runtime that it
# shares with numba; on 2 cores PyTorch CPU was not slower with it (2026-12-01: training within ±20% either way
# between runs, decoding faster). Recorded in each result's host info.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# mint.core (imported next, before NumPy) also sets OPENBLAS_THREAD_TIMEOUT: NumPy's BLAS threads sleep soon after a
# product. Both sides run under it; PyTorch CPU's own BLAS threads are OpenMP's.

from mint.counters import cpu_model  # noqa: E402  (the processor's name, as CPU records in the chapters give it)


def _version(mod: str):
    try:
        m = __import__(mod)
        return getattr(m, "__version__", "?")
    except Exception:
        return None


def blas_threads() -> list[dict] | None:
    "NumPy's BLAS library and its thread count (threadpoolctl, where installed)."
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return [{k: i.get(k) for k in ("internal_api", "version", "num_threads")} for i in threadpool_info()
            if i.get("user_api") == "blas"]


def host_info(device: str = "cpu") -> dict:
    "Where the benchmark runs: CPU model and cores, OS, Python, numpy/numba/torch versions; GPU name with device='cuda'."
    info = dict(cpu=cpu_model(), cpu_count=os.cpu_count(),
                cpus_usable=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
                platform=platform.platform(), python=platform.python_version(),
                numpy=_version("numpy"), numba=_version("numba"), torch=_version("torch"))
    try:
        import importlib.metadata as md
        info["numba_cuda"] = md.version("numba-cuda")
    except Exception:
        info["numba_cuda"] = None
    try:
        import torch
        info["torch_threads"] = torch.get_num_threads()
        if device == "cuda" and torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            info.update(gpu=p.name, gpu_memory_GiB=round(p.total_memory / 2**30, 1),
                        gpu_compute_capability=f"{p.major}.{p.minor}", torch_cuda=torch.version.cuda)
    except ImportError:
        pass
    info["blas"] = blas_threads()
    info["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
    info["openblas_thread_timeout"] = os.environ.get("OPENBLAS_THREAD_TIMEOUT")     # mint.core's default, or the caller's
    if hasattr(os, "getloadavg"): info["loadavg_1_5_15"] = [round(x, 2) for x in os.getloadavg()]   # other work on the host skews timings
    info["device"] = info.get("gpu") if device == "cuda" else f"{info['cpu']} ({info['cpus_usable']} cores)"
    return info


def record(name: str, rec: dict) -> Path:
    "Append `rec` (with the UTC date) as one JSON line to bench/results/<name>.jsonl; return the path."
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.jsonl"
    rec = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **rec}
    with open(path, "a") as f: f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


def table(rows: list[dict], cols: list[tuple[str, str, str]]) -> str:
    "A Markdown table of `rows` with columns (key, header, format)."
    head = "| " + " | ".join(h for _, h, _ in cols) + " |"
    sep = "|" + "|".join("---:" if f else "---" for _, _, f in cols) + "|"
    body = ["| " + " | ".join(("" if r.get(k) is None else format(r[k], f)) for k, _, f in cols) + " |" for r in rows]
    return "\n".join([head, sep, *body])


TRAIN_STEP_COLS = [("preset", "config", ""), ("params", "params", ","), ("shape", "B×T", ""), ("side", "implementation", ""),
                   ("tps", "tokens/s (best round)", ",.0f"), ("ms", "ms/step", ".1f"), ("ratio", "Mint ÷ this", ".2f"),
                   ("med", "tokens/s (median)", ",.0f"), ("ratio_med", "Mint ÷ this (median)", ".2f"),
                   ("mfu", "MFU %", ".1f"), ("mem", "peak MiB", ",.0f"), ("launches", "launches/step", ".0f"),
                   ("host", "host ms/step", ".1f")]


def train_row(run: dict, side: str, v: dict) -> dict:
    "One table row of a train-step record's side."
    return dict(preset=run["preset"], params=run["n_params"], shape=f"{run['batch_size']}×{run['seq_len']}", side=side,
                tps=v["tokens_per_s"], med=v.get("median_tokens_per_s"), ms=v["step_ms"], ratio=v.get("mint_over_this"),
                ratio_med=v.get("mint_over_this_median"), mfu=None if v.get("mfu") is None else 100 * v["mfu"],
                mem=v.get("peak_memory_MiB"), launches=v.get("launches_per_step"), host=v.get("host_ms_per_step"))


DECODE_COLS = [("preset", "config", ""), ("side", "implementation", ""), ("tps", "tokens/s (best round)", ",.0f"),
               ("ms", "ms/token", ".2f"), ("ratio", "Mint ÷ this", ".2f"), ("same", "greedy tokens equal", "")]
