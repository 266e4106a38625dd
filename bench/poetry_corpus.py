"""A plain-text corpus that five minutes on an H200 do not exhaust, for `bench/budget_run.py --data`: the classical
Chinese poetry of the npm package chinese-poetry 2.0.1 (MIT; the poems themselves are centuries old), about 30 M
characters, 17 times People's Daily's 1.76 M.

    cd /tmp && npm pack chinese-poetry@2.0.1             # chinese-poetry-2.0.1.tgz, 85 MB (npm's registry)
    python bench/poetry_corpus.py /tmp/chinese-poetry-2.0.1.tgz data/poetry.txt

Reads the tarball's JSON as it is (no unpacking), writes one poem per block: a line 'title author', its lines, a blank
line. The poems are shuffled with a fixed seed, so the last 5% (the validation part `split_tail` takes) is drawn from
every collection, not from the last one in the tarball. Left out: tone patterns (strains), search-hit counts (rank),
the poets' biographies and the second edition of the Tang poems (yudingquantangshi, mostly the same poems). The Tang
and Song poems are in traditional characters, the rest in simplified: kept as they are (no conversion library).
Prints the size, characters and distinct characters; the same tarball gives the same file, byte for byte.
"""
from __future__ import annotations
import argparse, hashlib, json, random, sys, tarfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402,F401  (puts the repo root on sys.path)
from mint.checkpoint import atomic_write  # noqa: E402

SHA256 = "25b549e46919c3a0569db6b68ddc96956b04a484ea4518ad2bbd4f137e307e86"     # chinese-poetry-2.0.1.tgz from npm
SKIP = {"strains", "rank", "yudingquantangshi"}
BODY = ("paragraphs", "content", "para")
HEAD = ("title", "rhythmic", "chapter", "section", "author")


def lines_of(v) -> list[str]:
    "Every non-blank string in a JSON value, in order (a poem's body is a list of lines, or lists or dicts of them)."
    if isinstance(v, str): return [v.strip()] if v.strip() else []
    if isinstance(v, list): return [s for x in v for s in lines_of(x)]
    if isinstance(v, dict): return [s for x in v.values() for s in lines_of(x)]
    return []


def records(d):
    "The poems in a JSON document: every dict with a body key, however deep."
    if isinstance(d, list):
        for x in d: yield from records(x)
    elif isinstance(d, dict):
        if any(k in d for k in BODY): yield d
        else:
            for v in d.values(): yield from records(v)


def poems(tgz: Path) -> tuple[list[str], Counter]:
    "Every poem of the tarball as one text block, and the characters each collection gave."
    out, per = [], Counter()
    with tarfile.open(tgz, "r:gz") as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            parts = m.name.split("/")                         # package/dist/<collection>/.../<file>.json
            if not m.isfile() or len(parts) < 4 or parts[1] != "dist" or parts[2] in SKIP: continue
            name = parts[-1]
            if not name.endswith(".json") or name.startswith("author") or name == "表面结构字.json": continue
            for r in records(json.loads(tar.extractfile(m).read().decode("utf-8"))):
                body = [s for k in BODY if k in r for s in lines_of(r[k])]
                if not body: continue
                head = " ".join(r[k].strip() for k in HEAD if isinstance(r.get(k), str) and r[k].strip())
                text = head + "\n" + "\n".join(body) + "\n\n"
                out.append(text)
                per[parts[2]] += len(text)
    return out, per


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarball", type=Path, help="chinese-poetry-2.0.1.tgz (`npm pack chinese-poetry@2.0.1`)")
    ap.add_argument("out", type=Path, help="the text file to write (not overwritten unless --overwrite)")
    ap.add_argument("--seed", type=int, default=0, help="the shuffle's seed (default 0)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    a = ap.parse_args(argv)
    if not a.tarball.is_file(): sys.exit(f"{a.tarball}: no such file; fetch it with `npm pack chinese-poetry@2.0.1`")
    digest = hashlib.sha256(a.tarball.read_bytes()).hexdigest()
    if digest != SHA256: sys.exit(f"{a.tarball}: sha256 {digest}, not chinese-poetry 2.0.1's {SHA256}")
    if a.out.exists() and not a.overwrite: sys.exit(f"{a.out} exists; pass --overwrite to replace it")
    blocks, per = poems(a.tarball)
    random.Random(a.seed).shuffle(blocks)
    text = "".join(blocks)
    atomic_write(a.out, text)                          # the old file (with --overwrite) stays until the new one is whole
    for k, v in per.most_common(): print(f"  {k:18s} {v:>12,} characters")
    print(f"{a.out}: {len(blocks):,} poems, {len(text):,} characters, {len(set(text)):,} distinct, "
          f"{len(text.encode('utf-8')):,} bytes of UTF-8")


if __name__ == "__main__":
    main()
