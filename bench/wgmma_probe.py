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

__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// A K-major operand tile in shared memory: rows of 64 bf16 (128 bytes) written with the 128-byte swizzle, 8-row
// groups 1024 bytes apart (the stride byte offset); the leading byte offset is unused for swizzled K-major tiles.
__device__ __forceinline__ u64 sw128_desc(u32 addr) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(1024 >> 4) << 32) | ((u64)1 << 62);
}

// One slab: rows r0.. of a K-major matrix (ld elements per row), columns k0..k0+63, into `rows` swizzled rows.
__device__ __forceinline__ void load_rows(u32 dst, const bf16_t* src, i64 ld, i64 r0, i64 k0, int rows, int tid) {
  for (int c = tid; c < rows * 8; c += 256) {
    const int r = c >> 3, ch = c & 7;
    const u32 s = dst + r * 128 + ((ch ^ (r & 7)) << 4);
    const bf16_t* g = src + (r0 + r) * ld + k0 + ch * 8;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(g));
  }
}
"""


def wgmma_asm(n: int) -> str:
    "The C++ of `wgmma_step(d, da, db)`: d (n/2 floats per thread) += A(64x16) . B(nx16)^T, both from descriptors."
    k = n // 2
    regs = ", ".join(f"%{i}" for i in range(k))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(k))
    return (f"__device__ __forceinline__ void wgmma_step(float* d, u64 da, u64 db) {{\n"
            f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{k + 2}, 0;\\n"\n'
            f'               "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{regs}}}, %{k}, %{k + 1}, p, 1, 1, 0, 0;\\n}}\\n"\n'
            f'               : {outs}\n'
            f'               : "l"(da), "l"(db), "r"(1));\n}}\n')


MAIN = r"""
__device__ __forceinline__ void fence_acc(float* d) {
#pragma unroll
  for (int i = 0; i < NACC; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}

extern "C" __device__ void MINT_NAME(i64 pa, i64 pb, i64 pc, i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;           // the swizzle repeats every 1024 bytes
  const bf16_t* A = (const bf16_t*)pa;
  const bf16_t* B = (const bf16_t*)pb;
  const int tid = threadIdx.x, wg = tid >> 7;
  const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
  float d[NACC];
#pragma unroll
  for (int i = 0; i < NACC; i++) d[i] = 0.0f;
  const int nk = (int)(K / BK);
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < nk) {
      load_rows(base + s * STAGE_BYTES, A, lda, m0, (i64)s * BK, BM, tid);
      load_rows(base + s * STAGE_BYTES + A_STAGE, B, ldb, n0, (i64)s * BK, BN, tid);
    }
    asm volatile("cp.async.commit_group;\n" ::);
  }
  for (int kt = 0; kt < nk; kt++) {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // our copies, visible to the tensor cores
    __syncthreads();
#if !WAIT1
    {
      const int nxt = kt + STAGES - 1;                              // its stage was read by slab kt-1: all done
      if (nxt < nk) {
        const u32 st = base + (nxt % STAGES) * STAGE_BYTES;
        load_rows(st, A, lda, m0, (i64)nxt * BK, BM, tid);
        load_rows(st + A_STAGE, B, ldb, n0, (i64)nxt * BK, BN, tid);
      }
      asm volatile("cp.async.commit_group;\n" ::);
    }
#endif
    const u32 sa = base + (kt % STAGES) * STAGE_BYTES + wg * 64 * 128;   // this warpgroup's 64 rows of A
    const u32 sb = base + (kt % STAGES) * STAGE_BYTES + A_STAGE;
    fence_acc(d);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) wgmma_step(d, sw128_desc(sa + kk * 32), sw128_desc(sb + kk * 32));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#if WAIT1
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // slab kt-1's products are done (ours) ...
    fence_acc(d);
    __syncthreads();                                                  // ... and everyone's: its stage is free
    {
      const int nxt = kt + STAGES - 1;
      if (nxt < nk) {
        const u32 st = base + (nxt % STAGES) * STAGE_BYTES;
        load_rows(st, A, lda, m0, (i64)nxt * BK, BM, tid);
        load_rows(st + A_STAGE, B, ldb, n0, (i64)nxt * BK, BN, tid);
      }
      asm volatile("cp.async.commit_group;\n" ::);
    }
#else
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc(d);
#endif
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  fence_acc(d);
  float* C = (float*)pc;
  const int w = (tid & 127) >> 5, l = tid & 31;
  const i64 row = m0 + wg * 64 + w * 16 + (l >> 2);
  const i64 col = n0 + 2 * (l & 3);
