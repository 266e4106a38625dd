"""tools/check_outputs.py: what a stored output may not show, and the committed notebooks pass it."""
import importlib.util, json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("check_outputs", ROOT / "tools" / "check_outputs.py")
check_outputs = importlib.util.module_from_spec(spec); spec.loader.exec_module(check_outputs)


KERNEL = {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}}


def notebook(tmp_path, *outputs, metadata=KERNEL, source="x", cells=None) -> Path:
    "A one-cell notebook (`source`, `outputs`), or the notebook of `cells` given as (type, source, outputs)."
    cells = cells or [("code", source, list(outputs))]
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps({"cells": [{"cell_type": k, "source": s, "metadata": {}, **({"outputs": o} if k == "code" else {})}
                                       for k, s, o in cells], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))
    return p


def whats(path) -> list: return [w for _, w, _ in check_outputs.problems(path)]


def stream(text, name="stdout"): return {"output_type": "stream", "name": name, "text": text}


def test_flags_paths_ansi_warnings_and_errors(tmp_path):
    bad = [stream("/tmp/tmpq77rywri/b.yml: malformed YAML\n"), stream("saved /home/ann/runs/best.safetensors\n"),
           stream("\x1b[2K\rtile 16\n"), stream("x.py:28: RuntimeWarning: invalid value\n", "stderr"),
           {"output_type": "execute_result", "data": {"text/plain": "C:\\\\Users\\\\ann\\\\x"}, "metadata": {}},
           {"output_type": "error", "ename": "ValueError", "evalue": "boom", "traceback": []}]
    for out in bad:
        assert check_outputs.problems(notebook(tmp_path, out)), out


def test_flags_a_cell_that_stores_stdout_and_stderr(tmp_path):
    "Their order changes from one Run All to the next (each stream flushes on its own timer)."
    assert whats(notebook(tmp_path, stream("saved step 3\n", "stderr"), stream("resumed\n"))) == ["stdout and stderr in one cell"]
    assert whats(notebook(tmp_path, stream("note\n", "stderr"))) == []


def test_flags_a_notebook_without_a_kernelspec(tmp_path):
    "Jupyter opens such a notebook behind a 'Select Kernel' dialog."
    assert [w for _, w, _ in check_outputs.problems(notebook(tmp_path, metadata={}))] == ["no kernelspec"]


def test_passes_what_a_chapter_may_print(tmp_path):
    ok = [stream("../data/fixtures/formats/belle/train.json (belle, chat): kept 6 sample(s)\n"),
          stream("…/b.yml:5: malformed YAML\n"), stream("runs/_fit_demo/report.html: 40 KiB\n"),
          {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<IPython.core.display.Image object>"},
           "metadata": {}}]
    assert check_outputs.problems(notebook(tmp_path, *ok)) == []


def test_the_committed_notebooks_are_clean(capsys):
    assert check_outputs.main([]) == 0, capsys.readouterr().out


PNG = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}, "metadata": {}}


def test_flags_an_output_under_an_export_cell_that_only_defines(tmp_path):
    src = '#| export\nimport numpy as np\nTILE = 16\ndef f(x):\n    "doc"\n    print(x)\n'
    assert whats(notebook(tmp_path, stream("stale\n"), source=src)) == ["output under an export cell that only defines"]
    assert whats(notebook(tmp_path, source=src)) == []
    # an export cell that runs something at import (it may print) may keep its output
    assert whats(notebook(tmp_path, stream("mint: simulator on\n"), source="#| export\nuse_simulator()")) == []


def test_flags_a_cell_that_prints_displays_or_draws_without_output(tmp_path):
    for src in ('print("loss", 3.2)', "for i in range(2):\n    display(i)", "run.plot()", "plt.plot([1, 2]); plt.show()",
                "show_gpu_record('04_matmul/timing')"):
        assert whats(notebook(tmp_path, source=src)) == ["no output under a cell that prints, displays or draws"], src
    # not when it may print nothing (a branch), when it does not run, or when it is a skipped GPU cell
    for src in ('if bad: print("bad")', '#| eval: false\nprint(1)', '#| gpu\ntest_eq(f(), 1)', 'def f():\n    print(1)',
                "f = plot_history(h)\ntest_eq(len(f.axes), 2)"):          # a figure made and checked, not shown
        assert whats(notebook(tmp_path, source=src)) == [], src
    assert whats(notebook(tmp_path, stream("loss 3.2\n"), source='print("loss", 3.2)')) == []


