// Flash attention on the tensor cores: mma.sync m16n8k16, bf16 operands, fp32 accumulators.
// One warp owns 16 rows of a tile; a block is 4 warps (128 threads). Element (b, t, h, d) of q/k/v/o/dout/dq/dk/dv
// lives at p[(b*T + t)*ld + h*HD + d] (ld: the row stride, H*HD for [B,T,H,hd], 3*H*HD inside a fused qkv row).
typedef unsigned short u16;
typedef unsigned int u32;
#define MINT_NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void mma16816(float c[4], const u32 a[4], const u32 b0, const u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ u32 smem(const void* p) {              // a generic pointer into shared memory -> its shared address
    u32 a; asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p)); return a;
}
// four 8x8 bf16 matrices from shared memory; lane L gives the address of row L%8 of matrix L/8.
// Plain: lane (g, t) receives M[g][2t], M[g][2t+1] of each; .trans: M[2t][g], M[2t+1][g] (the B fragment of a row-major [k][n] tile)
__device__ __forceinline__ void ldsm4(u32 r[4], const u16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem(p)));
}
__device__ __forceinline__ void ldsm4t(u32 r[4], const u16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem(p)));
}
__device__ __forceinline__ u32 pack2(float lo, float hi) {        // two floats -> bf16x2 (round to nearest even), lo in the low half
    u32 r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
__device__ __forceinline__ float bf(u16 x) { return __uint_as_float(((u32)x) << 16); }
// 2^x on the special-function unit (flushes subnormal results to zero: p below 1e-38 counts as 0)
__device__ __forceinline__ float ex2(float x) {
#ifdef MINT_EXACT_EXP
    return exp2f(x);
#else
    float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
#endif
}

// two consecutive elements as bf16x2, from bf16 (u16) or fp32 (rounded) storage
__device__ __forceinline__ u32 ld2(const u16* p) { return *(const u32*)p; }
__device__ __forceinline__ u32 ld2(const float* p) { float2 f = *(const float2*)p; return pack2(f.x, f.y); }
// eight consecutive elements as bf16 (16 bytes)
__device__ __forceinline__ uint4 ld8(const u16* p) { return *(const uint4*)p; }
__device__ __forceinline__ uint4 ld8(const float* p) {
    float4 a = ((const float4*)p)[0], b = ((const float4*)p)[1];
    return make_uint4(pack2(a.x, a.y), pack2(a.z, a.w), pack2(b.x, b.y), pack2(b.z, b.w));
}
__device__ __forceinline__ float ldf(const u16* p) { return bf(*p); }
__device__ __forceinline__ float ldf(const float* p) { return *p; }
__device__ __forceinline__ void st2(float* p, float x, float y) { *(float2*)p = make_float2(x, y); }
__device__ __forceinline__ void st2(u16* p, float x, float y) { *(u32*)p = pack2(x, y); }

// A tile of ROWS rows of one head, global -> shared memory, row-major with a padded stride S; rows at or past T are zeros.
// Two shared buffers per operand: while the warps compute on tile i in one, tile i+1 is on its way into the other.
// bf16 storage (u16) travels by cp.async straight into shared memory (no registers); fp32 storage is rounded to bf16,
// so it travels through registers: issue() loads them, land() stores them into the buffer at the next iteration's top.
__device__ __forceinline__ void cp16(u16* s, const void* g, bool ok) {   // 16 bytes global -> shared; zeros when !ok
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(smem(s)), "l"(g), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

template <int ROWS, int HD, typename TI>
struct Tile {                                                     // fp32 storage: through registers
    static constexpr int N = (ROWS * HD / 8 + 127) / 128;         // 16-byte chunks per thread
    uint4 r[N];
    __device__ __forceinline__ void issue(const TI* p, long base, int ld, int r0, int T, u16* s, int S) {
#pragma unroll
        for (int n = 0; n < N; n++) {
            int i = threadIdx.x + 128 * n, row = i / (HD / 8), c = (i % (HD / 8)) * 8, t = r0 + row;
            r[n] = (i < ROWS * HD / 8 && t < T) ? ld8(p + base + (long)t * ld + c) : make_uint4(0, 0, 0, 0);
        }
    }
    __device__ __forceinline__ void land(u16* s, int S) const {
#pragma unroll
        for (int n = 0; n < N; n++) {
            int i = threadIdx.x + 128 * n, row = i / (HD / 8), c = (i % (HD / 8)) * 8;
            if (i < ROWS * HD / 8) *(uint4*)&s[row * S + c] = r[n];
        }
    }
};
template <int ROWS, int HD>
struct Tile<ROWS, HD, u16> {                                      // bf16 storage: cp.async into the buffer
    static constexpr int N = (ROWS * HD / 8 + 127) / 128;
    __device__ __forceinline__ void issue(const u16* p, long base, int ld, int r0, int T, u16* s, int S) {
#pragma unroll
        for (int n = 0; n < N; n++) {
            int i = threadIdx.x + 128 * n, row = i / (HD / 8), c = (i % (HD / 8)) * 8, t = r0 + row;
            if (i < ROWS * HD / 8) cp16(&s[row * S + c], p + base + (long)(t < T ? t : 0) * ld + c, t < T);
        }
        cp_commit();
    }
    __device__ __forceinline__ void land(u16* s, int S) const {}
};

// One step of the K/V pipeline of the forward and dq kernels: tile i (and its keys' segment ids) lands in buffer buf,
// the barrier, then tile i+1 (if any) is sent on its way into the other buffer.
template <int BC, int SK, int HD, typename TI>
__device__ __forceinline__ void kv_step(Tile<BC, HD, TI>& tk, Tile<BC, HD, TI>& tv, u16 (&sK)[2][BC * SK], u16 (&sV)[2][BC * SK],
                                        int (&sSeg)[2][BC], int& sgn, int buf, int k0, int kend, const TI* k, const TI* v,
                                        const int* seg, long hb, int h, int ldk, int ldv, int T) {
    const int tid = threadIdx.x;
    tk.land(sK[buf], SK); tv.land(sV[buf], SK);
    if (seg && tid < BC) sSeg[buf][tid] = sgn;
    cp_wait_all();
    __syncthreads();                                   // tile i is in sK/sV[buf]; every warp is done with tile i-1
    if (k0 + BC < kend) {
        tk.issue(k, hb * ldk + h * HD, ldk, k0 + BC, T, sK[buf ^ 1], SK); tv.issue(v, hb * ldv + h * HD, ldv, k0 + BC, T, sV[buf ^ 1], SK);
        if (seg && tid < BC) sgn = k0 + BC + tid < T ? seg[hb + k0 + BC + tid] : -1;
    }
}

// The A fragments of 16 rows (r0: this lane's row g, r0 + 8: row g + 8) of one head, straight from global memory.
template <int KS, typename TI>
__device__ __forceinline__ void load_a(u32 a[KS][4], const TI* p, long row0, long row1, bool ok0, bool ok1, int ld, int c0) {
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        int c = c0 + ks * 16;
        const TI* p0 = p + row0 * ld + c; const TI* p1 = p + row1 * ld + c;
        a[ks][0] = ok0 ? ld2(p0) : 0u; a[ks][1] = ok1 ? ld2(p1) : 0u;
        a[ks][2] = ok0 ? ld2(p0 + 8) : 0u; a[ks][3] = ok1 ? ld2(p1 + 8) : 0u;
    }
}

// acc[NB][4] (16 x 8·NB) += A (16 x 16·KS, fragments a) · Bᵀ, B row-major [8·NB][16·KS] in shared memory (stride S): S = Q Kᵀ
template <int NB, int KS>
__device__ __forceinline__ void mma_abt(float acc[NB][4], const u32 a[KS][4], const u16* sB, int S, int lane) {
    const int m = lane >> 3, r = lane & 7;
#pragma unroll
    for (int n = 0; n < NB; n += 2)
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            u32 b[4];
            ldsm4(b, &sB[((n + (m >> 1)) * 8 + r) * S + ks * 16 + (m & 1) * 8]);
            mma16816(acc[n], a[ks], b[0], b[1]);
            mma16816(acc[n + 1], a[ks], b[2], b[3]);
        }
}
// acc[ND][4] (16 x 8·ND) += P · B, P (16 x 16·KK) given as C-fragments p[2·KK][4] (rounded to bf16 here), B row-major
// [16·KK][8·ND] in shared memory: O += P V, dq += dS K, dv += Pᵀ dO, dk += dSᵀ Q
template <int ND, int KK>
__device__ __forceinline__ void mma_pb(float acc[ND][4], const float p[2 * KK][4], const u16* sB, int S, int lane) {
    const int m = lane >> 3, r = lane & 7;
#pragma unroll
    for (int kk = 0; kk < KK; kk++) {
        u32 a[4] = {pack2(p[2 * kk][0], p[2 * kk][1]), pack2(p[2 * kk][2], p[2 * kk][3]),
                    pack2(p[2 * kk + 1][0], p[2 * kk + 1][1]), pack2(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
        for (int n = 0; n < ND; n += 2) {
            u32 b[4];
            ldsm4t(b, &sB[(kk * 16 + (m & 1) * 8 + r) * S + (n + (m >> 1)) * 8]);
            mma16816(acc[n], a, b[0], b[1]);
            mma16816(acc[n + 1], a, b[2], b[3]);
        }
    }
}

// The grid is (tiles, H, B); blocks start roughly in linear order. Causal work grows with the query tile (forward, dq)
// and shrinks with the key tile (dk/dv), so the linear block index hands out the heaviest tiles first, every head's
// together: the last blocks to start are the shortest, and the tail of the launch is short (longest-first).
__device__ __forceinline__ bool block_tile(bool heavy_last, int ntiles, int& b, int& h, int& tile) {
    const int lin = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z), nbh = gridDim.y * gridDim.z;
    const int i = lin / nbh, bh = lin % nbh;
    tile = heavy_last ? ntiles - 1 - i : i; h = bh % gridDim.y; b = bh / gridDim.y;
    return i < ntiles;                                 // false: a block beyond the tiles (the grid may be rounded up)
}

// mma_abt and mma_pb for RW 16-row tiles a warp: each B fragment from shared memory serves RW tiles
template <int RW, int NB, int KS>
__device__ __forceinline__ void mma_abt_rw(float acc[RW][NB][4], const u32 a[RW][KS][4], const u16* sB, int S, int lane) {
    const int m = lane >> 3, r = lane & 7;
#pragma unroll
    for (int n = 0; n < NB; n += 2)
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            u32 b[4];
            ldsm4(b, &sB[((n + (m >> 1)) * 8 + r) * S + ks * 16 + (m & 1) * 8]);
#pragma unroll
            for (int i = 0; i < RW; i++) { mma16816(acc[i][n], a[i][ks], b[0], b[1]); mma16816(acc[i][n + 1], a[i][ks], b[2], b[3]); }
        }
}
template <int RW, int ND, int KK>
__device__ __forceinline__ void mma_pb_rw(float acc[RW][ND][4], const float p[RW][2 * KK][4], const u16* sB, int S, int lane) {
    const int m = lane >> 3, r = lane & 7;
#pragma unroll
    for (int kk = 0; kk < KK; kk++) {
        u32 a[RW][4];
#pragma unroll
        for (int i = 0; i < RW; i++) {
            a[i][0] = pack2(p[i][2 * kk][0], p[i][2 * kk][1]); a[i][1] = pack2(p[i][2 * kk][2], p[i][2 * kk][3]);
            a[i][2] = pack2(p[i][2 * kk + 1][0], p[i][2 * kk + 1][1]); a[i][3] = pack2(p[i][2 * kk + 1][2], p[i][2 * kk + 1][3]);
        }
#pragma unroll
        for (int n = 0; n < ND; n += 2) {
            u32 b[4];
            ldsm4t(b, &sB[(kk * 16 + (m & 1) * 8 + r) * S + (n + (m >> 1)) * 8]);
#pragma unroll
            for (int i = 0; i < RW; i++) { mma16816(acc[i][n], a[i], b[0], b[1]); mma16816(acc[i][n + 1], a[i], b[2], b[3]); }
        }
    }
}

