"""GEMM v8's k-splits, the three ways they have met: the two launches v8 made before 2026-12-07 (every split's partial
product into a workspace, then a second kernel, `sum_splits_kernel`, adding them in split order; kept here as BEFORE),
and chapter 24's two ways inside the launch: the chain (split z waits until split z-1 has left the running sum of
splits 0 … z-1 in C, adds its accumulators and writes it back; the last adds the bias) and the spread sum (every split
writes its partial product, all wait on a counter, then each sums a slice of the tile's rows over the partials in
split order; only where the whole grid is resident). All three add in the same order, so each plan is checked bit for
bit (with and without a bias) before it is timed. Every product at every (block width, splits) plan, as CUDA graphs of
`--per-graph` copies, cuBLAS bf16 in the same process; `v8_plan`'s plan as `tc_gemm` runs it (chain or spread, as
`v8_spread` says). Prints TFLOP/s and ratios; JSON to $OUT/v8_serial.json (else bench/results/).

    python bench/v8_serial.py --splits 1 2 3 4 5 6 7 8 --per-graph 10
"""
from __future__ import annotations
import argparse, datetime, json, os, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np                                                      # noqa: E402
if not hasattr(np, "row_stack"): np.row_stack = np.vstack              # numba-cuda 0.30.4 calls it; numpy >= 2.5 dropped it
from mint import tensor_cores as TC                                     # noqa: E402  (before numba: it checks for a GPU)
from numba import cuda                                                  # noqa: E402
from mint.core import cdiv                                              # noqa: E402
from mint.cublas import cublas_gemm                                     # noqa: E402
from mint.kernels import time_device, capture, launch, grid2d           # noqa: E402
from v8_splitk import SHAPES                                            # noqa: E402  (the same seven products as the split sweep)
# and one product for the checks' sake: odd N (C's rows are not 8-byte aligned: the running sum falls back to __ldcg) and B transposed
CHECKS = [("odd N, B^T (check)", 136, 263, 16384, False, True)]

BEFORE = r"""
#ifdef MINT_V8
// Split-K: block z of the grid's third axis multiplies k in [z·k_split, (z+1)·k_split) into C + z·c_split (a
// workspace that a second kernel sums in order); one split: k_split >= K, c_split 0.
extern "C" __device__ void MINT_NAME(i64 pa, i64 pb, i64 pc, i64 pbias, i64 M, i64 N, i64 K,
                                     i64 lda, i64 ldb, i64 ldc, i64 has_bias, i64 k_split, i64 c_split) {
  extern __shared__ __align__(1024) unsigned char mint_smem[];
  const u32 base = (smem_u32(mint_smem) + 1023u) & ~1023u;          // the swizzle repeats every 1024 bytes
  const bf16_t* A = (const bf16_t*)pa;
  const bf16_t* B = (const bf16_t*)pb;
  const int tid = threadIdx.x, wg = tid >> 7;
  // blocks in groups of 8 block-rows, column by column: the blocks running together share A's rows and B's columns in L2
  const int gn = gridDim.x, per = 8 * gn, pid = blockIdx.y * gn + blockIdx.x, first = (pid / per) * 8;
  const int rows = min((int)gridDim.y - first, 8);
  const i64 m0 = (i64)(first + (pid % per) % rows) * BM, n0 = (i64)((pid % per) / rows) * BN;
  const i64 k0 = (i64)blockIdx.z * k_split, k1 = min(K, k0 + k_split);
  float d[NACC];
#pragma unroll
  for (int i = 0; i < NACC; i++) d[i] = 0.0f;
  if (m0 + BM <= M && n0 + BN <= N && (k1 - k0) % BK == 0) v8_loop<true>(d, base, A, B, M, N, k0, k1, lda, ldb, m0, n0, tid, wg);
  else v8_loop<false>(d, base, A, B, M, N, k0, k1, lda, ldb, m0, n0, tid, wg);
  const int w = (tid & 127) >> 5, l = tid & 31;
  const i64 row = m0 + wg * 64 + w * 16 + (l >> 2), col = n0 + 2 * (l & 3);
  store_tile(d, (float*)pc + blockIdx.z * c_split, ldc, M, N, row, col, (const float*)pbias, has_bias);
}
#endif  // MINT_V8
"""


# A third way, LAST_TAIL (the last split adding the others' partial products, staged), was measured on 2026-12-07 and was
# no better (bench/results/h100_2026-12-07d/NOTES.md); it was removed after that run (in git: d87543a). The fourth,
# SPREAD_TAIL, measured here the same day (bench/results/h100_2026-12-07e/), is chapter 24's TC_V8_SPREAD since.


@cuda.jit
def sum_splits_kernel(ws, out, bias, has_bias):
    "out[i, j] = Σ_s ws[s, i, j] (+ bias[j]): the partial products summed in split order (v8's second launch until 2026-12-07)."
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        acc = ws[0, i, j]
        for s in range(1, ws.shape[0]): acc += ws[s, i, j]
        out[i, j] = acc + bias[j] if has_bias else acc


