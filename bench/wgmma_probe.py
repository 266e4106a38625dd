"""A probe for the next GEMM rung: Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a) reached from a numba kernel.

v7 (chapter 24) issues `mma.sync` from each warp, with operands copied from shared memory to registers by ldmatrix;
on an H200 it stops at 177 TFLOP/s, 0.23x cuBLAS bf16. Hopper's cuBLAS uses wgmma: four warps (a warpgroup) issue
one asynchronous 64xNx16 product whose operands the tensor cores read straight from shared memory, described by a
64-bit descriptor (start address, the stride between 8-row groups, and the 128-byte swizzle the rows were written
with). This probe writes that kernel in the smallest form that can be fast:

- C[M,N] (fp32) = A[M,K] . B[N,K]^T, bf16 operands both K-major (the model's forward x.W^T has this layout);
  M, N multiples of the block tile, K a multiple of 64, rows 16-byte aligned (the probe's shapes);
- a block of two warpgroups computes 128xBN (each 64xBN with m64nBNk16), k-slabs of 64 (one 128-byte row per
  operand row), STAGES of them in dynamic shared memory, filled by cp.async into the 128-byte swizzle
  (16-byte chunk c of row r lands at chunk c ^ (r % 8)), made visible to the tensor cores' async proxy by
  `fence.proxy.async`;
- variant WAIT1 keeps one slab of wgmma in flight while the next is issued (two barriers per slab), the plain
  variant waits for each slab's products (one barrier).

numba-cuda 0.30 compiles linked CUDA C++ for sm_90a on Hopper (`codegen._ensure_cc` adds the "a"), so this is the
same route as v6/v7: `cuda.declare_device` + NVRTC. Every variant is checked against float64 on fresh random inputs
(output poisoned with NaN first) before it is timed with CUDA events against cuBLAS bf16 (Mint's ctypes provider,
fp32 out) in the same process.

    python bench/wgmma_probe.py            # checks, then timings at 4096^3 and the d768 model's shapes; JSON to $OUT
    python bench/wgmma_probe.py --source   # print the CUDA C++ of one variant (for nvcc -arch=sm_90a --resource-usage)
"""
from __future__ import annotations
import argparse, datetime, json, os, sys, time, traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HEAD = r"""
typedef unsigned short bf16_t;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
#define BM 128
#define BK 64
#define A_STAGE (BM * 128)
#define B_STAGE (BN * 128)
#define STAGE_BYTES (A_STAGE + B_STAGE)
#define NACC (BN / 2)
#define ATOM 8192            // an MN-major tile: 64 elements of M or N x the slab's 64 k-rows, 8 groups of 1024 bytes

__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Descriptor of an operand tile in shared memory written with the 128-byte swizzle. K-major: rows of 64 k (128 bytes),
// 8-row groups 1024 bytes apart (stride byte offset); the leading byte offset is unused. MN-major: rows of 64 m (or n)
// per k, 8-k groups 1024 bytes apart (stride byte offset), 64-wide column atoms ATOM bytes apart (leading byte offset).
__device__ __forceinline__ u64 sw128_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | ((u64)1 << 62);
}

__device__ __forceinline__ void cp16(u32 s, const bf16_t* g, bool ok) {   // 16 bytes, or zeros when !ok
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(g), "r"(ok ? 16 : 0));
}

// K-major slab: `rows` rows r0.. (of R) of a matrix stored [R][K], columns k0..k0+63, 128-byte-swizzled rows.
__device__ __forceinline__ void load_kmajor(u32 dst, const bf16_t* src, i64 ld, i64 r0, i64 R, i64 k0, i64 K, int rows, int tid) {
  for (int c = tid; c < rows * 8; c += 256) {
    const int r = c >> 3, ch = c & 7;
    const bool ok = r0 + r < R && k0 + ch * 8 < K;
    cp16(dst + r * 128 + ((ch ^ (r & 7)) << 4), ok ? src + (r0 + r) * ld + k0 + ch * 8 : src, ok);
  }
}

// MN-major slab: k-rows k0..k0+63 (of K) of a matrix stored [K][C], columns c0..c0+cols-1 (of C), in atoms of 64 columns.
__device__ __forceinline__ void load_mnmajor(u32 dst, const bf16_t* src, i64 ld, i64 c0, i64 C, i64 k0, i64 K, int cols, int tid) {
  const int cpr = cols / 8;
  for (int c = tid; c < 64 * cpr; c += 256) {
    const int kr = c / cpr, cc = c % cpr, ch = cc & 7;
    const bool ok = k0 + kr < K && c0 + cc * 8 < C;
    cp16(dst + (cc >> 3) * ATOM + (kr >> 3) * 1024 + (kr & 7) * 128 + ((ch ^ (kr & 7)) << 4),
         ok ? src + (k0 + kr) * ld + c0 + cc * 8 : src, ok);
  }
}
"""