// ---------------------------------------------------------------- forward
#ifndef FWD_RW
#define FWD_RW 1
#endif
template <int HD, typename TI, typename TO>
__device__ void flash_fwd(const TI* q, const TI* k, const TI* v, TO* o, float* lse, const int* seg,
                          int T, int H, int ldq, int ldk, int ldv, int ldo, float scale) {
    constexpr int RW = HD <= 64 ? FWD_RW : 1, BR = 64 * RW, BC = HD <= 64 ? 64 : 32, KS = HD / 16, NB = BC / 8, ND = HD / 8, SK = HD + 8;
    __shared__ __align__(16) u16 sK[2][BC * SK];
    __shared__ __align__(16) u16 sV[2][BC * SK];
    __shared__ int sSeg[2][BC];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    int b, h, tile; if (!block_tile(true, (T + BR - 1) / BR, b, h, tile)) return;
    const int q0 = tile * BR, w0 = q0 + warp * 16 * RW, wlast = w0 + 16 * RW - 1;
    const long hb = (long)b * T;                       // first row of this sequence
    const float sl = scale * 1.4426950408889634f;      // scores in log2 units: exp(x) = exp2(x log2 e)
    u32 qa[RW][KS][4];
    int r0[RW], r1[RW], sg0[RW], sg1[RW];
    bool see0[RW], see1[RW], all_see = true;
    float m0[RW], m1[RW], l0[RW], l1[RW], acc[RW][ND][4];
#pragma unroll
    for (int i = 0; i < RW; i++) {
        r0[i] = w0 + 16 * i + g; r1[i] = r0[i] + 8;
        load_a<KS>(qa[i], q, hb + r0[i], hb + r1[i], r0[i] < T, r1[i] < T, ldq, h * HD + 2 * t4);
        sg0[i] = (seg && r0[i] < T) ? seg[hb + r0[i]] : 0; sg1[i] = (seg && r1[i] < T) ? seg[hb + r1[i]] : 0;
        see0[i] = r0[i] < T && sg0[i] >= 0; see1[i] = r1[i] < T && sg1[i] >= 0;
        all_see = all_see && see0[i] && see1[i];
        m0[i] = m1[i] = MINT_NEG_INF; l0[i] = l1[i] = 0.f;
#pragma unroll
        for (int n = 0; n < ND; n++) acc[i][n][0] = acc[i][n][1] = acc[i][n][2] = acc[i][n][3] = 0.f;
    }
    const int kend = min(T, q0 + BR);
    Tile<BC, HD, TI> tk, tv;                           // tile i+1 flies while tile i is computed
    tk.issue(k, hb * ldk + h * HD, ldk, 0, T, sK[0], SK); tv.issue(v, hb * ldv + h * HD, ldv, 0, T, sV[0], SK);
    int sgn = (seg && tid < BC) ? (tid < T ? seg[hb + tid] : -1) : -1;
    for (int k0 = 0, buf = 0; k0 < kend; k0 += BC, buf ^= 1) {
        kv_step<BC, SK>(tk, tv, sK, sV, sSeg, sgn, buf, k0, kend, k, v, seg, hb, h, ldk, ldv, T);
        if (k0 > wlast) continue;                      // keys after every row of this warp (the barrier above is shared)
        const u16 *cK = sK[buf], *cV = sV[buf]; const int* cSeg = sSeg[buf];
        float s[RW][NB][4];
#pragma unroll
        for (int i = 0; i < RW; i++)
#pragma unroll
            for (int n = 0; n < NB; n++) s[i][n][0] = s[i][n][1] = s[i][n][2] = s[i][n][3] = 0.f;
        mma_abt_rw<RW, NB, KS>(s, qa, cK, SK, lane);
        const bool need_mask = seg || k0 + BC > w0 || k0 + BC > T || !all_see;
        if (need_mask) {                               // keys a row may not see: -inf (exp2 -> 0)
#pragma unroll
            for (int i = 0; i < RW; i++)
#pragma unroll
                for (int n = 0; n < NB; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        int jj = n * 8 + 2 * t4 + (e & 1), j = k0 + jj, r = e < 2 ? r0[i] : r1[i];
                        bool ok = j <= r && j < T && (e < 2 ? see0[i] : see1[i]) && (!seg || cSeg[jj] == (e < 2 ? sg0[i] : sg1[i]));
                        if (!ok) s[i][n][e] = MINT_NEG_INF;
                    }
        }
#pragma unroll
        for (int i = 0; i < RW; i++) {
            float mx0 = MINT_NEG_INF, mx1 = MINT_NEG_INF;
#pragma unroll
            for (int n = 0; n < NB; n++) { mx0 = fmaxf(mx0, fmaxf(s[i][n][0], s[i][n][1])); mx1 = fmaxf(mx1, fmaxf(s[i][n][2], s[i][n][3])); }
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffff, mx0, 1)); mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffff, mx0, 2));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffff, mx1, 1)); mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffff, mx1, 2));
            const float mn0 = fmaxf(m0[i], mx0 * sl), mn1 = fmaxf(m1[i], mx1 * sl);   // the running max in log2 units (sl > 0 keeps the order)
            const float u0 = mn0 == MINT_NEG_INF ? 0.f : mn0, u1 = mn1 == MINT_NEG_INF ? 0.f : mn1;
            const float al0 = ex2(m0[i] - u0), al1 = ex2(m1[i] - u1);
            m0[i] = mn0; m1[i] = mn1;
            float ps0 = 0.f, ps1 = 0.f;