def test_flags_a_notebook_that_stores_fewer_figures_than_it_draws(tmp_path):
    "A figure lost to MPLBACKEND=Agg: the cell printed something, but its figure is gone."
    src = 'print("curve"); plot_history(h)'
    assert whats(notebook(tmp_path, stream("curve\n"), source=src)) == ["no figure stored under a cell that draws"]
    assert whats(notebook(tmp_path, stream("curve\n"), PNG, source=src)) == []


def test_flags_prose_quoting_a_number_the_cell_below_prints_differently(tmp_path):
    cells = lambda prose: [("markdown", prose, None), ("code", "print(t)", [stream("forward + backward 0.52 ms\n")])]
    bad = notebook(tmp_path, cells=cells("On an H200: forward + backward ≈ 0.33 ms."))
    assert whats(bad) == ["prose quotes a number the cell below prints differently"]
    assert "0.33 ms" in check_outputs.problems(bad)[0][2]
    for ok in ("about 0.5 ms (rounded as the prose rounds)", "0.52 ms", "16×16 tiles, 3 layers", "a 2 MiB buffer (no MiB printed)"):
        assert whats(notebook(tmp_path, cells=cells(ok))) == [], ok


SKIP_NOTE = stream(check_outputs.GPU_SKIP)
GPU_CELL = '#| gpu\nfrom mint.counters import gpu_record\nwith gpu_record("nb/timing"):\n    print(f"{t:.2f} ms")'
SHOW_CELL = 'show_gpu_record("nb/timing");'


def test_a_gpu_cell_stores_only_the_skip_note(tmp_path):
    "A Run All without a GPU replaces whatever a `#| gpu` cell stores by the skip note: storing GPU numbers there fails."
    ok = lambda *outs: [("code", GPU_CELL, list(outs)), ("code", SHOW_CELL, [stream("measured on NVIDIA H200, 2026-12-02 (...):\n0.41 ms\n")])]
    assert whats(notebook(tmp_path, cells=ok(SKIP_NOTE))) == []
    assert whats(notebook(tmp_path, cells=ok())) == []                      # never run: nothing stored
    for bad in ([stream("0.41 ms\n")], [SKIP_NOTE, stream("0.41 ms\n")], [stream(check_outputs.GPU_SKIP, "stderr")],
                [stream("skipped\n")], [PNG]):
        assert whats(notebook(tmp_path, cells=ok(*bad))) == ["a `#| gpu` cell stores more than the skip note (move it into its gpu_record)"], bad
    # a GPU cell that prints nothing still stores only the note
    assert whats(notebook(tmp_path, stream("ok\n"), source="#| gpu\ntest_eq(f(), 1)")) == \
        ["a `#| gpu` cell stores more than the skip note (move it into its gpu_record)"]


def test_a_printing_gpu_cell_records_and_the_cell_after_shows_the_record(tmp_path):
    "What a `#| gpu` cell prints must reach the reader without a GPU: a gpu_record, and a show_gpu_record cell right after it."
    show = ("code", SHOW_CELL, [stream("not measured on a GPU yet\n")])
    assert whats(notebook(tmp_path, cells=[("code", GPU_CELL, [SKIP_NOTE]), show])) == []
    unwrapped = [("code", '#| gpu\nprint(f"{t:.2f} ms")', [SKIP_NOTE]), show]
    assert whats(notebook(tmp_path, cells=unwrapped)) == ["a `#| gpu` cell that prints is not wrapped in `with gpu_record(...)`"]
    for src in ('#| gpu\nfor n in (1, 2):\n    display(n)', '#| gpu\nif ok:\n    print(1)', '#| gpu\nplt.plot([1, 2]); plt.show()'):
        assert "a `#| gpu` cell that prints is not wrapped in `with gpu_record(...)`" in whats(notebook(tmp_path, cells=[("code", src, [])])), src
    no_show = "no show_gpu_record cell right after a `#| gpu` cell that records"
    assert whats(notebook(tmp_path, cells=[("code", GPU_CELL, [SKIP_NOTE])])) == [no_show]                    # last cell
    assert whats(notebook(tmp_path, cells=[("code", GPU_CELL, [SKIP_NOTE]), ("markdown", "Then:", None), show])) == [no_show]
    other_key = ("code", 'show_gpu_record("nb/other");', [stream("not measured on a GPU yet\n")])
    assert whats(notebook(tmp_path, cells=[("code", GPU_CELL, [SKIP_NOTE]), other_key])) == [no_show]
    wrong_chapter = [("code", GPU_CELL.replace("nb/", "04_matmul/"), [SKIP_NOTE]), ("code", SHOW_CELL.replace("nb/", "04_matmul/"), [stream("measured on …\n")])]
    assert whats(notebook(tmp_path, cells=wrong_chapter)) == ["a gpu_record key names another chapter"]


