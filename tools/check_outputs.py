#!/usr/bin/env python3
"""Fail if a notebook's stored outputs are not the evidence a reader should see. Run by .ci/run;
`python tools/check_outputs.py [NOTEBOOK ...]` (default: nbs/*.ipynb).

Hygiene: no machine path, ANSI escape code, warning or error in an output; a kernelspec in the metadata; no cell
that stores both stdout and stderr (the kernel flushes each stream on its own timer, so their order in the notebook
changes from one Run All to the next: print a cell's notes and results on one stream).
GPU cells (`#| gpu`): a GPU result is data, not a stored output. Without a GPU the cell prints one skip note (mint.core's
`gpu_cell_skipped`), so a Run All on a CPU stores exactly that note there; the check accepts that note or nothing:
- a `#| gpu` cell stores nothing or the skip note, nothing else (the evidence lives in its record);
- a `#| gpu` cell that prints, displays or draws runs its body inside `with gpu_record("CHAPTER/NAME"):` (CHAPTER the
  notebook's name), which stores what it prints in bench/results/gpu_cells/CHAPTER.json on a GPU;
- the cell right after such a cell calls `show_gpu_record("CHAPTER/NAME")` with the same key (it runs anywhere and
  prints the record under "measured on DEVICE, DATE").
Evidence (each cell that runs — not `eval: false`, not a `#| gpu` cell):
- an export cell that only defines (functions, classes, imports, constants) stores no output;
- a cell that prints, displays or draws stores an output;
- a cell that draws (pyplot, or a `plot…`/`imshow` figure as its last expression or displayed) stores a figure;
- a number with a unit quoted in prose (`0.33 ms`, `5.79 nats/char`, `31 TFLOP/s`) agrees with the outputs of the
  code cells below it (up to the next prose), when those print numbers with the same unit.

Stored outputs come from a clean run (`python tools/run_notebooks.py`): what the chapter prints, nothing of the
machine it ran on."""
import ast, json, re, sys
from pathlib import Path

CHECKS = [
    ("machine path", re.compile(r"(?<![\w.~])(/(work|home|root|tmp|Users|private|mnt|opt|var/folders)/|[A-Za-z]:\\\\Users\\\\)")),
    ("ANSI escape code", re.compile(r"\x1b\[")),
    ("warning", re.compile(r"\b[A-Z]\w*Warning\b|^\s*warnings?\.warn", re.M)),
]
TEXT_TYPES = ("text/plain", "text/html", "text/markdown", "text/latex", "application/javascript")
IMAGE_TYPES = ("image/png", "image/svg+xml", "image/jpeg")
PRINTS = {"print", "display", "pprint", "show_gpu_record"}
DRAWS = re.compile(r"^(plot\w*|imshow|show_figure|subplots)$")
UNITS = r"ms|µs|us|ns|TFLOP/s|GFLOP/s|GB/s|tokens/s|nats/char|MiB|KiB|GiB|%"
QUOTED = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(" + UNITS + r")(?![\w/])")
GPU_SKIP = ("skipped: this `#| gpu` cell needs a real CUDA GPU (on a GPU host it runs; `nbdev-test --flags gpu` tests it)\n")
"What a `#| gpu` cell prints without a GPU (mint.core.gpu_cell_skipped; tests/test_tools.py checks the two agree)."


def output_texts(out: dict):
    "(kind, text) of each textual part of one stored output."
    if out.get("output_type") == "stream":
        yield out.get("name", "stream"), "".join(out.get("text", ""))
    elif out.get("output_type") == "error":
        yield "error", f"{out.get('ename')}: {out.get('evalue')}"
    for k in TEXT_TYPES:
        v = out.get("data", {}).get(k)
        if v is not None: yield k, "".join(v) if isinstance(v, list) else str(v)


def directives(source: str) -> dict:
    "The `#| key value` lines at the top of a code cell."
    out = {}
    for line in source.splitlines():
        s = line.strip()
        if not s: continue
        if not s.startswith("#|"): break
        k, _, v = s[2:].strip().partition(" ")
        out[k.rstrip(":")] = v.strip()
    return out


