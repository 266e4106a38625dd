"""Compile once (issue 18): mint's numba.njit functions and module-level CUDA kernels are cached on disk, and a second
process loads them instead of compiling again. Counts, not times: numba's own per-dispatcher cache hit/miss counters."""
import ast, json, os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One CPU training step of a tiny model (forward, loss, backward, clip norm, AdamW): every njit function the step uses.
CHILD = r"""
import json, sys
import numpy as np
import mint
from mint.core import ModelConfig, kernel_cache_dir
from mint.data import lm_batches
from mint.model import init_params, loss_and_grads
from mint.optim import AdamConfig, adam_step, grad_sumsq
cfg = ModelConfig(vocab_size=32, d_model=16, n_heads=2, n_layers=1, max_seq_len=8)
p = init_params(cfg, 0); g = np.zeros_like(p); m = np.zeros_like(p); v = np.zeros_like(p)
batch = next(lm_batches(np.arange(200) % 32, 2, 8, np.random.default_rng(0)))
loss = loss_and_grads(p, g, cfg, batch)
adam_step(p, g, m, v, 1e-3, 1, AdamConfig(), sumsq=grad_sumsq(g))
from numba.core.registry import CPUDispatcher
hits = misses = 0
for mod in [m for n, m in sys.modules.items() if n.startswith("mint.")]:
    for f in vars(mod).values():
        if isinstance(f, CPUDispatcher) and f.__module__ == mod.__name__:
            hits += sum(f._cache_hits.values()); misses += sum(f._cache_misses.values())
print("RESULT " + json.dumps(dict(loss=loss, hits=hits, misses=misses, cache_dir=str(kernel_cache_dir()))))
"""


def _child(cache_dir: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), "NUMBA_ENABLE_CUDASIM": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))[7:])


def test_second_process_loads_the_cache(tmp_path):
    cache = tmp_path / "numba_cache"
    first = _child(cache)
    assert Path(first["cache_dir"]) == cache or cache in Path(first["cache_dir"]).parents   # NUMBA_CACHE_DIR is honoured
    assert first["misses"] > 0 and first["hits"] == 0, first           # an empty cache: everything compiled
    index = sorted(cache.rglob("*.nbi"))
    assert len(index) >= first["misses"] // 2, index                      # one index per function (some have 2 signatures)
    assert all(sorted(cache.rglob(f.name.replace(".nbi", ".*.nbc"))) for f in index)   # and its compiled data
    second = _child(cache)
    # nothing compiled again; a function only called from other njit code is compiled with its caller in the first
    # process (a miss) and not needed in the second, which loads the caller whole: hits <= misses
    assert second["misses"] == 0 and 0 < second["hits"] <= first["misses"], (first, second)
    assert second["loss"] == first["loss"]                                 # the cached code computes the same step


def _decorated(path: Path):
    "(name, decorator source, at module level) of every numba.njit / cuda.jit decorated function in `path`."
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef): continue
        for d in node.decorator_list:
            src = ast.unparse(d)
            if "njit" in src or "cuda.jit" in src or "factory_jit" in src: yield node.name, src, id(node) in top


def test_every_kernel_asks_for_the_cache():
    "A new njit function or kernel without cache=True would compile in every process: caught here. Kernels made by a factory (closures: GEMM tiles, flash attention) use mint.kernels.factory_jit, which puts their jit options in the cache entry's name."
    missing = []
    for path in sorted((ROOT / "mint").glob("*.py")):
        for name, src, top in _decorated(path):
            if "device=True" in src: continue            # device functions are compiled into (and cached with) their kernels
            if not top and path.name in LINKED: continue  # CUDA C++ linked through NVRTC: compiled in every process (docs)
            if "cache=True" not in src and not src.startswith("factory_jit"):
                missing.append(f"{path.name}: {name} ({src})")
    assert not missing, "add cache=True (module level) or use factory_jit (in a factory) for: " + "; ".join(missing)


LINKED = {"flash_tc.py", "tensor_cores.py"}   # factories that link CUDA C++ sources (bf16 paths): not cached
