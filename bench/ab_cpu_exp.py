"""A/B of the exp in Mint's CPU training step, in one process, rounds interleaved (ABAB…): the old CPU paths of SwiGLU,
attention's softmax and the cross-entropy, each three passes (compiled loop, NumPy's single-threaded `np.exp`,
compiled loop; kept below as they were), against the new ones (one compiled pass each, calling
`mint.kernels.exp_f32`, an exp that vectorises). Same weights, same batches; prints ms/step per round, the median
ratio, and the first two losses of each side (they differ by float rounding only).

    python bench/ab_cpu_exp.py --preset medium --rounds 8
    python bench/ab_cpu_exp.py --preset medium --rounds 8 --torch   # PyTorch CPU in the same rounds too

`use(OLD)` puts the old paths back in this process (to run another benchmark on them); `use(NEW)` the current ones.
"""
from __future__ import annotations
import argparse, math, os, statistics, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402
import mint.swiglu as SW, mint.attention as AT, mint.loss as LO  # noqa: E402
from mint.loop import CpuEngine  # noqa: E402
from bench_train_step import ab_setup, LR  # noqa: E402

# The old paths (mint before exp_f32): a compiled loop, NumPy's exp in place, a compiled loop.
C = SW.SWISH_CLAMP

@njit(parallel=True)
def _neg_clamp_cpu(x, out):
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            out[i, j] = -C if v > C else (C if v < -C else -v)

@njit
def _swish_pair(g, e):
    if g > C: return g, 1.0
    if g < -C: return 0.0, 0.0
    s = 1.0 / (1.0 + e)
    return g * s, s * (1.0 + g * (1.0 - s))

@njit(parallel=True)
def _swiglu_fwd_finish(gate, up, e, out):
    for i in prange(gate.shape[0]):
        for j in range(gate.shape[1]):
            sw, _ = _swish_pair(np.float64(gate[i, j]), np.float64(e[i, j]))
            out[i, j] = sw * up[i, j]

@njit(parallel=True)
def _swiglu_bwd_finish(dh, gate, up, e, dgate, dup):
    for i in prange(gate.shape[0]):
        for j in range(gate.shape[1]):
            d, u = np.float64(dh[i, j]), np.float64(up[i, j])
            sw, dsw = _swish_pair(np.float64(gate[i, j]), np.float64(e[i, j]))
            dgate[i, j] = d * u * dsw
            dup[i, j] = d * sw

def _scratch(buf, *inputs):
    return np.empty_like(buf) if any(np.may_share_memory(buf, a) for a in inputs) else buf

def old_swiglu_forward_cpu(gate, up, out):
    e = _scratch(out, gate, up)
    _neg_clamp_cpu(gate, e); np.exp(e, out=e); _swiglu_fwd_finish(gate, up, e, out)
    return out

def old_swiglu_backward_cpu(dh, gate, up, dgate, dup):
    e = _scratch(dgate, dh, gate, up, dup)
    _neg_clamp_cpu(gate, e); np.exp(e, out=e); _swiglu_bwd_finish(dh, gate, up, e, dgate, dup)
    return dgate, dup

@njit(parallel=True)
def _softmax_shift_cpu(s, seg, use_seg, scale):
    B, H, T, Tk = s.shape
    for r in prange(B * H * T):
        b, h, t = r // (H * T), (r // T) % H, r % T
        st = seg[b, t] if use_seg else 0
        m = -np.inf
        for j in range(t + 1):
            if not use_seg or (st >= 0 and seg[b, j] == st):
                m = max(m, s[b, h, t, j] * scale)
        for j in range(Tk):
            ok = j <= t and m > -np.inf and (not use_seg or seg[b, j] == st)
            s[b, h, t, j] = s[b, h, t, j] * scale - m if ok else -np.inf

@njit(fastmath={"reassoc"}, parallel=True)
def _softmax_finish_cpu(p):
    B, H, T, Tk = p.shape
    for r in prange(B * H * T):
        b, h, t = r // (H * T), (r // T) % H, r % T
        z = 0.0
        for j in range(Tk):
            z += p[b, h, t, j]
        if z > 0:
            inv = 1.0 / z
            for j in range(Tk):
                p[b, h, t, j] *= inv

def old_attention_forward_cpu(q, k, v, seg=None, out=None, probs=None):
    s = np.matmul(AT._heads(q), AT._heads(k).swapaxes(-1, -2), out=probs)
    _softmax_shift_cpu(s, AT._NO_SEG_CPU if seg is None else seg, seg is not None, 1 / math.sqrt(q.shape[3]))
    np.exp(s, out=s); _softmax_finish_cpu(s)
    if out is None: out = np.empty(q.shape, q.dtype)
    np.matmul(s, AT._heads(v), out=AT._heads(out))
    return out, s