def _code(source: str):
    "The cell's Python (IPython magics and shell lines blanked), parsed; None when it does not parse."
    py = "\n".join("" if l.lstrip().startswith(("%", "!")) else l for l in source.splitlines())
    try: return ast.parse(py)
    except SyntaxError: return None


def _unconditional_calls(tree) -> set:
    "Names of the functions a cell surely calls: top level and inside for/while/with, not inside def, class, if or try."
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.Try, ast.Lambda)): continue
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
        todo.extend(n for n in ast.iter_child_nodes(node) if not isinstance(n, ast.expr_context))
    return names


def _draws(tree, calls: set) -> bool:
    """True when the cell shows a figure: pyplot draws (`plt.…`, shown at the end of the cell), a figure-making call is the
    cell's last expression (its value is displayed), or a figure-making call with `display`/`show`."""
    makes = any(DRAWS.match(c) for c in calls)
    pyplot = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                 and n.func.value.id == "plt" and n.func.attr not in ("close", "rcParams", "style") for n in ast.walk(tree))
    last = tree.body[-1] if tree.body else None
    shown = isinstance(last, ast.Expr) and any(isinstance(n, ast.Call) and DRAWS.match(
        n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")) for n in ast.walk(last))
    return pyplot or shown or (makes and bool(calls & {"display", "show"}))


def _only_defines(tree) -> bool:
    "True when every top-level statement defines something (def, class, import, an assignment, a docstring)."
    ok = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)
    for s in tree.body:
        if isinstance(s, ok): continue
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant): continue
        return False
    return True


def _numbers(text: str) -> dict:
    "unit -> [(value, decimals)] of the numbers with a unit in `text`."
    found = {}
    for m in QUOTED.finditer(text):
        num = m.group(1).replace(",", "")
        try: v = float(num)
        except ValueError: continue
        found.setdefault(m.group(2).replace("us", "µs"), []).append((v, len(num.partition(".")[2])))
    return found


def _agrees(value: float, decimals: int, printed: list) -> bool:
    "A quoted number agrees with a printed one when the printed one, rounded as the prose rounds, is the same."
    return any(abs(round(p, decimals) - value) <= 10 ** -decimals / 2 + 1e-12 for p, _ in printed)


def _record_keys(tree, name: str) -> list:
    "The string keys of every call of `name` (e.g. gpu_record, show_gpu_record) in the cell, in order."
    return [n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str) and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) == name]


def _is_skip_note(outs: list) -> bool:
    "True when the stored outputs are nothing or exactly the skip note a `#| gpu` cell prints without a GPU."
    if not outs: return True
    o = outs[0]
    return len(outs) == 1 and o.get("output_type") == "stream" and o.get("name") == "stdout" and \
        ("".join(o.get("text", "")) if isinstance(o.get("text"), list) else o.get("text")) == GPU_SKIP


def gpu_problems(nb: dict, chapter: str | None = None) -> list:
    "`(cell number, what, excerpt)` for the GPU-cell rules of the module docstring; `chapter`: the notebook's name, when known."
    found, cells = [], nb.get("cells", [])
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code": continue
        source = "".join(cell.get("source", ""))
        if "gpu" not in directives(source): continue
        outs = cell.get("outputs", [])
        if not _is_skip_note(outs):
            text = " ".join(t for o in outs for _, t in output_texts(o)).strip().replace("\n", "⏎")
            found.append((i, "a `#| gpu` cell stores more than the skip note (move it into its gpu_record)", text[:80] or str(outs)[:80]))
        tree = _code(source)
        if tree is None: continue
        calls = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "") for n in ast.walk(tree) if isinstance(n, ast.Call)}
        keys = _record_keys(tree, "gpu_record")
        if (calls & (PRINTS - {"show_gpu_record"}) or _draws(tree, calls)) and not keys:
            found.append((i, "a `#| gpu` cell that prints is not wrapped in `with gpu_record(...)`", source.strip().splitlines()[-1][:80]))
        for key in keys:
            if chapter is not None and key.partition("/")[0] != chapter:
                found.append((i, "a gpu_record key names another chapter", f"{key!r} in {chapter}"))
            after = cells[i + 1] if i + 1 < len(cells) else {}
            shown = _code("".join(after.get("source", ""))) if after.get("cell_type") == "code" else None
            if shown is None or key not in _record_keys(shown, "show_gpu_record"):
                found.append((i, "no show_gpu_record cell right after a `#| gpu` cell that records", key))
    return found


