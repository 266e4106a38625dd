"""Why is v7 where it is? One GPU call: the compiled kernel's resources (registers, local memory, shared memory, LTO),
its SASS instruction mix (HMMA, LDSM, LDGSTS, local loads/stores), and v7's source built as one CUDA C++ translation
unit by cupy (NVRTC, the function inlined into a __global__ kernel), timed against the numba-linked kernel at 4096³.

    python bench/tc_probe.py            # prints a short table; $OUT/tc_probe.json when $OUT is set
"""
from __future__ import annotations
import json, os, re, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np
from numba import cuda
from mint import tensor_cores as TC
from mint.kernels import time_device

M = N = K = 4096
res = {}
a = cuda.to_device(np.random.default_rng(0).integers(0x3c00, 0x4000, (M, K)).astype(np.uint16))   # bf16 values in [0.0078, 2)
b = cuda.to_device(np.random.default_rng(1).integers(0x3c00, 0x4000, (N, K)).astype(np.uint16))
out = cuda.device_array((M, N), np.float32)
cfgs = list(TC.V7_TILES) + [TC.TcConfig(128, 128, 32, 2, 2, 2), TC.TcConfig(256, 128, 16, 4, 2, 2)]   # + 64x64 warp tiles
for cfg in cfgs:
    try:
        fn = lambda: TC.tc_gemm(a, b, out, None, False, True, 7, cfg)
        fn(); cuda.synchronize()
        t = time_device(fn)
        k = TC.make_tc_kernel(7, False, cfg, False, True)
        ov = next(iter(k.overloads.values()))
        r = dict(tflops=round(2 * M * N * K / t / 1e12, 1), regs=ov.regs_per_thread, local=ov.local_mem_per_thread,
                 shared=ov.shared_mem_per_block, lto=k.targetoptions.get("lto"))
        try:
            sass = k.inspect_sass()
            sass = sass if isinstance(sass, str) else "\n".join(sass.values())
            for op in ("HMMA", "LDSM", "LDGSTS", "LDL", "STL", "CALL", "BAR"):
                r[op] = len(re.findall(r"\b" + op + r"\b", sass))
        except Exception as e: r["sass"] = str(e)[:200]
        res[f"numba {cfg}"] = r
    except Exception as e: res[f"numba {cfg}"] = dict(error=str(e)[:500])
    print(list(res.items())[-1], flush=True)
try:
    import cupy as cp
    for cfg, lb in [(TC.V7_TILES[2], "(256, 2)"), (TC.V7_TILES[2], "(256, 1)"), (TC.V7_TILES[0], "(256, 2)")]:
        name, src = TC.tc_source(7, False, cfg, False, True)
        src += f'\nextern "C" __global__ void __launch_bounds__{lb} k(i64 a, i64 b, i64 c, i64 bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 hb) {{ {name}(a, b, c, bias, M, N, K, lda, ldb, ldc, hb); }}\n'
        kern = cp.RawKernel(src, "k", options=("-arch=sm_90",))
        kern.max_dynamic_shared_size_bytes = cfg.shared_bytes()          # the stages are dynamic shared memory
        A, B, C = (cp.asarray(x) for x in (a, b, out))
        args = tuple(np.int64(v) for v in (A.data.ptr, B.data.ptr, C.data.ptr, 0, M, N, K, K, K, N, 0))
        grid = (N // cfg.bn, M // cfg.bm)
        run = lambda: kern(grid, (cfg.threads,), args, shared_mem=cfg.shared_bytes())
        run(); cp.cuda.Device().synchronize()
        ref = C.copy()
        TC.tc_gemm(a, b, out, None, False, True, 7, cfg); cuda.synchronize()
        same = bool(cp.allclose(ref, cp.asarray(out)))
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        ts = []
        for _ in range(3):
            e0.record(); [run() for _ in range(20)]; e1.record(); e1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3 / 20)
        t = float(np.median(ts))
        res[f"cupy {cfg} {lb}"] = dict(tflops=round(2 * M * N * K / t / 1e12, 1), regs=kern.num_regs, local=kern.local_size_bytes,
                                        shared=kern.shared_size_bytes, same_as_numba=same)
        print(list(res.items())[-1], flush=True)
except Exception as e:
    import traceback; traceback.print_exc(); res["cupy"] = dict(error=str(e)[:500])
if os.environ.get("OUT"): Path(os.environ["OUT"], "tc_probe.json").write_text(json.dumps(res, indent=1))
for k, v in res.items(): print(f"{k:50s} {v}")
