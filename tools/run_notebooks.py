#!/usr/bin/env python3
"""Execute notebooks in a Jupyter kernel and store their outputs, as a reader would see them after Run All.

    python tools/run_notebooks.py                  # every notebook in nbs/
    python tools/run_notebooks.py nbs/04_matmul.ipynb nbs/13_train.ipynb -j 2

Cells run in the notebook's folder, in the `python3` kernel, with the environment of this command. Nothing is set
by hand: on a machine without a CUDA GPU `mint.core` switches numba's simulator on by itself, in each kernel (this
command's own import of it does not leak into them: a kernel starts as in a reader's JupyterLab). Cells marked
`#| eval: false` never run (they keep their stored outputs). `#| gpu` cells run as in JupyterLab's Run All: without
a GPU each prints its skip note, which is what is stored; on a GPU each runs for real, and what it prints goes into
its record (`with gpu_record(...)`, bench/results/gpu_cells/CHAPTER.json, shown by the `show_gpu_record` cell after
it, which this run refreshes), and then its stored output is set to the skip note as well. So the stored notebook is
the same on every machine, a Run All without a GPU changes nothing, and the GPU evidence lives in the records. (A GPU
cell that fails keeps its error, for `tools/check_outputs.py` to flag.) CPU wall times are the same kind of evidence: a cell
prints them inside `with cpu_timing(...)` (mint.counters), which shows the record in bench/results/cpu_cells/CHAPTER.json;
run with `MINT_RECORD_CPU=1` in the environment to measure them again and rewrite those records. A cell's outputs are
stored as JupyterLab's output area stores them (`lab_outputs`), so a Run All and save in JupyterLab stores the same: in
the order they arrived, a stream output merged into the one before it only when that one is a stream of the same name
(stdout, figure, stdout stays three outputs; so do stdout, stderr, stdout), each stream's `\r` and `\b` applied as
JupyterLab applies them. (nbclient's `coalesce_streams` merges every stream of a name in a cell and puts stdout before
stderr, which JupyterLab does not.) The kernel flushes stdout and stderr each on its own timer (ipykernel's OutStream),
so where a cell prints to both, their order can change from run to run: a chapter prints to one of them (a demo run's
notes, which mint writes to stderr, go to stdout with `contextlib.redirect_stderr(sys.stdout)`).
Widget states are stored, so the widgets render in a static view: those of this run's widgets that are still open, as
JupyterLab's widget manager keeps them (a closed widget's model is dropped; nothing is kept from an earlier run). Then
`nbdev-clean` normalises the files, and `tools/check_outputs.py` checks them (hygiene and evidence: see its docstring).

The kernels never inherit `MPLBACKEND` (a non-interactive backend such as Agg draws nothing into the notebook, and
the stored figures would be lost). Each notebook's run time is recorded in `bench/results/notebook_times.json`
(with the date, the CPU count and how many notebooks ran at once), and the Run All time of each part of the course
is printed from those records (`tools/course.py`). README.md's table of those times is rewritten only when this run
ran every chapter of a part (or with `--readme`): running one chapter leaves README.md alone. Time a part with `-j 1`
on a quiet machine: notebooks that run side by side share the cores."""
import argparse, copy, datetime, json, os, re, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from check_outputs import GPU_SKIP
from course import PARTS, TIMES, chapters, format_totals, recorded_times, update_readme


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


def store_skip_notes(nb) -> int:
    "Set the stored output of every `#| gpu` cell that did not fail to the skip note; returns how many were set."
    n = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or "gpu" not in directives(cell): continue
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])): continue
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=GPU_SKIP)]
        n += 1
    return n


def complete_parts(ran) -> list:
    "The parts of the course whose every chapter is among `ran` (paths of notebooks that ran without failing)."
    names = {Path(p).resolve() for p in ran}
    return [part for part in PARTS if chapters(part) and all(p.resolve() in names for p in chapters(part))]


_SPECIAL = re.compile(r"[\n\b\r]")


def lab_text(new: str, index: int = 0, text: str = "") -> tuple:
    """`new` written into the stream text `text` at `index`, as JupyterLab's output area writes it (`Private.processText` in
    @jupyterlab/outputarea's model): a cursor that `\r` moves to the start of its line and `\b` moves back one character,
    deleting it (and the one under the cursor); characters overwrite what is under the cursor; `\n` adds a line break
    at the end and moves there. Returns the new text and cursor."""
    if not _SPECIAL.search(new): return text[:index] + new + text[index + len(new):], index + len(new)
    r, o = index, 0
    while True:
        m = _SPECIAL.search(new, o)
        piece = new[o:m.start() if m else len(new)]
        text, r = text[:r] + piece + text[r + len(piece):], r + len(piece)
        if m is None: return text, r
        o, ch = m.start() + 1, new[m.start()]
        if ch == "\b":
            if r > 0 and text[r - 1] != "\n": text, r = text[:r - 1] + text[r + 1:], r - 1
        elif ch == "\r":
            while r > 0 and text[r - 1] != "\n": r -= 1
        else: text, r = text + "\n", len(text) + 1