def evidence_problems(nb: dict) -> list:
    "`(cell number, what, excerpt)` for the evidence checks of the module docstring."
    found, cells = [], nb.get("cells", [])
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code": continue
        source = "".join(cell.get("source", ""))
        d, outs = directives(source), cell.get("outputs", [])
        if d.get("eval", "").lower() == "false" or "gpu" in d: continue
        tree = _code(source)
        if tree is None: continue
        calls = _unconditional_calls(tree)
        draws = _draws(tree, calls)
        if {"export", "exporti", "exports"} & d.keys() and _only_defines(tree) and outs:
            found.append((i, "output under an export cell that only defines", source.splitlines()[1][:80] if "\n" in source else source))
        if (calls & PRINTS or draws) and not outs:
            found.append((i, "no output under a cell that prints, displays or draws", source.strip().splitlines()[-1][:80]))
        if draws and outs and not any(k in o.get("data", {}) for o in outs for k in IMAGE_TYPES) \
                and not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outs):
            found.append((i, "no figure stored under a cell that draws", source.strip().splitlines()[-1][:80]))
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown": continue
        quoted = _numbers("".join(cell.get("source", "")))
        if not quoted: continue
        printed_text = []
        for below in cells[i + 1:]:
            if below.get("cell_type") == "markdown": break
            printed_text += [t for o in below.get("outputs", []) for _, t in output_texts(o)]
        printed = _numbers("\n".join(printed_text))
        for unit, values in quoted.items():
            if unit not in printed: continue
            for v, dec in values:
                if not _agrees(v, dec, printed[unit]):
                    shown = ", ".join(f"{p:g} {unit}" for p, _ in printed[unit][:4])
                    found.append((i, "prose quotes a number the cell below prints differently", f"{v:g} {unit} in prose; printed: {shown}"))
    return found


def problems(path: Path) -> list:
    "`(cell number, what, excerpt)` for every offending stored output of the notebook at `path`."
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    if not (nb.get("metadata", {}).get("kernelspec") or {}).get("name"):   # Jupyter would open it behind "Select Kernel"
        found.append((0, "no kernelspec", "add the notebook metadata's kernelspec (python3), as nbs/00_core.ipynb has"))
    for i, cell in enumerate(nb.get("cells", [])):
        names = {o.get("name") for o in cell.get("outputs", []) if o.get("output_type") == "stream"}
        if {"stdout", "stderr"} <= names:
            found.append((i, "stdout and stderr in one cell", "their order follows the kernel's flush timers: print on one stream "
                          "(e.g. contextlib.redirect_stderr(sys.stdout) around the call that writes notes)"))
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append((i, "stored error", f"{out.get('ename')}: {out.get('evalue')}"[:120]))
            for kind, text in output_texts(out):
                for what, pat in CHECKS:
                    m = pat.search(text)
                    if m:
                        a = max(0, m.start() - 40)
                        found.append((i, f"{what} ({kind})", text[a:m.end() + 60].replace("\n", "⏎")))
    return found + evidence_problems(nb) + gpu_problems(nb, path.stem)


def main(argv=None) -> int:
    root = Path(__file__).resolve().parent.parent
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])] or sorted((root / "nbs").glob("*.ipynb"))
    bad = 0
    for p in paths:
        for i, what, excerpt in problems(p):
            print(f"{p.name}: cell {i}: {what}: {excerpt!r}"); bad += 1
    if bad:
        print(f"check_outputs: {bad} problem(s) to fix in {len(paths)} notebook(s): fix the cell or the prose, then store "
              f"outputs with `python tools/run_notebooks.py NOTEBOOK`")
        return 1
    print(f"check_outputs: {len(paths)} notebook(s): stored outputs are clean and are the evidence (no machine paths, "
          f"ANSI codes, warnings, errors; outputs where cells print or draw, none under definitions; prose numbers printed; "
          f"`#| gpu` cells store only the skip note, and what they print is a gpu_record shown by the cell after)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