@njit(parallel=True)
def _ce_shift_cpu(logits, m, targets, out, zt):
    for r in prange(logits.shape[0]):
        zt[r] = np.float64(logits[r, targets[r]]) - m[r]
        for j in range(logits.shape[1]):
            out[r, j] = logits[r, j] - m[r]

@njit(fastmath={"reassoc"}, parallel=True)
def _ce_finish_cpu(e, targets, loss_mask, count, zt):
    total = 0.0
    for r in prange(e.shape[0]):
        s = 0.0
        for j in range(e.shape[1]):
            s += e[r, j]
        w = loss_mask[r] / count
        inv = w / s
        for j in range(e.shape[1]):
            e[r, j] *= inv
        e[r, targets[r]] -= w
        total += loss_mask[r] * (math.log(s) - zt[r])
    return total

def old_cross_entropy_cpu(logits, targets, loss_mask, dlogits=None):
    count = float(loss_mask.sum(dtype=np.float64))
    if dlogits is None: dlogits = np.empty_like(logits)
    zt = np.empty(logits.shape[0])
    _ce_shift_cpu(logits, logits.max(axis=1), targets, dlogits, zt)
    np.exp(dlogits, out=dlogits)
    return _ce_finish_cpu(dlogits, targets, loss_mask, count, zt) / count, dlogits

NAMES = [(SW, "swiglu_forward_cpu"), (SW, "swiglu_backward_cpu"), (AT, "attention_forward_cpu"), (LO, "cross_entropy_cpu")]
NEW = {n: getattr(m, n) for m, n in NAMES}
OLD = {"swiglu_forward_cpu": old_swiglu_forward_cpu, "swiglu_backward_cpu": old_swiglu_backward_cpu,
       "attention_forward_cpu": old_attention_forward_cpu, "cross_entropy_cpu": old_cross_entropy_cpu}

def use(paths: dict):
    "Point the launchers at these CPU paths (they look the names up in their modules at each call)."
    for m, n in NAMES: setattr(m, n, paths[n])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="medium")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--torch", action="store_true", help="also time PyTorch CPU (bench_train_step's peer) in the same rounds")
    a = ap.parse_args()
    cfg, B, T, P, batches, tcfg = ab_setup(a.preset, 2 + a.rounds * a.steps)
    def mint_side(paths):
        eng = CpuEngine(P.copy(), cfg, tcfg)
        def step(b, t): use(paths); return eng.step(b, LR, t)
        return step
    sides = {"old (three passes around np.exp)": mint_side(OLD), "new (one pass with exp_f32)": mint_side(NEW)}
    if a.torch:
        from bench_train_step import TorchPeer
        peer = TorchPeer(cfg, P, "cpu", "PyTorch CPU")
        sides["PyTorch CPU"] = lambda b, t: peer.step(b)
    losses = {k: [step(b, i + 1) for i, b in enumerate(batches[:2])] for k, step in sides.items()}
    first = list(losses.values())
    assert all(max(abs(x - y) / abs(y) for x, y in zip(l, first[1])) < 1e-5 for l in first), losses
    times, cpu = {k: [] for k in sides}, {k: [] for k in sides}     # wall and process CPU time per step
    load0 = os.getloadavg()
    for r in range(a.rounds):
        chunk = batches[2 + r * a.steps: 2 + (r + 1) * a.steps]
        for k in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            t0, c0 = time.perf_counter(), time.process_time()
            for i, b in enumerate(chunk): sides[k](b, 3 + r * a.steps + i)
            times[k].append((time.perf_counter() - t0) / a.steps * 1e3); cpu[k].append((time.process_time() - c0) / a.steps * 1e3)
    use(NEW)
    print(f"{a.preset}, batch {B}x{T}, {a.rounds} rounds of {a.steps} steps, {benchlib.host_info('cpu')['device']}, load average "
          f"{load0[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; first two losses: "
          + "; ".join(f"{k.split(' (')[0]} {v}" for k, v in losses.items()))
    for k, ts in times.items():
        print(f"  {k}: ms/step per round {', '.join(f'{t:.0f}' for t in ts)}; best {min(ts):.0f}, median {statistics.median(ts):.0f} "
              f"(CPU ms/step, both threads: median {statistics.median(cpu[k]):.0f})")
    names = list(sides)
    pairs = [(names[0], names[1], "old ÷ new")] + [(names[2], n, f"PyTorch ÷ {n.split(' (')[0]} (Mint ÷ PyTorch in tokens/s)") for n in names[:2] if a.torch]
    for x, y, label in pairs:
        ratios = [p / q for p, q in zip(times[x], times[y])]
        cratios = [p / q for p, q in zip(cpu[x], cpu[y])]
        print(f"  {label}, wall time per round: median {statistics.median(ratios):.3f}, range {min(ratios):.3f}–{max(ratios):.3f}; "
              f"best round against best round {min(times[x]) / min(times[y]):.3f}; "
              f"CPU time: median {statistics.median(cratios):.3f}")


if __name__ == "__main__":
    main()