#pragma unroll
            for (int n = 0; n < NB; n++) {
                s[i][n][0] = ex2(fmaf(s[i][n][0], sl, -u0)); s[i][n][1] = ex2(fmaf(s[i][n][1], sl, -u0));
                s[i][n][2] = ex2(fmaf(s[i][n][2], sl, -u1)); s[i][n][3] = ex2(fmaf(s[i][n][3], sl, -u1));
                ps0 += s[i][n][0] + s[i][n][1]; ps1 += s[i][n][2] + s[i][n][3];
            }
            l0[i] = l0[i] * al0 + ps0; l1[i] = l1[i] * al1 + ps1;   // per-lane partial sums: the 4 lanes of a row share alpha
#pragma unroll
            for (int n = 0; n < ND; n++) { acc[i][n][0] *= al0; acc[i][n][1] *= al0; acc[i][n][2] *= al1; acc[i][n][3] *= al1; }
        }
        mma_pb_rw<RW, ND, BC / 16>(acc, s, cV, SK, lane);  // O += P V, P straight from the registers of S
    }
#pragma unroll
    for (int i = 0; i < RW; i++) {
        float L0 = l0[i], L1 = l1[i];
        L0 += __shfl_xor_sync(0xffffffff, L0, 1); L0 += __shfl_xor_sync(0xffffffff, L0, 2);
        L1 += __shfl_xor_sync(0xffffffff, L1, 1); L1 += __shfl_xor_sync(0xffffffff, L1, 2);
        const float i0 = L0 > 0.f ? 1.f / L0 : 0.f, i1 = L1 > 0.f ? 1.f / L1 : 0.f;
#pragma unroll
        for (int n = 0; n < ND; n++) {
            int c = h * HD + n * 8 + 2 * t4;
            if (r0[i] < T) st2(o + (hb + r0[i]) * ldo + c, acc[i][n][0] * i0, acc[i][n][1] * i0);
            if (r1[i] < T) st2(o + (hb + r1[i]) * ldo + c, acc[i][n][2] * i1, acc[i][n][3] * i1);
        }
        if (t4 == 0) {
            const long lb = ((long)b * H + h) * T;
            if (r0[i] < T) lse[lb + r0[i]] = L0 > 0.f ? (m0[i] + log2f(L0)) * 0.6931471805599453f : -1e30f;
            if (r1[i] < T) lse[lb + r1[i]] = L1 > 0.f ? (m1[i] + log2f(L1)) * 0.6931471805599453f : -1e30f;
        }
    }
}