def wgmma_asm(n: int) -> str:
    "The C++ of `wgmma_step(d, da, db)`: d (n/2 floats per thread) += A(64x16) . B(16xn), operands from descriptors."
    k = n // 2
    regs = ", ".join(f"%{i}" for i in range(k))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(k))
    return (f"__device__ __forceinline__ void wgmma_step(float* d, u64 da, u64 db) {{\n"
            f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{k + 2}, 0;\\n"\n'
            f'               "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{regs}}}, %{k}, %{k + 1}, p, 1, 1, %{k + 3}, %{k + 4};\\n}}\\n"\n'
            f'               : {outs}\n'
            f'               : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB ? 0 : 1));\n}}\n')


MAIN = r"""
__device__ __forceinline__ void fence_acc(float* d) {
#pragma unroll
  for (int i = 0; i < NACC; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}

__device__ __forceinline__ void load_slab(u32 st, const bf16_t* A, const bf16_t* B, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
                                          i64 m0, i64 n0, i64 k0, int tid) {
  if (TA) load_mnmajor(st, A, lda, m0, M, k0, K, BM, tid); else load_kmajor(st, A, lda, m0, M, k0, K, BM, tid);
  if (TB) load_kmajor(st + A_STAGE, B, ldb, n0, N, k0, K, BN, tid); else load_mnmajor(st + A_STAGE, B, ldb, n0, N, k0, K, BN, tid);
}

// C[M,N] = op(A) op(B) (+ bias): A stored [M,K] (or [K,M] with TA), B stored [K,N] (or [N,K] with TB), bf16; C fp32.
extern "C" __device__ void MINT_NAME(i64 pa, i64 pb, i64 pc, i64 pbias, i64 M, i64 N, i64 K,
                                     i64 lda, i64 ldb, i64 ldc, i64 has_bias) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;           // the swizzle repeats every 1024 bytes
  const bf16_t* A = (const bf16_t*)pa;
  const bf16_t* B = (const bf16_t*)pb;
  const int tid = threadIdx.x, wg = tid >> 7;
  const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
  float d[NACC];
#pragma unroll
  for (int i = 0; i < NACC; i++) d[i] = 0.0f;
  const int nk = (int)((K + BK - 1) / BK);
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < nk) load_slab(base + s * STAGE_BYTES, A, B, M, N, K, lda, ldb, m0, n0, (i64)s * BK, tid);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  // per 16-wide k step: K-major tiles move 32 bytes along their rows, MN-major tiles two 8-row groups (2048 bytes)
  const u32 a_off = TA ? wg * ATOM : wg * 64 * 128, a_step = TA ? 2048 : 32, b_step = TB ? 32 : 2048;
  const u32 a_lbo = TA ? ATOM : 16, b_lbo = TB ? 16 : ATOM;
  for (int kt = 0; kt < nk; kt++) {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // our copies, visible to the tensor cores
    __syncthreads();
    const u32 sa = base + (kt % STAGES) * STAGE_BYTES + a_off;
    const u32 sb = base + (kt % STAGES) * STAGE_BYTES + A_STAGE;
    fence_acc(d);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
      wgmma_step(d, sw128_desc(sa + kk * a_step, a_lbo, 1024), sw128_desc(sb + kk * b_step, b_lbo, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // slab kt-1's products are done (ours) ...
    fence_acc(d);
    __syncthreads();                                                  // ... and everyone's: its stage is free
    const int nxt = kt + STAGES - 1;
    if (nxt < nk) load_slab(base + (nxt % STAGES) * STAGE_BYTES, A, B, M, N, K, lda, ldb, m0, n0, (i64)nxt * BK, tid);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  fence_acc(d);
  float* C = (float*)pc;
  const float* bias = (const float*)pbias;
  const int w = (tid & 127) >> 5, l = tid & 31;
  const i64 row = m0 + wg * 64 + w * 16 + (l >> 2);
  const i64 col = n0 + 2 * (l & 3);
#pragma unroll
  for (int j = 0; j < BN / 8; j++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const i64 r = row + 8 * h, c = col + 8 * j;
      if (r >= M) continue;
      float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
      if (has_bias) { if (c < N) v0 += bias[c]; if (c + 1 < N) v1 += bias[c + 1]; }
      if (c + 1 < N && ((ldc | c) & 1) == 0) *reinterpret_cast<float2*>(C + r * ldc + c) = make_float2(v0, v1);
      else { if (c < N) C[r * ldc + c] = v0; if (c + 1 < N) C[r * ldc + c + 1] = v1; }
    }
}
"""

