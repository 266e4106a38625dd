"""The course's three parts: which notebook belongs to which, shared by tools/run_notebooks.py, nbs/index.ipynb and
tests/test_rhythm.py. A chapter's part is its number: 00-19 Part I, 20-29 Part II, 30-49 Part III."""
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = {   # part -> (first number, last number, what it teaches)
    "I": (0, 19, "the model from the kernels up"),
    "II": (20, 29, "making it fast"),
    "III": (30, 49, "making it a tool"),
}
TIMES = ROOT / "bench" / "results" / "notebook_times.json"


def part_of(name: str):
    "'I', 'II' or 'III' for a chapter (`04_matmul`, `nbs/04_matmul.ipynb`), None for others (index, scratch)."
    stem = Path(name).stem
    num = stem.split("_", 1)[0].rstrip("abcdefghijklmnopqrstuvwxyz")    # 20a_cublas, 36a_controls: their chapter's part
    if not num.isdigit() or num != stem[:len(num)]: return None
    return next((p for p, (a, b, _) in PARTS.items() if a <= int(num) <= b), None)


def chapters(part: str | None = None) -> list:
    "The chapter notebooks (all, or of one part), in order; a reader's `_scratch.ipynb` is none of them."
    nbs = sorted(p for p in (ROOT / "nbs").glob("*.ipynb") if not p.name.startswith("_"))
    return [p for p in nbs if part_of(p.name) is not None and (part is None or part_of(p.name) == part)]


def recorded_times() -> dict:
    "notebook stem -> its record in bench/results/notebook_times.json (seconds, date, cpus, jobs)."
    return json.loads(TIMES.read_text(encoding="utf-8")).get("notebooks", {}) if TIMES.is_file() else {}


def part_totals(times: dict | None = None) -> list:
    "(part, what it teaches, notebooks, notebooks timed, seconds of the timed ones) for each part."
    times = recorded_times() if times is None else times
    rows = []
    for part, (_, _, what) in PARTS.items():
        names = [p.stem for p in chapters(part)]
        timed = [times[n]["seconds"] for n in names if n in times]
        rows.append((part, what, len(names), len(timed), sum(timed)))
    return rows


def format_totals(rows=None) -> str:
    "The per-part Run All table."
    lines = ["part  what it teaches                 chapters  timed  Run All"]
    for part, what, n, t, s in (rows or part_totals()):
        lines.append(f"{part:5s} {what:31s} {n:8d}  {t:5d}  {s / 60:5.1f} min" + ("" if t == n else "  (not all timed)"))
    return "\n".join(lines)


def readme_block(rows=None) -> str:
    "The README's table of Run All times per part (between its `<!-- part-times -->` markers)."
    rows = rows or part_totals()
    times = recorded_times()
    dates = sorted({r["date"] for r in times.values()}) or ["—"]
    out = ["| part | chapters | Run All on 2 CPU cores (simulator) |", "|---|---|---|"]
    for part, what, n, t, s in rows:
        shown = f"{s / 60:.1f} min" if t == n else (f"{s / 60:.1f} min for {t} of {n} chapters (the rest not timed yet)" if t else "not timed yet")
        out.append(f"| {part}: {what} | {n} | {shown} |")
    loads = sorted(r["load"] for r in times.values() if "load" in r)
    busy = (f", on a machine under a load average of {loads[0]:g}–{loads[-1]:g} (other jobs shared its 2 cores: a quiet "
            f"machine is faster)") if loads and loads[-1] > 2.5 else ""
    out.append(f"\nMeasured by `tools/run_notebooks.py` ({dates[0]}{' to ' + dates[-1] if len(dates) > 1 else ''}, one notebook at a "
               f"time{busy}; `bench/results/notebook_times.json`). `python tools/course.py --readme` rewrites this table from it.")
    return "\n".join(out)


def update_readme(path: Path = ROOT / "README.md") -> bool:
    "Rewrite the block between `<!-- part-times -->` and `<!-- /part-times -->`; True if it changed."
    text = path.read_text(encoding="utf-8")
    a, b = "<!-- part-times -->\n", "\n<!-- /part-times -->"
    i, j = text.index(a) + len(a), text.index(b)
    new = text[:i] + readme_block() + text[j:]
    if new != text: path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    import sys
    print(format_totals())
    if "--readme" in sys.argv[1:]: print("README.md", "updated" if update_readme() else "unchanged")
