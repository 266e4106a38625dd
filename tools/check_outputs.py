#!/usr/bin/env python3
"""Fail if a notebook's stored outputs show what a reader should not see: a machine path, an ANSI escape code,
a warning, or an error; and a notebook stored without a kernelspec. Run by .ci/run; `python tools/check_outputs.py [NOTEBOOK ...]` (default: nbs/*.ipynb).

Stored outputs come from a clean run (`python tools/run_notebooks.py`): what the chapter prints, nothing of the
machine it ran on."""
import json, re, sys
from pathlib import Path

CHECKS = [
    ("machine path", re.compile(r"(?<![\w.~])(/(work|home|root|tmp|Users|private|mnt|opt|var/folders)/|[A-Za-z]:\\\\Users\\\\)")),
    ("ANSI escape code", re.compile(r"\x1b\[")),
    ("warning", re.compile(r"\b[A-Z]\w*Warning\b|^\s*warnings?\.warn", re.M)),
]
TEXT_TYPES = ("text/plain", "text/html", "text/markdown", "text/latex", "application/javascript")


def output_texts(out: dict):
    "(kind, text) of each textual part of one stored output."
    if out.get("output_type") == "stream":
        yield out.get("name", "stream"), "".join(out.get("text", ""))
    elif out.get("output_type") == "error":
        yield "error", f"{out.get('ename')}: {out.get('evalue')}"
    for k in TEXT_TYPES:
        v = out.get("data", {}).get(k)
        if v is not None: yield k, "".join(v) if isinstance(v, list) else str(v)


def problems(path: Path) -> list:
    "`(cell number, what, excerpt)` for every offending stored output of the notebook at `path`."
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    if not (nb.get("metadata", {}).get("kernelspec") or {}).get("name"):   # Jupyter would open it behind "Select Kernel"
        found.append((0, "no kernelspec", "add the notebook metadata's kernelspec (python3), as nbs/00_core.ipynb has"))
    for i, cell in enumerate(nb.get("cells", [])):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append((i, "stored error", f"{out.get('ename')}: {out.get('evalue')}"[:120]))
            for kind, text in output_texts(out):
                for what, pat in CHECKS:
                    m = pat.search(text)
                    if m:
                        a = max(0, m.start() - 40)
                        found.append((i, f"{what} ({kind})", text[a:m.end() + 60].replace("\n", "⏎")))
    return found


def main(argv=None) -> int:
    root = Path(__file__).resolve().parent.parent
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])] or sorted((root / "nbs").glob("*.ipynb"))
    bad = 0
    for p in paths:
        for i, what, excerpt in problems(p):
            print(f"{p.name}: cell {i}: {what}: {excerpt!r}"); bad += 1
    if bad:
        print(f"check_outputs: {bad} stored output(s) to fix in {len(paths)} notebook(s): fix the cell so a clean run "
              f"prints none of these, then store outputs with `python tools/run_notebooks.py NOTEBOOK`")
        return 1
    print(f"check_outputs: {len(paths)} notebook(s), stored outputs clean (no machine paths, ANSI codes, warnings or errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
