
#ifdef MINT_V8
// v8: Hopper's warpgroup MMA. A block of two warpgroups (256 threads) computes 128 x BN of C; each warpgroup 64 x BN
// with `wgmma.mma_async.m64nBNk16`, whose operands the tensor cores read from shared memory through descriptors.
// k-slabs of 64 go global -> shared by cp.async into a ring of STAGES buffers, every operand tile written with the
// 128-byte swizzle (16-byte chunk c of a 128-byte row r lands at chunk c ^ (r % 8)). K-major tiles are rows of 64 k;
// MN-major tiles (op(A) stored [K,M], op(B) stored [K,N]) are rows of 64 m (or n) per k, read with the transpose flag.
#define BM 128
#define BK 64
#define BN MINT_BN
#define STAGES MINT_STAGES
#define TA MINT_TA
#define TB MINT_TB
#define A_STAGE (BM * 128)
#define B_STAGE (BN * 128)
#define STAGE_BYTES (A_STAGE + B_STAGE)
#define NACC (BN / 2)
#define ATOM 8192            // an MN-major tile: 64 columns x the slab's 64 k-rows, eight 1024-byte groups of 8 rows

// The descriptor of a 128-byte-swizzled operand tile: start address, leading and stride byte offsets (all / 16),
// swizzle mode 1 (128 bytes) in bits 62-63.
__device__ __forceinline__ u64 sw128_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | ((u64)1 << 62);
}

__device__ __forceinline__ void cp16(u32 s, const bf16_t* g, bool ok) {   // 16 bytes, or 16 zeros when !ok
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(g), "r"(ok ? 16 : 0));
}

// K-major slab: rows r0.. (of R) of a matrix stored [R][K], columns k0..k0+63. FULL: the block's tile lies inside.
template <bool FULL>
__device__ __forceinline__ void load_kmajor(u32 dst, const bf16_t* src, i64 ld, i64 r0, i64 R, i64 k0, i64 K, int rows, int tid) {
  // thread tid copies chunk tid & 7 of rows tid/8, tid/8 + 32, ...: a trip count fixed at compile time, so the loop unrolls
  const int ch = tid & 7, rr = tid >> 3;
  const u32 s = dst + rr * 128 + ((ch ^ (rr & 7)) << 4);
  const bf16_t* g = src + (r0 + rr) * ld + k0 + ch * 8;
#pragma unroll
  for (int i = 0; i < rows / 32; i++) {
    const bool ok = FULL || (r0 + rr + 32 * i < R && k0 + ch * 8 < K);
    cp16(s + i * 32 * 128, ok ? g + (i64)(32 * i) * ld : src, ok);
  }
}

// MN-major slab: k-rows k0..k0+63 (of K) of a matrix stored [K][C], columns c0.. (of C), in atoms of 64 columns.
template <bool FULL>
__device__ __forceinline__ void load_mnmajor(u32 dst, const bf16_t* src, i64 ld, i64 c0, i64 C, i64 k0, i64 K, int cols, int tid) {
  // cpr 16-byte chunks per k-row; thread tid copies chunk tid % cpr of k-rows tid / cpr, + 256 / cpr, ... (kr & 7 fixed)
  const int cpr = cols / 8, cc = tid % cpr, kr0 = tid / cpr, ch = cc & 7, step = 256 / cpr;
  const u32 s = dst + (cc >> 3) * ATOM + (kr0 >> 3) * 1024 + (kr0 & 7) * 128 + ((ch ^ (kr0 & 7)) << 4);
  const bf16_t* g = src + (k0 + kr0) * ld + c0 + cc * 8;
#pragma unroll
  for (int i = 0; i < cpr / 4; i++) {
    const bool ok = FULL || (k0 + kr0 + step * i < K && c0 + cc * 8 < C);
    cp16(s + i * step * 128, ok ? g + (i64)(step * i) * ld : src, ok);
  }
}

