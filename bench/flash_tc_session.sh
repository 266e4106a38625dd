#!/bin/bash
# The recorded GPU procedure for nbs/26 (tensor-core flash attention), run from the repository root on a GPU host:
# a correctness gate, then chapters 26 and 21 executed with their GPU cells (26 rewrites the committed record
# bench/results/h200_2026-12-03_v3/flash_tc.json), then the d512 step profile with the flash-tc attention.
# OUT: where logs and results go. Budget: about two minutes on an H200.
set -u
OUT=${OUT:-/tmp/flash_tc_out}; mkdir -p "$OUT"
R=bench/results/h200_2026-12-03_v3
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
timeout 40 python3 bench/flash_tc_bench.py --check-only > "$OUT/check.log" 2>&1; rc=$?; tail -1 "$OUT/check.log"; el "check rc $rc"
if [ $rc -ne 0 ] && [ -f "${FALLBACK:-/nonexistent}" ]; then cp "$FALLBACK" mint/flash_tc.py; echo "FELL BACK to $FALLBACK" | tee "$OUT/FELL_BACK"; fi
timeout ${NB_TIMEOUT:-85} python3 tools/run_notebooks.py nbs/26_flash_tensor_cores.ipynb nbs/21_flash_attention.ipynb -j 2 > "$OUT/nbs.log" 2>&1; el "notebooks rc $?"
tail -4 "$OUT/nbs.log"
timeout ${PROF_TIMEOUT:-35} python3 bench/profile_step.py --preset d512 --gemm cublas-tf32 --attention flash-tc --out "$OUT" > "$OUT/prof_flash-tc.log" 2>&1; el "profile rc $?"
head -3 "$OUT/prof_flash-tc.log" | tail -1 | cut -c1-160
cp nbs/26_flash_tensor_cores.ipynb nbs/21_flash_attention.ipynb "$R/flash_tc.json" "$OUT/" 2>/dev/null
python3 - "$R/flash_tc.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["timings"]: print(t["T"], t["head_dim"], f"sdpa f+b {t['sdpa_fwd_bwd_ms']:.3f} mint {t['mint_tc_fwd_bwd_ms']:.3f} ratio {t['fwd_bwd_ratio']:.2f} fwd ratio {t['fwd_ratio']:.2f}")
PY