// ---------------------------------------------------------------- backward 1: dq (and D = rowsum(dO o) into dsum)
#ifndef DQ_RW
#define DQ_RW 2
#endif
template <int HD, typename TI, typename TG, typename TO>
__device__ void flash_bwd_dq(const TG* dout, const TI* q, const TI* k, const TI* v, const TO* o, const float* lse, float* dsum,
                             const int* seg, float* dq, u16* g16, int T, int H, int ldg, int ldq, int ldk, int ldv, int ldo, int lddq, float scale) {
    constexpr int RW = HD <= 64 ? DQ_RW : 1, BR = 64 * RW, BC = HD <= 64 ? 64 : 32, KS = HD / 16, ND = HD / 8, SK = HD + 8;
    __shared__ __align__(16) u16 sK[2][BC * SK];
    __shared__ __align__(16) u16 sV[2][BC * SK];
    __shared__ int sSeg[2][BC];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    int b, h, tile; if (!block_tile(true, (T + BR - 1) / BR, b, h, tile)) return;
    const int q0 = tile * BR, w0 = q0 + warp * 16 * RW;    // the block's first row, this warp's
    const long hb = (long)b * T, lb = ((long)b * H + h) * T;
    const float sl = scale * 1.4426950408889634f;
    Tile<BC, HD, TI> tk, tv;                           // tile i+1 flies while tile i is computed
    tk.issue(k, hb * ldk + h * HD, ldk, 0, T, sK[0], SK); tv.issue(v, hb * ldv + h * HD, ldv, 0, T, sV[0], SK);
    int sgn = (seg && tid < BC) ? (tid < T ? seg[hb + tid] : -1) : -1;
    u32 qa[RW][KS][4], ga[RW][KS][4];
    int r0[RW], r1[RW], sg0[RW], sg1[RW];
    float D0[RW], D1[RW], L0[RW], L1[RW];
    bool see0[RW], see1[RW], all_see = true;
#pragma unroll
    for (int i = 0; i < RW; i++) {                     // the warp's row tile i: rows w0 + 16 i + g (r0) and + 8 (r1)
        r0[i] = w0 + i * 16 + g; r1[i] = r0[i] + 8;
        const int x0 = r0[i], x1 = r1[i];
        load_a<KS>(qa[i], q, hb + x0, hb + x1, x0 < T, x1 < T, ldq, h * HD + 2 * t4);
        load_a<KS>(ga[i], dout, hb + x0, hb + x1, x0 < T, x1 < T, ldg, h * HD + 2 * t4);
        if (g16) {                                     // fp32 dO: its bf16 rounding, [B,T,H,HD], for dk/dv to copy (cp.async)
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                const int c = h * HD + ks * 16 + 2 * t4;
                if (x0 < T) { *(u32*)&g16[(hb + x0) * H * HD + c] = ga[i][ks][0]; *(u32*)&g16[(hb + x0) * H * HD + c + 8] = ga[i][ks][2]; }
                if (x1 < T) { *(u32*)&g16[(hb + x1) * H * HD + c] = ga[i][ks][1]; *(u32*)&g16[(hb + x1) * H * HD + c + 8] = ga[i][ks][3]; }
            }
        }
        float d0 = 0.f, d1 = 0.f;                      // D = rowsum(dO * o) in fp32; the 4 lanes of a row split the columns
        for (int d = 2 * t4; d < HD; d += 8) {
            if (x0 < T) d0 += ldf(dout + (hb + x0) * ldg + h * HD + d) * ldf(o + (hb + x0) * ldo + h * HD + d)
                            + ldf(dout + (hb + x0) * ldg + h * HD + d + 1) * ldf(o + (hb + x0) * ldo + h * HD + d + 1);
            if (x1 < T) d1 += ldf(dout + (hb + x1) * ldg + h * HD + d) * ldf(o + (hb + x1) * ldo + h * HD + d)
                            + ldf(dout + (hb + x1) * ldg + h * HD + d + 1) * ldf(o + (hb + x1) * ldo + h * HD + d + 1);
        }
        d0 += __shfl_xor_sync(0xffffffff, d0, 1); d0 += __shfl_xor_sync(0xffffffff, d0, 2);
        d1 += __shfl_xor_sync(0xffffffff, d1, 1); d1 += __shfl_xor_sync(0xffffffff, d1, 2);
        if (t4 == 0) { if (x0 < T) dsum[lb + x0] = d0; if (x1 < T) dsum[lb + x1] = d1; }
        D0[i] = d0; D1[i] = d1;
        L0[i] = x0 < T ? lse[lb + x0] * 1.4426950408889634f : 0.f; L1[i] = x1 < T ? lse[lb + x1] * 1.4426950408889634f : 0.f;
        sg0[i] = (seg && x0 < T) ? seg[hb + x0] : 0; sg1[i] = (seg && x1 < T) ? seg[hb + x1] : 0;
        see0[i] = x0 < T && sg0[i] >= 0; see1[i] = x1 < T && sg1[i] >= 0;
        all_see = all_see && see0[i] && see1[i];
    }
    float acc[RW][ND][4];
