"""Variants of the tensor-core flash attention (mint.flash_tc) in one process on a GPU: each is chapter 26's device code
changed by a named edit (or read from a .cu file) and compiled with a register cap; each is checked against the NumPy
emulation on a small causal + packed case, then timed (forward, backward; CUDA graphs) beside SDPA's flash backend at
seq 512 / head_dim 64 (B 16, H 16), and its kernels' registers, spills and shared memory are printed.

    python -c 'import mint.flash_tc as F; print(F.FLASH_TC_CU, end="")' > /tmp/mine.cu     # then edit it
    python bench/flash_tc_variants.py chapter chapter:168 mine=/tmp/mine.cu:128/168/168 --out results.json

A variant is NAME[=FILE][:REGS][+DEFINES]: NAME a label, the device code read from FILE (chapter 26's without it); REGS the register caps of the
forward, dq and dk/dv kernels as F/Q/D, or one cap for all three (default: the chapter's MAX_REGISTERS; 0 = none);
DEFINES are C macros put before the source, as NAME=VALUE joined by commas (e.g. +MY_STEP=16).
"""
import argparse, json, sys, time, datetime
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
import mint.flash_tc as FT
from flash_tc_bench import check, timing, register_caps                                          # noqa: E402

BASE, CAPS = FT.FLASH_TC_CU, dict(FT.MAX_REGISTERS)   # chapter 26's device code and register caps

def regs_report(hd, qkv, dout, out):
    fwd, dq, dkdv = FT.make_tc_kernels(hd, qkv, dout, out)
    rep = {}
    for name, k in (("fwd", fwd), ("dq", dq), ("dkdv", dkdv)):
        one = lambda d: next(iter(d.values())) if isinstance(d, dict) and d else d     # the kernel's one overload
        rep[name] = dict(regs=one(k.get_regs_per_thread()), local=one(k.get_local_mem_per_thread()), shared=one(k.get_shared_mem_per_block()))
    return rep

def run(spec, rng):
    name, regs, defs = spec, None, ""
    if "+" in name: name, defs = name.split("+", 1)
    if ":" in name: name, regs = name.rsplit(":", 1)
    if "=" in name: label, path = name.split("=", 1); src = open(path).read()
    else: label, src = name, BASE
    src = "".join(f"#define {d.replace('=', ' ')}\n" for d in defs.split(",") if d) + src
    FT.FLASH_TC_CU, FT.MAX_REGISTERS = src, register_caps(regs) if regs else dict(CAPS)
    FT.make_tc_kernels.cache_clear()
    row = dict(variant=label + (f":{regs}" if regs else "") + (f"+{defs}" if defs else ""))
    t0 = time.time()
    try:
        c = check(2, 200, 3, 64, True, "bthd", rng)                                # packed docs + padding, bf16 q/k/v
        cs = [c, check(2, 150, 2, 64, True, "fused-f32", rng),                  # q|k|v in one fp32 row
              check(2, 131, 2, 128, True, "bthd", rng), check(1, 100, 2, 96, True, "fused-f32", rng)]   # the other tilings
        worst = max(max(x[n + "_vs_emu"] for n in ("out", "dq", "dk", "dv")) for x in cs)
        row.update(ok=bool(all(x["all_finite"] and x["deterministic"] for x in cs) and worst < 1e-3), worst_vs_emu=worst)
    except Exception as e:
        row.update(ok=False, error=repr(e)[:300]); return row
    row["compile_check_s"] = time.time() - t0
    if not row["ok"]: return row
    row.update(timing(16, 512, 16, 64, fp32_too=False))
    row["kernels"] = regs_report(64, np.uint16, np.float32, np.float32)
    row["kernels_fp32_qkv"] = regs_report(64, np.float32, np.float32, np.float32)   # the training path: q|k|v rows in fp32
    return row

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="+"); ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import torch
    from mint.core import gpu_info
    rng = np.random.default_rng(5)
    rows = []
    for v in a.variants:
        rows.append(run(v, rng)); print(json.dumps(rows[-1]), flush=True)
    if a.out: open(a.out, "w").write(json.dumps(dict(date=datetime.date.today().isoformat(), device=gpu_info(), torch=torch.__version__, rows=rows), indent=1))
    print(f"{'variant':34s} {'ok':>3s} {'fwd':>7s} {'bwd':>7s} {'f+b':>7s} {'sdpa f':>7s} {'sdpa f+b':>8s} {'ratio':>6s}  regs fwd/dq/dkdv (spill B)")
    for r in rows:
        if not r.get("ok"): print(f"{r['variant']:34s}  NO  {r.get('error', '')[:80]} worst {r.get('worst_vs_emu')}"); continue
        k = r["kernels"]
        print(f"{r['variant']:34s} yes {r['mint_tc_fwd_ms']:7.3f} {r['mint_tc_bwd_ms']:7.3f} {r['mint_tc_fwd_bwd_ms']:7.3f} {r['sdpa_fwd_ms']:7.3f} "
              f"{r['sdpa_fwd_bwd_ms']:8.3f} {r['fwd_bwd_ratio']:6.2f}  " + "/".join(f"{k[n]['regs']}({k[n]['local']})" for n in ("fwd", "dq", "dkdv")))