template <bool FULL>
__device__ __forceinline__ void load_slab8(u32 st, const bf16_t* A, const bf16_t* B, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
                                           i64 m0, i64 n0, i64 k0, int tid) {
  if (TA) load_mnmajor<FULL>(st, A, lda, m0, M, k0, K, BM, tid); else load_kmajor<FULL>(st, A, lda, m0, M, k0, K, BM, tid);
  if (TB) load_kmajor<FULL>(st + A_STAGE, B, ldb, n0, N, k0, K, BN, tid); else load_mnmajor<FULL>(st + A_STAGE, B, ldb, n0, N, k0, K, BN, tid);
}
__device__ __forceinline__ void fence_acc(float* d) {      // keep the compiler off the accumulators while wgmma runs
#pragma unroll
  for (int i = 0; i < NACC; i++) asm volatile("" : "+f"(d[i]) :: "memory");
}
#endif  // MINT_V8

#ifdef MINT_V8
// The main loop: STAGES-1 slabs in flight; per slab four wgmma (k = 16 each) issued together, one group kept
// running while the next slab is waited for; the stage the finished group read is refilled.
// k runs over [k0, K): a split of the k range (split-K), or all of it.
template <bool FULL>
__device__ __forceinline__ void v8_loop(float* d, u32 base, const bf16_t* A, const bf16_t* B, i64 M, i64 N, i64 k0, i64 K,
                                        i64 lda, i64 ldb, i64 m0, i64 n0, int tid, int wg) {
  const int nk = (int)((K - k0 + BK - 1) / BK);
  for (int s = 0; s < STAGES - 2; s++) {
    if (s < nk) load_slab8<FULL>(base + s * STAGE_BYTES, A, B, M, N, K, lda, ldb, m0, n0, k0 + (i64)s * BK, tid);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  const u32 a_off = TA ? wg * ATOM : wg * 64 * 128, a_step = TA ? 2048 : 32, b_step = TB ? 32 : 2048;
  const u32 a_lbo = TA ? ATOM : 16, b_lbo = TB ? 16 : ATOM;
  for (int kt = 0; kt < nk; kt++) {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 3) : "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();          // slab kt is in everyone's view, and everyone's slab kt-2 products are done: its stage is free
    const int nxt = kt + STAGES - 2;
    if (nxt < nk) load_slab8<FULL>(base + (nxt % STAGES) * STAGE_BYTES, A, B, M, N, K, lda, ldb, m0, n0, k0 + (i64)nxt * BK, tid);
    asm volatile("cp.async.commit_group;\n" ::);
    const u32 sa = base + (kt % STAGES) * STAGE_BYTES + a_off;
    const u32 sb = base + (kt % STAGES) * STAGE_BYTES + A_STAGE;
    fence_acc(d);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
      wgmma_step(d, sw128_desc(sa + kk * a_step, a_lbo, 1024), sw128_desc(sb + kk * b_step, b_lbo, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // slab kt-1's products are done (ours)
    fence_acc(d);
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  fence_acc(d);
}

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
  float* C = (float*)pc + blockIdx.z * c_split;
  const float* bias = (const float*)pbias;
  const int w = (tid & 127) >> 5, l = tid & 31;
  const i64 row = m0 + wg * 64 + w * 16 + (l >> 2), col = n0 + 2 * (l & 3);
#pragma unroll
  for (int j = 0; j < BN / 8; j++)
#pragma unroll
    for (int h = 0; h < 2; h++) {                                     // lane's rows g and g+8, columns 2t, 2t+1 of each n8
      const i64 r = row + 8 * h, c = col + 8 * j;
      if (r >= M) continue;
      float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
      if (has_bias) { if (c < N) v0 += bias[c]; if (c + 1 < N) v1 += bias[c + 1]; }
      if (c + 1 < N && ((ldc | c) & 1) == 0) *reinterpret_cast<float2*>(C + r * ldc + c) = make_float2(v0, v1);
      else { if (c < N) C[r * ldc + c] = v0; if (c + 1 < N) C[r * ldc + c + 1] = v1; }
    }
}
#endif  // MINT_V8