#pragma unroll
    for (int i = 0; i < RW; i++)
#pragma unroll
        for (int n = 0; n < ND; n++) acc[i][n][0] = acc[i][n][1] = acc[i][n][2] = acc[i][n][3] = 0.f;
    const int kend = min(T, q0 + BR), wlast = w0 + 16 * RW - 1;
    for (int k0 = 0, buf = 0; k0 < kend; k0 += BC, buf ^= 1) {
        kv_step<BC, SK>(tk, tv, sK, sV, sSeg, sgn, buf, k0, kend, k, v, seg, hb, h, ldk, ldv, T);
        const u16 *cK = sK[buf], *cV = sV[buf]; const int* cSeg = sSeg[buf];
        const bool need_mask = seg || k0 + BC > w0 || k0 + BC > T || !all_see;
        constexpr int HB = 16, NH = HB / 8;
        for (int hh = 0; hh < BC / HB; hh++) {         // the tile's keys 16 at a time: only their S and dP live in registers
            if (k0 + hh * HB > wlast) break;           // keys after every row of this warp: nothing to add
            const u16 *hK = cK + hh * HB * SK, *hV = cV + hh * HB * SK;
            float s[RW][NH][4], dp[RW][NH][4];
#pragma unroll
            for (int i = 0; i < RW; i++)
#pragma unroll
                for (int n = 0; n < NH; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) s[i][n][e] = dp[i][n][e] = 0.f;
            mma_abt_rw<RW, NH, KS>(s, qa, hK, SK, lane);   // S = Q Kᵀ
            mma_abt_rw<RW, NH, KS>(dp, ga, hV, SK, lane);  // dP = dO Vᵀ
            if (need_mask) {
#pragma unroll
                for (int i = 0; i < RW; i++)
#pragma unroll
                    for (int n = 0; n < NH; n++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            int jj = hh * HB + n * 8 + 2 * t4 + (e & 1), j = k0 + jj, r = e < 2 ? r0[i] : r1[i];
                            bool ok = j <= r && j < T && (e < 2 ? see0[i] : see1[i]) && (!seg || cSeg[jj] == (e < 2 ? sg0[i] : sg1[i]));
                            if (!ok) s[i][n][e] = MINT_NEG_INF;
                        }
            }
#pragma unroll
            for (int i = 0; i < RW; i++)
#pragma unroll
                for (int n = 0; n < NH; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        float p = ex2(fmaf(s[i][n][e], sl, -(e < 2 ? L0[i] : L1[i])));
                        s[i][n][e] = p * (dp[i][n][e] - (e < 2 ? D0[i] : D1[i]));     // dS = P (dP - D)
                    }
            mma_pb_rw<RW, ND, HB / 16>(acc, s, hK, SK, lane);  // dq += dS K
        }
    }