_KERNELS, _WS = {}, {}


def variant_source(bn: int, ta: bool, tb: bool) -> tuple[str, str]:
    "(name, CUDA source) of v8 with BEFORE's entry point (after the chapter's store_tile) instead of the chapter's."
    name, src = TC.tc_source(8, False, None, ta, tb, bn)
    assert src.endswith(TC.TC_V8_ENTRY)
    return f"{name}_before", src[:-len(TC.TC_V8_ENTRY)].replace(name, f"{name}_before") + TC.V8_STORE + BEFORE


def variant_kernel(bn: int, ta: bool, tb: bool):
    "v8 with the entry point it had before 2026-12-07 (C + z·c_split: a split's partial product at its place in a workspace)."
    key = (bn, ta, tb)
    if key not in _KERNELS:
        _KERNELS[key] = TC.v8_kernel(*variant_source(bn, ta, tb), bn)
    return _KERNELS[key]


_ptr = lambda x: 0 if x is None else x.device_ctypes_pointer.value


def _grid(a, out, ta: bool, bn: int, splits: int):
    "(M, N, K, k_split, grid) of a v8 launch as tc_gemm makes it: whole slabs a split, none without work; grid (tile columns, tile rows, splits)."
    M, N = out.shape
    K = a.shape[0] if ta else a.shape[1]
    k_split, splits = TC.v8_k_split(K, splits)
    return M, N, K, k_split, (cdiv(N, bn), cdiv(M, 128), splits)


def before_gemm(a, b, out, bias, ta, tb, bn, splits):
    "The product as v8 ran it before 2026-12-07: one launch for one split; else the splits into a workspace and sum_splits_kernel."
    M, N, K, k_split, grid = _grid(a, out, ta, bn, splits)
    splits, p = grid[2], _ptr
    k, hb = variant_kernel(bn, ta, tb), int(bias is not None)
    if splits == 1:
        k[(*launch(grid, 256), TC.v8_shared_bytes(bn))](p(a), p(b), p(out), p(bias), M, N, K, a.shape[1], b.shape[1], out.shape[1], hb, k_split, 0)
        return out
    if _WS.get("ws") is None or _WS["ws"].size < splits * M * N: _WS["ws"] = cuda.device_array(splits * M * N, np.float32)
    ws = _WS["ws"][:splits * M * N].reshape(splits, M, N)
    k[(*launch(grid, 256), TC.v8_shared_bytes(bn))](p(a), p(b), p(ws), 0, M, N, K, a.shape[1], b.shape[1], N, 0, k_split, M * N)
    sum_splits_kernel[grid2d(N, M)](ws, out, out[0] if bias is None else bias, hb)
    return out


v8_splits = lambda K, sp: TC.v8_k_split(K, sp)[1]                     # the splits a plan launches (those with work)


