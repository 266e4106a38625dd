#!/usr/bin/env python3
"""Give every module-level `@cuda.jit` kernel in the notebooks' exported cells `cache=True` (issue 18, compile once):
rewrites the bare decorator line `@cuda.jit` to `@cuda.jit(cache=True)` and nothing else, so it can be re-run after a
merge (idempotent). Device functions, decorators with arguments and indented (factory-made) kernels are left as they
are; tests/test_kernel_cache.py names any kernel or njit function still without the cache. Then run `nbdev-export`.

    python tools/add_kernel_cache.py [NOTEBOOK ...]      # default: nbs/*.ipynb
"""
import json, re, sys
from pathlib import Path


def add_cache(nb: Path) -> int:
    "Rewrite `nb` in place; return how many decorator lines changed."
    d = json.loads(nb.read_text(encoding="utf-8"))
    n = 0
    for c in d["cells"]:
        if c["cell_type"] != "code": continue
        src = c["source"] if isinstance(c["source"], list) else c["source"].splitlines(True)
        if not any(re.match(r"#\|\s*export", l) for l in src): continue
        new = []
        for l in src:
            if l.rstrip("\n") == "@cuda.jit":
                l = "@cuda.jit(cache=True)" + ("\n" if l.endswith("\n") else ""); n += 1
            new.append(l)
        c["source"] = new
    if n: nb.write_text(json.dumps(d, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return n


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("nbs").glob("*.ipynb"))
    for p in paths:
        if n := add_cache(p): print(f"{p}: {n} kernel(s) now cached")