def test_the_gpu_checks_fire_on_a_real_chapter_with_its_gpu_outputs_back(tmp_path):
    "Chapter 21 as it was stored before issue 21's fix (the H200 output in the cell, no record) fails both GPU rules."
    nb = json.loads((ROOT / "nbs" / "21_flash_attention.ipynb").read_text(encoding="utf-8"))
    i = next(k for k, c in enumerate(nb["cells"]) if "gpu_record(\"21_flash_attention/decode\")" in "".join(c["source"]))
    cell = nb["cells"][i]
    cell["outputs"] = [stream("  1  8  16          128 |       115.8 | 4.3e-07\n")]
    p = tmp_path / "21_flash_attention.ipynb"; p.write_text(json.dumps(nb))
    assert "a `#| gpu` cell stores more than the skip note (move it into its gpu_record)" in whats(p)
    del nb["cells"][i + 1]                                                  # the show cell
    p.write_text(json.dumps(nb))
    assert "no show_gpu_record cell right after a `#| gpu` cell that records" in whats(p)


def test_the_skip_note_is_what_a_gpu_cell_prints_without_a_gpu(capsys):
    "check_outputs' GPU_SKIP is exactly the line mint.core.gpu_cell_skipped makes a `#| gpu` cell print."
    pytest = __import__("pytest")
    from mint.core import gpu_available, gpu_cell_skipped
    if gpu_available(): pytest.skip("on a GPU the cell runs")
    exec("".join(gpu_cell_skipped(["#| gpu\n", "print('on the GPU')\n"])))
    assert capsys.readouterr().out == check_outputs.GPU_SKIP


def test_the_new_checks_fire_on_a_real_chapter_with_its_figures_wiped(tmp_path):
    "What MPLBACKEND=Agg did to 06_rope: a stored notebook whose drawing cell lost its figure fails."
    nb = json.loads((ROOT / "nbs" / "11_optim.ipynb").read_text(encoding="utf-8"))
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            c["outputs"] = [o for o in c["outputs"] if "image/png" not in o.get("data", {})]
    p = tmp_path / "wiped.ipynb"; p.write_text(json.dumps(nb))
    assert any("draws" in w for w in whats(p))


# --- no import circles in mint/ ---------------------------------------------------------------------------------
import ast

# Circles another helper is removing; the lead empties this set when their branch is merged.
PENDING_CIRCLES: set = set()   # none: evaluate <-> pipeline was removed (the units and floors live in mint.pipeline, chapter 37)


