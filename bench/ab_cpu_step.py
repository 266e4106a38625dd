"""A/B of two changes to Mint's CPU training step, in one process, rounds interleaved (ABAB…): the old layout (swap01 copies
of q|k|v and gate|up, `Workspace(direct=False)`) with RoPE's cos/sin computed per row (`rope_cpu`), against the
`direct=True` layout with cos/sin from a table per position (`--what` picks one change only). The CPU engine kept the
copies: the views measured no faster (results/ab_cpu_step_2026-12-02.log). Same weights, same batches; prints ms/step
per round and the median ratio, and checks the two give the same loss.

    python bench/ab_cpu_step.py --preset medium --rounds 8
"""
from __future__ import annotations
import argparse, os, statistics, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import numpy as np  # noqa: E402
import mint.rope as rope  # noqa: E402
from mint.loop import CpuEngine  # noqa: E402
from mint.model import Workspace  # noqa: E402
from bench_train_step import ab_setup, LR  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--preset", default="medium")
ap.add_argument("--rounds", type=int, default=8)
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--what", choices=["both", "direct", "rope"], default="both", help="which change the old side lacks (default both)")
a = ap.parse_args()
cfg, B, T, P, batches, tcfg = ab_setup(a.preset, 2 + a.rounds * a.steps)

class OldEngine(CpuEngine):
    def workspace(self, cfg, B, T, attention, precision="fp32", recompute=False):
        return Workspace(cfg, B, T, attention="unfused", precision=precision, recompute=recompute, direct=a.what == "rope")

class NewEngine(CpuEngine):
    def workspace(self, cfg, B, T, attention, precision="fp32", recompute=False):
        return Workspace(cfg, B, T, attention="unfused", precision=precision, recompute=recompute, direct=a.what != "rope")

table_rope = rope.rope_rows_cpu
def row_rope(x, pos, cos, sin, out, sign): return rope.rope_cpu(x, pos, rope.rope_freqs(x.shape[2]), out, sign)
sides = {f"old (lacking: {a.what})": (OldEngine(P.copy(), cfg, tcfg), table_rope if a.what == "direct" else row_rope),
         "new (direct views, cos/sin table)": (NewEngine(P.copy(), cfg, tcfg), table_rope)}
losses = {}
for k, (eng, f) in sides.items():
    rope.rope_rows_cpu = f
    losses[k] = [eng.step(b, LR, i + 1) for i, b in enumerate(batches[:2])]
assert losses[list(sides)[0]] == losses[list(sides)[1]], losses
times, cpu = {k: [] for k in sides}, {k: [] for k in sides}     # wall and process CPU time per step
load0 = os.getloadavg()
for r in range(a.rounds):
    chunk = batches[2 + r * a.steps: 2 + (r + 1) * a.steps]
    for k in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
        eng, f = sides[k]; rope.rope_rows_cpu = f
        t0, c0 = time.perf_counter(), time.process_time()
        for i, b in enumerate(chunk): eng.step(b, LR, 3 + r * a.steps + i)
        times[k].append((time.perf_counter() - t0) / a.steps * 1e3); cpu[k].append((time.process_time() - c0) / a.steps * 1e3)
rope.rope_rows_cpu = table_rope
(ko, to), (kn, tn) = times.items()
ratios = [o / n for o, n in zip(to, tn)]
cratios = [o / n for o, n in zip(*cpu.values())]
print(f"{a.preset}, batch {B}x{T}, {a.rounds} rounds of {a.steps} steps, {benchlib.host_info('cpu')['device']}, load average "
      f"{load0[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; first two losses equal: {losses[kn]}")
for k, ts in times.items():
    print(f"  {k}: ms/step per round {', '.join(f'{t:.0f}' for t in ts)}; median {statistics.median(ts):.0f} "
          f"(CPU ms/step, both threads: median {statistics.median(cpu[k]):.0f})")
print(f"  old ÷ new wall time per round: median {statistics.median(ratios):.3f}, range {min(ratios):.3f}–{max(ratios):.3f}; "
      f"CPU time: median {statistics.median(cratios):.3f}, range {min(cratios):.3f}–{max(cratios):.3f}")