def spread_clean():
    "Before and after a spread product: its counters are at zero (else the next launch would not wait), and its partials are set to NaN (a block that reads them before they are written shows)."
    cuda.synchronize()
    ws = TC.v8_workspace()
    assert not ws[:2 * TC.V8_COUNTERS].copy_to_host().any(), "spread: counters not reset"
    ws[2 * TC.V8_COUNTERS:].copy_to_device(np.full(ws.size - 2 * TC.V8_COUNTERS, 0x7FC00000, np.int32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 7, 8], help="k-splits swept per block width (default 1 … 8)")
    ap.add_argument("--only", nargs="+", default=None, help="the products to time, by label (default all seven and the odd-N check)")
    ap.add_argument("--per-graph", type=int, default=10, help="copies of the product recorded back to back in each graph (default 10)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per number (the median; default 5)")
    ap.add_argument("--spread", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the chapter's spread sum at every plan whose blocks all fit on the GPU at once (default on)")
    a = ap.parse_args()
    unknown = set(a.only or ()) - {s[0] for s in SHAPES + CHECKS}
    if unknown: ap.error(f"--only: no product {sorted(unknown)}; the products are {[s[0] for s in SHAPES + CHECKS]}")
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    out = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), device=name, rows=[],
               per_graph=a.per_graph, rounds=a.rounds, splits=a.splits)
    dest = Path(os.environ.get("OUT", "bench/results")) / "v8_serial.json"
    rep = lambda f: (lambda: [f() for _ in range(a.per_graph)])          # a graph of per_graph copies
    tg = lambda g: time_device(g.launch, rounds=a.rounds) / a.per_graph
    bits = lambda x: x.copy_to_host().view(np.uint32)
    for label, M, N, K, ta, tb in SHAPES + CHECKS:
        if a.only and label not in a.only: continue
        _, _, a16, b16, bias = TC.tc_problem(M, N, K, ta, tb, seed=1)
        da, db, dbias = cuda.to_device(a16), cuda.to_device(b16), cuda.to_device(bias)
        c_new, c_old = cuda.device_array((M, N), np.float32), cuda.device_array((M, N), np.float32)
        nan_c = np.full((M, N), np.nan, np.float32)
        flop = 2.0 * M * N * K
        cub = lambda: cublas_gemm(da, db, c_old, None, ta, tb, mode="bf16")
        cub(); cuda.synchronize()
        row = dict(shape=label, M=M, N=N, K=K, plan=list(TC.v8_plan(M, N, K)), cublas_graph=flop / tg(capture(rep(cub))) / 1e12)
        for bn in TC.V8_STAGES:
            for sp in a.splits:
                if sp > 1 and K // sp < 256: continue
                for hb in (dbias, None):                 # the same bits both ways, with and without a bias
                    TC.tc_gemm(da, db, c_new, hb, ta, tb, 8, plan=(bn, sp), spread=False); before_gemm(da, db, c_old, hb, ta, tb, bn, sp)
                    first = bits(c_new)
                    TC.tc_gemm(da, db, c_new, hb, ta, tb, 8, plan=(bn, sp), spread=False)
                    assert np.array_equal(first, bits(c_new)), (label, bn, sp, "not the same bits twice")
                    assert np.array_equal(first, bits(c_old)), (label, bn, sp, hb is not None, "in-order sum differs from the two launches")
                if a.spread and TC.v8_resident(M, N, bn, v8_splits(K, sp)):   # spread: the same bits as the two launches
                    for hb in (dbias, None):
                        # NaN in C and in the partials before each call: a block that read too early or a write that
                        # never came shows; the counters must be back at zero after each launch
                        before_gemm(da, db, c_old, hb, ta, tb, bn, sp)
                        spread_clean(); c_new.copy_to_device(nan_c); TC.tc_gemm(da, db, c_new, hb, ta, tb, 8, plan=(bn, sp), spread=True)
                        first = bits(c_new)
                        spread_clean(); c_new.copy_to_device(nan_c); TC.tc_gemm(da, db, c_new, hb, ta, tb, 8, plan=(bn, sp), spread=True)
                        spread_clean()
                        assert np.array_equal(first, bits(c_new)), (label, bn, sp, "spread: not the same bits twice")
                        assert np.array_equal(first, bits(c_old)), (label, bn, sp, hb is not None, "spread differs from the two launches")
                    row[f"spread_bn{bn}_s{sp}"] = flop / tg(capture(rep(lambda: TC.tc_gemm(da, db, c_new, None, ta, tb, 8, plan=(bn, sp), spread=True)))) / 1e12
                row[f"inorder_bn{bn}_s{sp}"] = flop / tg(capture(rep(lambda: TC.tc_gemm(da, db, c_new, None, ta, tb, 8, plan=(bn, sp), spread=False)))) / 1e12
                row[f"before_bn{bn}_s{sp}"] = flop / tg(capture(rep(lambda: before_gemm(da, db, c_old, None, ta, tb, bn, sp)))) / 1e12
        best = lambda p: max((v, k[len(p):]) for k, v in row.items() if k.startswith(p))
        (bb, kb), (bi, ki) = best("before_bn"), best("inorder_bn")
        pbn, psp = row["plan"]
        how = "spread" if TC.v8_spread(M, N, pbn, v8_splits(K, psp)) else "inorder"          # as tc_gemm runs the plan
        planned = row.get(f"{how}_bn{pbn}_s{psp}", float("nan"))
        row.update(best_before=bb, best_before_plan=kb, best_inorder=bi, best_inorder_plan=ki, planned=planned, planned_how=how)
        out["rows"].append(row)
        cb = row["cublas_graph"]
        print(f"{label:18s} cuBLAS {cb:5.0f} | before: best {bb:5.0f} ({kb}, {bb / cb:.2f}x) | in order: best {bi:5.0f} ({ki}, {bi / cb:.2f}x), "
              f"v8_plan {tuple(row['plan'])} {'spread' if how == 'spread' else 'chain'} {planned:5.0f} ({planned / cb:.2f}x)", flush=True)
        if any(k.startswith("spread_bn") for k in row):
            bs, ks = best("spread_bn")
            row.update(best_spread=bs, best_spread_plan=ks)
            print(f"{'':18s} spread split sums: best {bs:5.0f} ({ks}, {bs / cb:.2f}x)", flush=True)
        for p in ("before_bn", "inorder_bn", "spread_bn"):
            print(f"    {p[:-3]:9s}" + ", ".join(f"{k[len(p):]} {v:.0f}" for k, v in row.items() if k.startswith(p)), flush=True)
        dest.write_text(json.dumps(out, indent=1) + "\n")          # after every product: a run cut short keeps its rows
    print("wrote", dest)


if __name__ == "__main__":
    main()