def import_graph(pkg: Path = ROOT / "mint") -> dict:
    "module -> the mint modules it imports anywhere in its file (top level or inside a function: both are edges)."
    mods = {p.stem for p in pkg.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for m in mods:
        deps = set()
        for n in ast.walk(ast.parse((pkg / f"{m}.py").read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom):
                mod = n.module or ""
                if n.level == 1: deps |= {mod.split(".")[0]} if mod else {a.name for a in n.names}
                elif mod == "mint": deps |= {a.name for a in n.names}
                elif mod.startswith("mint."): deps.add(mod.split(".")[1])
            elif isinstance(n, ast.Import):
                deps |= {a.name.split(".")[1] for a in n.names if a.name.startswith("mint.")}
        graph[m] = (deps & mods) - {m}
    return graph


def circles(graph: dict) -> list:
    "The strongly connected components of more than one module (Tarjan), each as a frozenset."
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop(); on.discard(w); comp.add(w)
                if w == v: break
            if len(comp) > 1: out.append(frozenset(comp))
    for v in sorted(graph):
        if v not in index: visit(v)
    return out


def test_the_circle_finder_finds_a_circle_through_a_function_level_import(tmp_path):
    (tmp_path / "a.py").write_text("from .b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from mint.c import y\n")
    (tmp_path / "c.py").write_text("import mint.a\n")
    (tmp_path / "d.py").write_text("from .a import z\n")
    assert circles(import_graph(tmp_path)) == [frozenset({"a", "b", "c"})]


def test_mint_has_no_import_circles():
    found = set(circles(import_graph()))
    new = found - PENDING_CIRCLES
    assert not new, f"import circles in mint/: {[sorted(c) for c in new]}: move the piece that needs the other module into it"


# --- tools/run_notebooks.py and tools/course.py -------------------------------------------------------------------
import sys
sys.path.insert(0, str(ROOT / "tools"))
import course


def test_parts_and_their_totals():
    assert [course.part_of(n) for n in ("04_matmul", "nbs/23_gpu_train.ipynb", "49_cli", "index", "_scratch", "20a_cublas", "36a_controls")] == ["I", "II", "III", None, None, "II", "III"]
    times = {"00_core": {"seconds": 30.0}, "01_vocab": {"seconds": 90.0}, "20b_gemm_ladder": {"seconds": 60.0}}
    rows = {r[0]: r for r in course.part_totals(times)}
    assert rows["I"][3:] == (2, 120.0) and rows["II"][3:] == (1, 60.0) and rows["III"][3] == 0
    assert "2.0 min" in course.format_totals(list(rows.values()))


def test_run_notebooks_never_inherits_mplbackend(tmp_path, monkeypatch):
    "With MPLBACKEND=Agg in the environment (as bench/gpu_session.sh once had), the stored notebook still has its figure."
    pytest = __import__("pytest")
    pytest.importorskip("nbclient")
    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "tools" / "run_notebooks.py")
    rn = importlib.util.module_from_spec(spec); spec.loader.exec_module(rn)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    p = notebook(tmp_path, source="import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0]); plt.show()")
    _, secs, err = rn.run_one(p, set(), 300)
    assert err is None, err
    outs = json.loads(p.read_text())["cells"][0]["outputs"]
    assert any("image/png" in o.get("data", {}) for o in outs), outs


def _run_notebooks():
    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "tools" / "run_notebooks.py")
    rn = importlib.util.module_from_spec(spec); spec.loader.exec_module(rn)
    return rn


def test_run_notebooks_stores_the_skip_note_under_gpu_cells(tmp_path):
    "A GPU run's outputs go into the records: the notebook keeps the skip note, as a Run All without a GPU stores it."
    nbformat = __import__("pytest").importorskip("nbformat")
    rn = _run_notebooks()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('#| gpu\nwith gpu_record("x/t"):\n    print(1)'),
                                         nbformat.v4.new_code_cell("#| gpu\nboom()"), nbformat.v4.new_code_cell("print(2)")])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="0.41 ms on the H200\n")]
    nb.cells[1].outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="boom", traceback=[])]
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    assert rn.store_skip_notes(nb) == 1
    assert nb.cells[0].outputs[0]["text"] == check_outputs.GPU_SKIP
    assert nb.cells[1].outputs[0]["output_type"] == "error" and nb.cells[2].outputs[0]["text"] == "2\n"   # a failure stays visible


def test_run_notebooks_on_a_cpu_stores_what_run_all_stores(tmp_path):
    "Without a GPU the `#| gpu` cell runs and prints its skip note; whatever it stored before (GPU numbers) is replaced."
    pytest = __import__("pytest")
    pytest.importorskip("nbclient")
    from mint.core import gpu_available
    if gpu_available(): pytest.skip("on a GPU the cell runs for real")
    rn = _run_notebooks()
    p = notebook(tmp_path, cells=[("code", "import mint.core", []),
                                  ("code", '#| gpu\nprint("on the GPU")', [stream("0.41 ms on the H200\n")])])
    _, _, err = rn.run_one(p, set(), 300)
    assert err is None, err
    outs = json.loads(p.read_text())["cells"][1]["outputs"]
    assert len(outs) == 1 and "".join(outs[0]["text"]) == check_outputs.GPU_SKIP, outs
    assert not [w for _, w, _ in check_outputs.gpu_problems(json.loads(p.read_text())) if "stores" in w]