VARIANTS = [dict(bn=256, stages=4), dict(bn=128, stages=6)]


def source(bn: int, stages: int, ta: int = 0, tb: int = 1) -> tuple[str, str]:
    name = f"mint_wgmma_{bn}_s{stages}_{'t' if ta else 'n'}{'t' if tb else 'n'}"
    head = f"#define MINT_NAME {name}\n#define BN {bn}\n#define STAGES {stages}\n#define TA {ta}\n#define TB {tb}\n"
    return name, head + HEAD + wgmma_asm(bn) + MAIN


def shared_bytes(bn: int, stages: int, **_) -> int: return stages * (128 * 128 + bn * 128) + 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", action="store_true", help="print the CUDA C++ of the first variant and exit")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    if args.source:
        print(source(**VARIANTS[0])[1]); return
    import numpy as np
    if not hasattr(np, "row_stack"): np.row_stack = np.vstack
    import ml_dtypes
    from numba import cuda
    from mint.tensor_cores import _allow_shared
    from mint.cublas import cublas_gemm
    dev = cuda.get_current_device()
    print("device", dev.name, "cc", dev.compute_capability, flush=True)
    SIG = "void(int64, int64, int64, int64, int64, int64, int64, int64, int64, int64, int64)"

    def build(v, ta, tb, swap):
        name, src = source(**v, ta=ta, tb=tb)
        if swap:   # the other reading of the MN-major descriptor: leading and stride byte offsets exchanged
            src = src.replace("sw128_desc(sa + kk * a_step, a_lbo, 1024)", "sw128_desc(sa + kk * a_step, TA ? 1024 : a_lbo, TA ? ATOM : 1024)")
            src = src.replace("sw128_desc(sb + kk * b_step, b_lbo, 1024)", "sw128_desc(sb + kk * b_step, TB ? b_lbo : 1024, TB ? 1024 : ATOM)")
            name += "_swap"; src = src.replace(f"#define MINT_NAME {name[:-5]}", f"#define MINT_NAME {name}")
        fn = cuda.declare_device(name, SIG, link=[cuda.CUSource(src)], abi="c")
        @cuda.jit(SIG, launch_bounds=(256, 1))
        def k(a, b, c, bias, M, N, K, lda, ldb, ldc, hb):
            fn(a, b, c, bias, M, N, K, lda, ldb, ldc, hb)
        _allow_shared(k, shared_bytes(**v))
        return k

    def problem(M, N, K, ta, tb, seed):
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((M, K), dtype=np.float32).astype(ml_dtypes.bfloat16)
        B = rng.standard_normal((K, N), dtype=np.float32).astype(ml_dtypes.bfloat16)
        a = np.ascontiguousarray(A.T) if ta else A
        b = np.ascontiguousarray(B.T) if tb else B
        return A, B, a, b

    ptr = lambda x: 0 if x is None else x.device_ctypes_pointer.value

    def launch(k, v, da, db, dc, M, N, K, bias=None):
        k[(-(-N // v["bn"]), -(-M // 128)), 256, 0, shared_bytes(**v)](
            ptr(da), ptr(db), ptr(dc), ptr(bias), M, N, K, da.shape[1], db.shape[1], N, int(bias is not None))

    def time_ms(fn, reps):
        fn(); cuda.synchronize()
        e0, e1 = cuda.event(), cuda.event()
        ts = []
        for _ in range(reps):
            e0.record(); fn(); e1.record(); e1.synchronize()
            ts.append(cuda.event_elapsed_time(e0, e1))
        return float(np.median(ts))

    out = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), device=str(dev.name),
               checks=[], timings=[], failures=[])
    kernels = {}
    layouts = [(0, 1), (0, 0), (1, 0), (1, 1)]
    for v in VARIANTS:
        for ta, tb in layouts:
            for swap in ((0, 1) if (ta or not tb) else (0,)):
                key = (v["bn"], v["stages"], ta, tb)
                if key in kernels: continue
                tag = dict(**v, ta=ta, tb=tb, swap=swap)
                t0 = time.time()
                try:
                    k = build(v, ta, tb, swap)
                    for j, (M, N, K) in enumerate([(256, 256, 128), (200, 296, 136), (1024, 1024, 1024), (384, 768, 4096)]):
                        A, B, a, b = problem(M, N, K, ta, tb, seed=M + N + K + j)
                        bias = np.random.default_rng(j).standard_normal(N, dtype=np.float32) if j == 1 else None
                        dc = cuda.to_device(np.full((M, N), np.nan, np.float32))
                        launch(k, v, cuda.to_device(a.view(np.uint16)), cuda.to_device(b.view(np.uint16)), dc, M, N, K,
                               None if bias is None else cuda.to_device(bias))
                        got = dc.copy_to_host()
                        ref = A.astype(np.float64) @ B.astype(np.float64) + (0 if bias is None else bias)
                        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                        nan = int(np.isnan(got).sum())
                        out["checks"].append(dict(**tag, M=M, N=N, K=K, err=err, nan=nan))
                        print(f"check {tag} {M}x{N}x{K}: err {err:.2e} nan {nan} ({time.time() - t0:.1f} s)", flush=True)
                        if not (err < 1e-4 and nan == 0): raise AssertionError(f"wrong result: err {err:.3e}, {nan} NaN")
                    kernels[key] = (k, v, swap)
                except Exception as e:
                    print(f"FAILED {tag}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                    out["failures"].append(dict(**tag, error=f"{type(e).__name__}: {e}"[:2000]))
    shapes = [("4096³ NT", 4096, 4096, 4096, 0, 1), ("8192³ NT", 8192, 8192, 8192, 0, 1),
              ("4096³ NN", 4096, 4096, 4096, 0, 0), ("4096³ TN", 4096, 4096, 4096, 1, 0),
              ("d768 qkv fwd x.Wt 16384x2304x768", 16384, 2304, 768, 0, 1),
              ("d768 qkv dX dY.W 16384x768x2304", 16384, 768, 2304, 0, 0),
              ("d768 qkv dW dYt.X 2304x768x16384", 2304, 768, 16384, 1, 0),
              ("d768 up fwd 16384x3072x768", 16384, 3072, 768, 0, 1),
              ("d768 down fwd 16384x768x3072", 16384, 768, 3072, 0, 1)]
    for label, M, N, K, ta, tb in shapes:
        A, B, a, b = problem(M, N, K, ta, tb, seed=1)
        da, db = cuda.to_device(a.view(np.uint16)), cuda.to_device(b.view(np.uint16))
        dc = cuda.device_array((M, N), np.float32)
        flop = 2.0 * M * N * K
        row = dict(shape=label, M=M, N=N, K=K, ta=ta, tb=tb)
        try:
            ms = time_ms(lambda: cublas_gemm(da, db, dc, None, bool(ta), bool(tb), mode="bf16"), args.reps)
            row["cublas_bf16"] = flop / ms / 1e9
        except Exception as e:
            row["cublas_error"] = f"{type(e).__name__}: {e}"[:500]
        for (bn, st, kta, ktb), (k, v, swap) in kernels.items():
            if (kta, ktb) != (ta, tb): continue
            ms = time_ms(lambda: launch(k, v, da, db, dc, M, N, K), args.reps)
            row[f"wgmma_{bn}_s{st}"] = flop / ms / 1e9
        out["timings"].append(row)
        print(json.dumps(row), flush=True)
    dest = Path(os.environ.get("OUT", "bench/results")) / "wgmma_probe.json"
    dest.write_text(json.dumps(out, indent=1))
    for r in out["timings"]:
        best = max((x for kk, x in r.items() if kk.startswith("wgmma_")), default=float("nan"))
        print(f"| {r['shape']} | cuBLAS bf16 {r.get('cublas_bf16', float('nan')):.0f} | wgmma best {best:.0f} | "
              f"{best / r.get('cublas_bf16', float('nan')):.2f}x |")
    print("kernels passing:", sorted(kernels), "failures:", [(f["bn"], f["ta"], f["tb"], f["swap"]) for f in out["failures"]])


if __name__ == "__main__":
    main()