#pragma unroll
    for (int i = 0; i < RW; i++)
#pragma unroll
        for (int n = 0; n < ND; n++) {
            int c = h * HD + n * 8 + 2 * t4;
            if (r0[i] < T) st2(dq + (hb + r0[i]) * lddq + c, acc[i][n][0] * scale, acc[i][n][1] * scale);
            if (r1[i] < T) st2(dq + (hb + r1[i]) * lddq + c, acc[i][n][2] * scale, acc[i][n][3] * scale);
        }
}

// ---------------------------------------------------------------- backward 2: dk, dv (reads D from dsum)
template <int HD, typename TI, typename TG>
__device__ void flash_bwd_dkdv(const TG* dout, const TI* q, const TI* k, const TI* v, const float* lse, const float* dsum,
                               const int* seg, float* dk, float* dv, int T, int H, int ldg, int ldq, int ldk, int ldv,
                               int lddk, int lddv, float scale) {
    constexpr int BC = 64, BR = HD <= 64 ? 64 : 32, KS = HD / 16, ND = HD / 8, SK = HD + 8;
    __shared__ __align__(16) u16 sQ[2][BR * SK];
    __shared__ __align__(16) u16 sG[2][BR * SK];
    __shared__ float sL[2][BR], sD[2][BR];
    __shared__ int sSeg[2][BR];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    int b, h, tile; if (!block_tile(false, (T + BC - 1) / BC, b, h, tile)) return;
    const int kb = tile * BC;
    const int j0 = kb + warp * 16 + g, j1 = j0 + 8;
    const long hb = (long)b * T, lb = ((long)b * H + h) * T;
    const float sl = scale * 1.4426950408889634f;
    Tile<BR, HD, TI> tq;                               // query tile i+1 flies while tile i is computed
    Tile<BR, HD, TG> tg;
    tq.issue(q, hb * ldq + h * HD, ldq, kb, T, sQ[0], SK); tg.issue(dout, hb * ldg + h * HD, ldg, kb, T, sG[0], SK);
    float nL = 0.f, nD = 0.f; int nS = -1;             // the next tile's lse, D and segment of query tid (tid < BR)
    if (tid < BR && kb + tid < T) { nL = lse[lb + kb + tid] * 1.4426950408889634f; nD = dsum[lb + kb + tid]; nS = seg ? seg[hb + kb + tid] : 0; }
    u32 ka[KS][4], va[KS][4];
    load_a<KS>(ka, k, hb + j0, hb + j1, j0 < T, j1 < T, ldk, h * HD + 2 * t4);
    load_a<KS>(va, v, hb + j0, hb + j1, j0 < T, j1 < T, ldv, h * HD + 2 * t4);
    const int sg0 = (seg && j0 < T) ? seg[hb + j0] : 0, sg1 = (seg && j1 < T) ? seg[hb + j1] : 0;
    const bool seen0 = j0 < T && sg0 >= 0, seen1 = j1 < T && sg1 >= 0;
    float gk[ND][4], gv[ND][4];
#pragma unroll
    for (int n = 0; n < ND; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) gk[n][e] = gv[n][e] = 0.f;
    for (int q0 = kb, buf = 0; q0 < T; q0 += BR, buf ^= 1) {   // causal: only queries t >= kb see these keys
        tq.land(sQ[buf], SK); tg.land(sG[buf], SK);
        if (tid < BR) { sL[buf][tid] = nL; sD[buf][tid] = nD; sSeg[buf][tid] = nS; }
        cp_wait_all();
        __syncthreads();                               // tile i is in the buffers [buf]; every warp is done with tile i-1
        if (q0 + BR < T) {
            const int t = q0 + BR + tid;
            tq.issue(q, hb * ldq + h * HD, ldq, q0 + BR, T, sQ[buf ^ 1], SK); tg.issue(dout, hb * ldg + h * HD, ldg, q0 + BR, T, sG[buf ^ 1], SK);
            if (tid < BR) { nL = t < T ? lse[lb + t] * 1.4426950408889634f : 0.f; nD = t < T ? dsum[lb + t] : 0.f; nS = t < T ? (seg ? seg[hb + t] : 0) : -1; }
        }
        const u16 *cQ = sQ[buf], *cG = sG[buf]; const float *cL = sL[buf], *cD = sD[buf]; const int* cSeg = sSeg[buf];
        const bool need_mask = seg || q0 < kb + BC || q0 + BR > T || !seen0 || !seen1;
        constexpr int HB = 16, NH = HB / 8;
        for (int hh = 0; hh < BR / HB; hh++) {         // the tile's queries 16 at a time: only their Sᵀ and dPᵀ live in registers
            const u16 *hQ = cQ + hh * HB * SK, *hG = cG + hh * HB * SK;
            float s[NH][4], dp[NH][4];                 // transposed: rows = this warp's keys, columns = queries
#pragma unroll
            for (int n = 0; n < NH; n++) { s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f; dp[n][0] = dp[n][1] = dp[n][2] = dp[n][3] = 0.f; }
            mma_abt<NH, KS>(s, ka, hQ, SK, lane);      // Sᵀ = K Qᵀ
            mma_abt<NH, KS>(dp, va, hG, SK, lane);     // dPᵀ = V dOᵀ
#pragma unroll
            for (int n = 0; n < NH; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int tt = hh * HB + n * 8 + 2 * t4 + (e & 1), t = q0 + tt, j = e < 2 ? j0 : j1;
                    if (need_mask && !(j <= t && t < T && (e < 2 ? seen0 : seen1) && (!seg || cSeg[tt] == (e < 2 ? sg0 : sg1))))
                        s[n][e] = MINT_NEG_INF;
                    float p = ex2(fmaf(s[n][e], sl, -cL[tt]));
                    s[n][e] = p;
                    dp[n][e] = p * (dp[n][e] - cD[tt]);   // dSᵀ
                }
            mma_pb<ND, HB / 16>(gv, s, hG, SK, lane);  // dv += Pᵀ dO
            mma_pb<ND, HB / 16>(gk, dp, hQ, SK, lane); // dk += dSᵀ Q
        }
    }
#pragma unroll
    for (int n = 0; n < ND; n++) {
        int c = h * HD + n * 8 + 2 * t4;
        if (j0 < T) { st2(dk + (hb + j0) * lddk + c, gk[n][0] * scale, gk[n][1] * scale); st2(dv + (hb + j0) * lddv + c, gv[n][0], gv[n][1]); }
        if (j1 < T) { st2(dk + (hb + j1) * lddk + c, gk[n][2] * scale, gk[n][3] * scale); st2(dv + (hb + j1) * lddv + c, gv[n][2], gv[n][3]); }
    }
}