#pragma unroll
  for (int j = 0; j < BN / 8; j++) {
    *reinterpret_cast<float2*>(C + row * ldc + col + 8 * j) = make_float2(d[4 * j], d[4 * j + 1]);
    *reinterpret_cast<float2*>(C + (row + 8) * ldc + col + 8 * j) = make_float2(d[4 * j + 2], d[4 * j + 3]);
  }
}
"""

VARIANTS = [dict(bn=256, stages=4, wait1=0), dict(bn=256, stages=4, wait1=1), dict(bn=128, stages=6, wait1=1),
            dict(bn=128, stages=4, wait1=0)]


def source(bn: int, stages: int, wait1: int) -> tuple[str, str]:
    name = f"mint_wgmma_{bn}_s{stages}_w{wait1}"
    head = f"#define MINT_NAME {name}\n#define BN {bn}\n#define STAGES {stages}\n#define WAIT1 {wait1}\n"
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
    print("device", dev.name.decode() if isinstance(dev.name, bytes) else dev.name, "cc", dev.compute_capability, flush=True)
    SIG = "void(int64, int64, int64, int64, int64, int64, int64, int64, int64)"

    def build(v):
        name, src = source(**v)
        fn = cuda.declare_device(name, SIG, link=[cuda.CUSource(src)], abi="c")
        @cuda.jit(SIG, launch_bounds=(256, 1))
        def k(a, b, c, M, N, K, lda, ldb, ldc):
            fn(a, b, c, M, N, K, lda, ldb, ldc)
        _allow_shared(k, shared_bytes(**v))
        return k

    def problem(M, N, K, seed):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((M, K), dtype=np.float32).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((N, K), dtype=np.float32).astype(ml_dtypes.bfloat16)
        return a, b

    def launch(k, v, da, db, dc, M, N, K):
        k[(N // v["bn"], M // 128), 256, 0, shared_bytes(**v)](da.device_ctypes_pointer.value, db.device_ctypes_pointer.value,
                                                               dc.device_ctypes_pointer.value, M, N, K, K, K, N)

    def time_ms(fn, reps):
        fn(); cuda.synchronize()
        e0, e1 = cuda.event(), cuda.event()
        ts = []
        for _ in range(reps):
            e0.record(); fn(); e1.record(); e1.synchronize()
            ts.append(cuda.event_elapsed_time(e0, e1))
        return float(np.median(ts))

    shapes = [("4096³", 4096, 4096, 4096), ("d768 qkv 16384x2304x768", 16384, 2304, 768),
              ("d768 up 16384x3072x768", 16384, 3072, 768), ("d768 down 16384x768x3072", 16384, 768, 3072),
              ("8192³", 8192, 8192, 8192)]
    out = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), device=str(dev.name),
               checks=[], timings=[], failures=[])
    kernels = {}
    for i, v in enumerate(VARIANTS):
        t0 = time.time()
        try:
            k = build(v)
            for (M, N, K) in [(256, 256, 128), (512, 768, 320), (1024, 1024, 1024)]:
                if N % v["bn"]: continue
                a, b = problem(M, N, K, seed=M + N + K + i)
                dc = cuda.to_device(np.full((M, N), np.nan, np.float32))
                launch(k, v, cuda.to_device(a.view(np.uint16)), cuda.to_device(b.view(np.uint16)), dc, M, N, K)
                got = dc.copy_to_host()
                ref = a.astype(np.float64) @ b.astype(np.float64).T
                err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                nan = int(np.isnan(got).sum())
                out["checks"].append(dict(**v, M=M, N=N, K=K, err=err, nan=nan))
                print(f"check {v} {M}x{N}x{K}: err {err:.2e} nan {nan} ({time.time() - t0:.1f} s)", flush=True)
                if not (err < 1e-4 and nan == 0): raise AssertionError(f"wrong result: err {err:.3e}, {nan} NaN")
            kernels[i] = k
        except Exception as e:
            traceback.print_exc()
            out["failures"].append(dict(**v, error=f"{type(e).__name__}: {e}"[:2000]))
    for label, M, N, K in shapes:
        a, b = problem(M, N, K, seed=1)
        da, db = cuda.to_device(a.view(np.uint16)), cuda.to_device(b.view(np.uint16))
        dc = cuda.device_array((M, N), np.float32)
        flop = 2.0 * M * N * K
        row = dict(shape=label, M=M, N=N, K=K)
        try:
            ms = time_ms(lambda: cublas_gemm(da, db, dc, None, False, True, mode="bf16"), args.reps)
            row["cublas_bf16_tflops"] = flop / ms / 1e9
        except Exception as e:
            row["cublas_error"] = f"{type(e).__name__}: {e}"[:500]
        for i, k in kernels.items():
            v = VARIANTS[i]
            if N % v["bn"]: continue
            ms = time_ms(lambda: launch(k, v, da, db, dc, M, N, K), args.reps)
            row["wgmma_{bn}_s{stages}_w{wait1}_tflops".format(**v)] = flop / ms / 1e9
        out["timings"].append(row)
        print(json.dumps(row), flush=True)
    dest = Path(os.environ.get("OUT", "bench/results")) / "wgmma_probe.json"
    dest.write_text(json.dumps(out, indent=1))
    key = lambda v: "wgmma_{bn}_s{stages}_w{wait1}_tflops".format(**v)
    print("| shape | cuBLAS bf16 | " + " | ".join(f"wgmma {v}" for v in VARIANTS) + " |")
    for r in out["timings"]:
        cells = [f"{r.get(key(v), float('nan')):.0f}" for v in VARIANTS]
        print(f"| {r['shape']} | {r.get('cublas_bf16_tflops', float('nan')):.0f} | " + " | ".join(cells) + " |")
    print("failures:", len(out["failures"]), "wrote", dest)


if __name__ == "__main__":
    main()
