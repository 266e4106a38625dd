#!/usr/bin/env bash
# The bf16 / recompute sessions on an H200 (device tool; carry [".wt_bf16", ".whl", ".gpu_site"], command
# `cd .wt_bf16 && bash bench/bf16_gpu_session.sh PART`). Logs, JSON and executed notebooks go to $OUT.
#   N: chapters 25 (mixed precision) and 27 (recomputation) executed on the GPU (their #| gpu cells' outputs stored):
#      bf16 on the device = the CPU emulation, the recompute bit-identity on the device, d1024 memory with --recompute
#   S: a first bench/bench_scale.py table (few steps; Mint TF32 and bf16 against PyTorch bf16 + compile and TF32)
#   F: the full bench/bench_scale.py table (every config and path; about 10 minutes: use timeout_s 600)
#   Q: bench/bf16_quality.py, medium and large, 2,000 steps (Mint fp32/bf16, PyTorch fp32/bf16 autocast; ~5 minutes)
set -u
PART=${1:-N}
OUT=${OUT:-/tmp/mint-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ../.whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/../.gpu_site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
unset NUMBA_ENABLE_CUDASIM
{ date -u +%FT%TZ; nvidia-smi -L; } 2>&1 | tee "$OUT/gpu_info_$PART.txt"
if [ "$PART" = N ]; then
  timeout 135 python3 tools/run_notebooks.py nbs/25_mixed_precision.ipynb nbs/27_recompute.ipynb -j 2 2>&1 | tee "$OUT/run_notebooks.log"
  cp nbs/25_mixed_precision.ipynb nbs/27_recompute.ipynb "$OUT/"
  python3 - <<'PY' 2>&1 | tee -a "$OUT/run_notebooks.log"
import json
for p in ("nbs/25_mixed_precision.ipynb", "nbs/27_recompute.ipynb"):
    for c in json.load(open(p))["cells"]:
        if c["cell_type"] == "code" and "#| gpu" in "".join(c["source"]):
            print(p, "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"]) for o in c.get("outputs", []))[-1500:])
PY
fi
if [ "$PART" = S ]; then
  timeout 140 python3 bench/bench_scale.py --configs d768 d1024 medium large d512 --mint tf32 bf16 --bf16-gemm cublas-bf16 tc cublas-tf32 \
    --torch bf16 tf32 --steps 5 --rounds 2 --budget-s 105 --out "$OUT" 2>&1 | tee "$OUT/bench_scale.log"
fi
if [ "$PART" = F ]; then
  timeout 590 python3 bench/bench_scale.py --out "$OUT" 2>&1 | tee "$OUT/bench_scale_full.log"
fi
if [ "$PART" = Q ]; then
  timeout 590 python3 bench/bf16_quality.py --device cuda --out "$OUT" 2>&1 | tee "$OUT/bf16_quality.log"
fi
