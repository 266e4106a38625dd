#!/usr/bin/env python3
"""Execute notebooks in a Jupyter kernel and store their outputs, as a reader would see them after Run All.

    python tools/run_notebooks.py                  # every notebook in nbs/
    python tools/run_notebooks.py nbs/04_matmul.ipynb nbs/13_train.ipynb -j 2

Cells run in the notebook's folder, in the `python3` kernel, with the environment of this command. Nothing is set
by hand: on a machine without a CUDA GPU `mint.core` switches numba's simulator on by itself. Cells marked
`#| eval: false` never run; `#| gpu` cells run only where a real GPU is in use — elsewhere they keep the outputs
stored from the last GPU run (so running this on a laptop never replaces the H200 timings). Widget states are
stored, so the widgets render in a static view. Then `nbdev-clean` normalises the files, and
`tools/check_outputs.py` checks them (hygiene and evidence: see its docstring).

The kernels never inherit `MPLBACKEND` (a non-interactive backend such as Agg draws nothing into the notebook, and
the stored figures would be lost). Each notebook's run time is recorded in `bench/results/notebook_times.json`
(with the date, the CPU count and how many notebooks ran at once), and the Run All time of each part of the course
is printed from those records (`tools/course.py`). Time a part with `-j 1` on a quiet machine: notebooks that run
side by side share the cores."""
import argparse, datetime, json, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from course import TIMES, format_totals, recorded_times, update_readme


def directives(cell) -> dict:
    "The `#| key value` lines at the top of a code cell."
    out = {}
    for line in cell.source.splitlines():
        s = line.strip()
        if not s: continue
        if not s.startswith("#|"): break
        k, _, v = s[2:].strip().partition(" ")
        if k.endswith(":"): k = k[:-1]
        out[k] = v.strip()
    return out


class KeepSkipped(NotebookClient):
    "A client that does not run some cells and keeps their stored outputs."
    skip_flags: set = set()
    def skipped(self, cell) -> bool:
        d = directives(cell)
        return d.get("eval", "").lower() == "false" or bool(self.skip_flags & d.keys())
    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == "code" and self.skipped(cell): return cell
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)


def run_one(path: Path, skip_flags: set, timeout: int) -> tuple:
    "Execute `path` in place; returns (path, seconds, error or None)."
    os.environ.pop("MPLBACKEND", None)                      # the kernel starts with this environment: figures are drawn
    t0 = time.time()
    nb = nbformat.read(path, as_version=4)
    client = KeepSkipped(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                         store_widget_state=True, record_timing=False)
    client.skip_flags = skip_flags
    try:
        client.execute()
        err = None
    except Exception as e:                                  # the notebook stops at its first failing cell
        err = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
    nbformat.write(nb, path)
    return path, time.time() - t0, err


def record_time(stem: str, rec: dict):
    "Add one notebook's run time to bench/results/notebook_times.json at once (read again first: other runs may write it)."
    from mint.checkpoint import atomic_write
    times = {**recorded_times(), stem: rec}
    atomic_write(TIMES, json.dumps({"about": "seconds of a Run All of each notebook (tools/run_notebooks.py); without a "
                                   "GPU the kernels run in numba's CUDA simulator; load: the 1-minute load average at the end",
                                   "notebooks": dict(sorted(times.items()))}, indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="notebooks to run (default: nbs/*.ipynb)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="notebooks run at the same time (default 2)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per cell (default 900)")
    ap.add_argument("--skip", default="", help="more cell flags not to run, keeping their outputs (e.g. 'slow')")
    a = ap.parse_args(argv)
    os.environ.pop("MPLBACKEND", None)                      # the kernels start with this environment: figures are drawn
    paths = [Path(p).resolve() for p in a.notebooks] or sorted((ROOT / "nbs").glob("*.ipynb"))
    sys.path.insert(0, str(ROOT))
    from mint.core import gpu_available                     # also switches the simulator on here when there is no GPU
    skip = set(a.skip.split()) | (set() if gpu_available() else {"gpu"})
    print(f"run_notebooks: {len(paths)} notebook(s), {a.jobs} at a time; every cell runs except cells marked "
          f"{', '.join('#| ' + f for f in sorted(skip | {'eval: false'}))} (their stored outputs are kept)")
    t0, failed = time.time(), []
    with ThreadPoolExecutor(a.jobs) as ex:
        for path, secs, err in ex.map(lambda p: run_one(p, skip, a.timeout), paths):
            print(f"{path.name:28s} {secs:6.1f} s  {'ok' if err is None else 'FAILED: ' + err}", flush=True)
            if err: failed.append(path.name)
            else: record_time(path.stem, {"seconds": round(secs, 1), "date": datetime.date.today().isoformat(),
                                          "cpus": os.cpu_count(), "jobs": min(a.jobs, len(paths)),
                                          "gpu": "gpu" not in skip, "load": round(os.getloadavg()[0], 1)})
    print(format_totals())
    if update_readme(): print("run_notebooks: README.md's table of Run All times updated")
    subprocess.run(["nbdev-clean"], cwd=ROOT, check=True)
    print(f"run_notebooks: {len(paths) - len(failed)} of {len(paths)} notebook(s) ran in {time.time() - t0:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    check = subprocess.run([sys.executable, str(ROOT / "tools" / "check_outputs.py"), *map(str, paths)])
    return 1 if failed or check.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