def test_run_notebooks_merges_streams_as_jupyterlab_does():
    "Only a stream right after a stream of its name merges (JupyterLab's OutputAreaModel._add), with \\r and \\b applied."
    rn = _run_notebooks()
    fig = {"output_type": "display_data", "data": {"image/png": "iVBOR"}, "metadata": {}}
    err = lambda t: stream(t, "stderr")
    kinds = lambda outs: [(o["output_type"], o.get("name"), o.get("text")) for o in outs]
    assert kinds(rn.lab_outputs([stream("a\n"), stream("b\n"), stream("c")])) == [("stream", "stdout", "a\nb\nc")]
    assert kinds(rn.lab_outputs([stream("a\n"), fig, stream("b\n")])) == \
        [("stream", "stdout", "a\n"), ("display_data", None, None), ("stream", "stdout", "b\n")]
    assert kinds(rn.lab_outputs([stream("a\n"), err("w\n"), stream("b\n")])) == \
        [("stream", "stdout", "a\n"), ("stream", "stderr", "w\n"), ("stream", "stdout", "b\n")]
    assert kinds(rn.lab_outputs([err("w\n"), err("x\n"), stream("b\n"), stream("c\n")])) == \
        [("stream", "stderr", "w\nx\n"), ("stream", "stdout", "b\nc\n")]      # stderr first, as it came: no reordering
    # \r goes back to the line's start and what follows overwrites; the cursor is carried across a merge
    assert kinds(rn.lab_outputs([stream("10%\r"), stream("50%\r"), stream("done\n")])) == [("stream", "stdout", "done\n")]
    assert rn.lab_outputs([stream("step 10/100\r"), stream("done\n")])[0]["text"] == "done 10/100\n"   # as in a terminal
    assert rn.lab_outputs([stream("abc\b\bX\n"), stream("x\r\n")])[0]["text"] == "aX\nx\n"
    assert rn.lab_outputs([stream("a\rb"), fig, stream("\rc")])[2]["text"] == "c"       # a new output starts a new cursor
    assert rn.lab_outputs([stream(["a\n", "b\n"]), stream("c\n")])[0]["text"] == "a\nb\nc\n"   # text as a list of lines
    outs = [stream("a"), stream("b")]
    rn.lab_outputs(outs); assert outs[0]["text"] == "a"                                   # the outputs given are not changed