def lab_outputs(outputs: list) -> list:
    """`outputs` (in the order they arrived) as JupyterLab's output area stores them (`OutputAreaModel._add`): a stream
    output is merged into the output before it only when that is a stream of the same name; any other output, or a stream
    of the other name, starts a new one. Stream text goes through `lab_text`, its cursor carried across a merge."""
    out, cursor = [], 0
    for o in outputs:
        if o.get("output_type") == "stream":
            t = o["text"] if isinstance(o["text"], str) else "".join(o["text"])
            last = out[-1] if out else None
            if last is not None and last.get("output_type") == "stream" and last.get("name") == o.get("name"):
                last["text"], cursor = lab_text(t, cursor, last["text"]); continue
            o = copy.deepcopy(o)
            o["text"], cursor = lab_text(t)
        out.append(o)
    return out


class KeepSkipped(NotebookClient):
    "A client that does not run some cells (`#| eval: false`, the flags of --skip) and keeps their stored outputs."
    skip_flags: set = set()
    def skipped(self, cell) -> bool:
        d = directives(cell)
        return d.get("eval", "").lower() == "false" or bool(self.skip_flags & d.keys())
    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == "code" and self.skipped(cell): return cell
        try: return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            if cell.cell_type == "code": self.store_as_lab(cell, cell_index)                   # also when the cell failed
    def store_as_lab(self, cell, cell_index: int):
        "The cell's outputs merged as JupyterLab merges them (`lab_outputs`); a later `update_display` still finds its display."
        old = cell.get("outputs", [])
        cell.outputs = lab_outputs(old)
        where = {id(o): i for i, o in enumerate(cell.outputs)}             # displays are kept as they are: only streams merge
        for cells in self._display_id_map.values():
            if cell_index in cells:
                cells[cell_index] = [where[id(old[i])] for i in cells[cell_index] if i < len(old) and id(old[i]) in where]
    def handle_comm_msg(self, outs, msg, cell_index):
        "A widget closed in the kernel (a finished `tqdm.auto` bar) leaves the stored state, as JupyterLab's widget manager drops its model."
        super().handle_comm_msg(outs, msg, cell_index)
        if msg["msg_type"] == "comm_close":
            self.widget_state.pop(msg["content"]["comm_id"], None)
            self.widget_buffers.pop(msg["content"]["comm_id"], None)


def run_one(path: Path, skip_flags: set, timeout: int) -> tuple:
    "Execute `path` in place; returns (path, seconds, error or None)."
    os.environ.pop("MPLBACKEND", None)                      # the kernel starts with this environment: figures are drawn
    t0 = time.time()
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)                        # the state of this run's widgets only (a run that makes none stores none)
    client = KeepSkipped(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                         store_widget_state=True, record_timing=False, coalesce_streams=False)   # streams merged as JupyterLab does: lab_outputs
    client.skip_flags = skip_flags
    try:
        client.execute()
        err = None
    except Exception as e:                                  # the notebook stops at its first failing cell
        err = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
    store_skip_notes(nb)                                    # a GPU's output is in its record; the notebook stores the note
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
    ap.add_argument("--readme", action="store_true", help="rewrite README.md's Run All table even when no whole part ran")
    a = ap.parse_args(argv)
    os.environ.pop("MPLBACKEND", None)                      # the kernels start with this environment: figures are drawn
    paths = [Path(p).resolve() for p in a.notebooks] or sorted((ROOT / "nbs").glob("*.ipynb"))
    sys.path.insert(0, str(ROOT))
    cudasim = os.environ.get("NUMBA_ENABLE_CUDASIM")
    from mint.core import gpu_available                     # also switches the simulator on here when there is no GPU
    skip, gpu = set(a.skip.split()) - {"gpu"}, gpu_available()
    # ... in this process only: the kernels start with the environment a reader's JupyterLab gives them, and each chapter's
    # own first import of mint switches the simulator on there (inherited, the switch hid that chapter 12 imported numba
    # first and failed in a reader's kernel: tests/test_jupyterlab_run_all.py)
    if cudasim is None: os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    print(f"run_notebooks: {len(paths)} notebook(s), {a.jobs} at a time; every cell runs except cells marked "
          f"{', '.join('#| ' + f for f in sorted(skip | {'eval: false'}))} (their stored outputs are kept); `#| gpu` cells "
          + ("run on the GPU and update their records" if gpu else "print their skip note (no GPU)"))
    t0, failed, ran = time.time(), [], []
    with ThreadPoolExecutor(a.jobs) as ex:
        for path, secs, err in ex.map(lambda p: run_one(p, skip, a.timeout), paths):
            print(f"{path.name:28s} {secs:6.1f} s  {'ok' if err is None else 'FAILED: ' + err}", flush=True)
            if err: failed.append(path.name)
            else:
                ran.append(path)
                record_time(path.stem, {"seconds": round(secs, 1), "date": datetime.date.today().isoformat(),
                                        "cpus": os.cpu_count(), "jobs": min(a.jobs, len(paths)),
                                        "gpu": gpu, "load": round(os.getloadavg()[0], 1)})
    print(format_totals())
    whole = complete_parts(ran)
    if whole or a.readme:
        if update_readme(): print(f"run_notebooks: README.md's table of Run All times updated (ran all of part {', '.join(whole) or '-'})")
    else:
        print("run_notebooks: no whole part of the course ran: README.md's table left as it is (--readme rewrites it)")
    subprocess.run(["nbdev-clean"], cwd=ROOT, check=True)
    print(f"run_notebooks: {len(paths) - len(failed)} of {len(paths)} notebook(s) ran in {time.time() - t0:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    check = subprocess.run([sys.executable, str(ROOT / "tools" / "check_outputs.py"), *map(str, paths)])
    return 1 if failed or check.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
