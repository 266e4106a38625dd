"""One v5 GEMM (mint.gemm) at 4096³ for a profiler, and the kernel's PTX and SASS written to $OUT (or the folder given).

    ncu --clock-control none -k regex:gemm_v4 -c 1 --section SpeedOfLight python bench/gemm_profile.py
    python bench/gemm_profile.py --config 128,128,16,8,8,4,4 --out /tmp/gemm
"""
from __future__ import annotations
import argparse, os, sys
from pathlib import Path
import numpy as np
if not hasattr(np, "row_stack"): np.row_stack = np.vstack   # numba-cuda 0.30.4 calls it; numpy >= 2.5 dropped it
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from numba import cuda                                    # noqa: E402
from mint import gemm as G                                # noqa: E402
from mint.gemm_ladder import kernel_resources            # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=None, help="bm,bn,bk,tm,tn,vec,unroll[,min_blocks] (default: v5's tile for 4096³)")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    args = p.parse_args(argv)
    n = args.size
    cfg = G.GemmConfig(*map(int, args.config.split(","))) if args.config else G.pick_config(n, n, n)[0]
    rng = np.random.default_rng(0)
    a, b = (cuda.to_device(rng.standard_normal((n, n), dtype=np.float32)) for _ in range(2))
    c = cuda.device_array((n, n), np.float32)
    G.run_v5(a, b, c, None, False, False, cfg)               # the launch a profiler with `-c 1` catches
    cuda.synchronize()
    kern = G.make_gemm_v4(cfg, False, False, False, True)
    out = Path(args.out); out.mkdir(parents=True, exist_ok=True)
    for name, get in (("v5_ptx.txt", kern.inspect_asm), ("v5_sass.txt", kern.inspect_sass)):
        try:
            (out / name).write_text("\n".join(get().values()))
        except Exception as e:                                # SASS needs nvdisasm on the PATH
            print(f"no {name}: {e}")
    print(cfg, kernel_resources(kern))
    return 0


if __name__ == "__main__":
    sys.exit(main())