def test_run_notebooks_stores_the_open_widgets_of_this_run_only(tmp_path):
    "As JupyterLab's widget manager: a widget closed in the kernel (a finished tqdm bar) is not stored, nor an earlier run's state."
    pytest = __import__("pytest")
    pytest.importorskip("nbclient"); pytest.importorskip("ipywidgets")
    rn = _run_notebooks()
    stale = {"application/vnd.jupyter.widget-state+json": {"state": {"0" * 32: {"model_name": "LayoutModel", "state": {}}},
                                                           "version_major": 2, "version_minor": 0}}
    src = ("import ipywidgets as W\nfrom mint.core import stable_widget_ids\nstable_widget_ids()\n"
           "bar = W.IntProgress(3); bar.close()\nW.Button(description='kept')")
    p = notebook(tmp_path, source=src, metadata={**KERNEL, "widgets": stale})
    _, _, err = rn.run_one(p, set(), 300)
    assert err is None, err
    states = json.loads(p.read_text())["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    names = sorted(s["model_name"] for s in states.values())   # the bar's layout and style models stay open, as in JupyterLab
    assert names == ["ButtonModel", "ButtonStyleModel", "LayoutModel", "LayoutModel", "ProgressStyleModel"], names
    assert "0" * 32 not in states
    p = notebook(tmp_path, source="1 + 1", metadata={**KERNEL, "widgets": stale})     # no widget made: none stored
    _, _, err = rn.run_one(p, set(), 300)
    assert err is None and "widgets" not in json.loads(p.read_text())["metadata"]


def test_run_notebooks_rewrites_the_readme_only_after_a_whole_part():
    rn = _run_notebooks()
    assert rn.complete_parts([ROOT / "nbs" / "07_rmsnorm.ipynb"]) == []
    assert rn.complete_parts(course.chapters("II")) == ["II"]
    assert rn.complete_parts(course.chapters("I") + course.chapters("II")[1:]) == ["I"]


# --- scratch folders are removed -----------------------------------------------------------------------------------
import re

# A folder or file made by these and never removed stays behind (a notebook's mkdtemp, a failed test's temp file).
# Library code in mint/ (and the notebooks' export cells) removes what it makes itself; everything else uses
# mint.core.temp_dir (removed when the process ends, also in nbdev-test's workers), `with TemporaryDirectory()`,
# or pytest's tmp_path.
LEAKS = re.compile(r"\bmkdtemp\(|\bmkstemp\(|NamedTemporaryFile\([^)]*delete\s*=\s*False|(?<!with )\b(?:tempfile|_tf)\.TemporaryDirectory\(")


def scratch_leaks(root: Path = ROOT) -> list:
    "(file, line) of every scratch folder or file made outside mint/ and export cells without a way to be removed."
    found = []
    for nb in sorted((root / "nbs").glob("*.ipynb")):
        for i, c in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            src = "".join(c["source"])
            if c["cell_type"] == "code" and not src.startswith("#| export"):
                found += [(f"{nb.name} cell {i}", l.strip()) for l in src.splitlines() if LEAKS.search(l)]
    for folder in ("tests", "tools", "bench"):
        for f in sorted((root / folder).rglob("*.py")):
            if f.resolve() == Path(__file__).resolve(): continue        # this file: the finder's own examples
            found += [(str(f.relative_to(root)), l.strip()) for l in f.read_text(encoding="utf-8").splitlines() if LEAKS.search(l)]
    return found


def test_the_leak_finder_finds_each_kind(tmp_path):
    (tmp_path / "nbs").mkdir(); (tmp_path / "bench").mkdir()
    cells = [{"cell_type": "code", "source": s, "metadata": {}, "outputs": []} for s in
             ("d = Path(tempfile.mkdtemp())", "#| export\ndef f(): return tempfile.mkdtemp()", "with tempfile.TemporaryDirectory() as t: pass",
              "t = tempfile.TemporaryDirectory()", "d = temp_dir()")]
    (tmp_path / "nbs" / "x.ipynb").write_text(json.dumps({"cells": cells}))
    (tmp_path / "bench" / "b.py").write_text("f = tempfile.NamedTemporaryFile(suffix='.json', delete=False)\nfd, p = tempfile.mkstemp()\n")
    assert [w for w, _ in scratch_leaks(tmp_path)] == ["x.ipynb cell 0", "x.ipynb cell 3", "bench/b.py", "bench/b.py"]


def test_no_scratch_folder_is_left_behind():
    assert not scratch_leaks(), f"scratch folders or files never removed (use mint.core.temp_dir): {scratch_leaks()}"


def test_poetry_corpus_reads_the_poems_and_leaves_out_the_rest(tmp_path):
    "bench/poetry_corpus.py (the budget race's larger corpus): poems from every collection's JSON, however nested, as 'title author' + lines; tone patterns, ranks and biographies left out."
    import io, tarfile, pytest
    spec = importlib.util.spec_from_file_location("poetry_corpus", ROOT / "bench" / "poetry_corpus.py")
    pc = importlib.util.module_from_spec(spec); spec.loader.exec_module(pc)
    files = {"package/dist/quantangshi/poet.tang.0.json": [{"title": "靜夜思", "author": "李白", "paragraphs": ["床前明月光，疑是地上霜。", "舉頭望明月，低頭思故鄉。"]}],
             "package/dist/shijing/shijing.json": {"国风": [{"title": "关雎", "content": [["关关雎鸠，在河之洲。"]]}]},
             "package/dist/quantangshi/authors.tang.json": [{"name": "李白", "desc": "字太白", "paragraphs": ["不是诗"]}],
             "package/dist/strains/x.json": [{"paragraphs": ["平平仄仄"]}], "package/README.md": "# x"}
    tgz = tmp_path / "p.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name, v in files.items():
            data = (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)).encode("utf-8")
            info = tarfile.TarInfo(name); info.size = len(data); tar.addfile(info, io.BytesIO(data))
    blocks, per = pc.poems(tgz)
    assert blocks == ["靜夜思 李白\n床前明月光，疑是地上霜。\n舉頭望明月，低頭思故鄉。\n\n", "关雎\n关关雎鸠，在河之洲。\n\n"]
    assert set(per) == {"quantangshi", "shijing"}
    with pytest.raises(SystemExit, match="not chinese-poetry 2.0.1"): pc.main([str(tgz), str(tmp_path / "out.txt")])
    assert not (tmp_path / "out.txt").exists()
