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

// A tile of ROWS rows of one head, global -> registers (fetch) -> shared memory, row-major with a padded stride (put).
// Rows at or past T are zeros. With PF (prefetch) a kernel fetches the next tile before computing on this one, so the
// loads fly during the products: worth its registers only where occupancy survives it (dkdv at head_dim <= 64).
template <int ROWS, int HD>
struct Tile {
    static constexpr int N = (ROWS * HD / 8 + 127) / 128;         // 16-byte chunks per thread
    uint4 r[N];
    template <typename TI>
    __device__ __forceinline__ void fetch(const TI* p, long base, int ld, int r0, int T) {
#pragma unroll
        for (int n = 0; n < N; n++) {
            int i = threadIdx.x + 128 * n, row = i / (HD / 8), c = (i % (HD / 8)) * 8, t = r0 + row;
            r[n] = (i < ROWS * HD / 8 && t < T) ? ld8(p + base + (long)t * ld + c) : make_uint4(0, 0, 0, 0);
        }
    }
    __device__ __forceinline__ void put(u16* s, int S) const {
#pragma unroll
        for (int n = 0; n < N; n++) {
            int i = threadIdx.x + 128 * n, row = i / (HD / 8), c = (i % (HD / 8)) * 8;
            if (i < ROWS * HD / 8) *(uint4*)&s[row * S + c] = r[n];
        }
    }
};

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

// ---------------------------------------------------------------- forward
template <int HD, typename TI, typename TO, bool PF = false>
__device__ void flash_fwd(const TI* q, const TI* k, const TI* v, TO* o, float* lse, const int* seg,
                          int T, int H, int ldq, int ldk, int ldv, int ldo, float scale) {
    constexpr int BR = 64, BC = 64, KS = HD / 16, NB = BC / 8, ND = HD / 8, SK = HD + 8;
    __shared__ __align__(16) u16 sK[BC * SK];
    __shared__ __align__(16) u16 sV[BC * SK];
    __shared__ int sSeg[BC];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * BR;
    const int r0 = q0 + warp * 16 + g, r1 = r0 + 8;
    const long hb = (long)b * T;                       // first row of this sequence
    const float sl = scale * 1.4426950408889634f;      // scores in log2 units: exp(x) = exp2(x log2 e)
    u32 qa[KS][4];
    load_a<KS>(qa, q, hb + r0, hb + r1, r0 < T, r1 < T, ldq, h * HD + 2 * t4);
    const int sg0 = (seg && r0 < T) ? seg[hb + r0] : 0, sg1 = (seg && r1 < T) ? seg[hb + r1] : 0;
    const bool see0 = r0 < T && sg0 >= 0, see1 = r1 < T && sg1 >= 0;
    float m0 = MINT_NEG_INF, m1 = MINT_NEG_INF, l0 = 0.f, l1 = 0.f;
    float acc[ND][4];
#pragma unroll
    for (int n = 0; n < ND; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    const int kend = min(T, q0 + BR);
    Tile<BC, HD> tk, tv;                               // with PF, the next tile's loads fly while this one is computed
    if (PF) { tk.fetch(k, hb * ldk + h * HD, ldk, 0, T); tv.fetch(v, hb * ldv + h * HD, ldv, 0, T); }
    for (int k0 = 0; k0 < kend; k0 += BC) {
        __syncthreads();                               // every warp is done with the previous tile
        if (!PF) { tk.fetch(k, hb * ldk + h * HD, ldk, k0, T); tv.fetch(v, hb * ldv + h * HD, ldv, k0, T); }
        tk.put(sK, SK); tv.put(sV, SK);
        if (seg) for (int i = tid; i < BC; i += 128) sSeg[i] = k0 + i < T ? seg[hb + k0 + i] : -1;
        __syncthreads();
        if (PF && k0 + BC < kend) { tk.fetch(k, hb * ldk + h * HD, ldk, k0 + BC, T); tv.fetch(v, hb * ldv + h * HD, ldv, k0 + BC, T); }
        float s[NB][4];
#pragma unroll
        for (int n = 0; n < NB; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        mma_abt<NB, KS>(s, qa, sK, SK, lane);
        const bool need_mask = seg || k0 + BC > q0 + warp * 16 || k0 + BC > T || !see0 || !see1;
        float mx0 = MINT_NEG_INF, mx1 = MINT_NEG_INF;
#pragma unroll
        for (int n = 0; n < NB; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float x = s[n][e] * sl;
                if (need_mask) {
                    int jj = n * 8 + 2 * t4 + (e & 1), j = k0 + jj, r = e < 2 ? r0 : r1;
                    bool ok = j <= r && j < T && (e < 2 ? see0 : see1) && (!seg || sSeg[jj] == (e < 2 ? sg0 : sg1));
                    if (!ok) x = MINT_NEG_INF;
                }
                s[n][e] = x;
                if (e < 2) mx0 = fmaxf(mx0, x); else mx1 = fmaxf(mx1, x);
            }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffff, mx0, 1)); mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffff, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffff, mx1, 1)); mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffff, mx1, 2));
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        const float u0 = mn0 == MINT_NEG_INF ? 0.f : mn0, u1 = mn1 == MINT_NEG_INF ? 0.f : mn1;
        const float al0 = exp2f(m0 - u0), al1 = exp2f(m1 - u1);
        m0 = mn0; m1 = mn1;
        float ps0 = 0.f, ps1 = 0.f;
#pragma unroll
        for (int n = 0; n < NB; n++) {
            s[n][0] = exp2f(s[n][0] - u0); s[n][1] = exp2f(s[n][1] - u0);
            s[n][2] = exp2f(s[n][2] - u1); s[n][3] = exp2f(s[n][3] - u1);
            ps0 += s[n][0] + s[n][1]; ps1 += s[n][2] + s[n][3];
        }
        l0 = l0 * al0 + ps0; l1 = l1 * al1 + ps1;      // per-lane partial sums: the 4 lanes of a row share alpha
#pragma unroll
        for (int n = 0; n < ND; n++) { acc[n][0] *= al0; acc[n][1] *= al0; acc[n][2] *= al1; acc[n][3] *= al1; }
        mma_pb<ND, BC / 16>(acc, s, sV, SK, lane);     // O += P V, P straight from the registers of S
    }
    l0 += __shfl_xor_sync(0xffffffff, l0, 1); l0 += __shfl_xor_sync(0xffffffff, l0, 2);
    l1 += __shfl_xor_sync(0xffffffff, l1, 1); l1 += __shfl_xor_sync(0xffffffff, l1, 2);
    const float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
    for (int n = 0; n < ND; n++) {
        int c = h * HD + n * 8 + 2 * t4;
        if (r0 < T) st2(o + (hb + r0) * ldo + c, acc[n][0] * i0, acc[n][1] * i0);
        if (r1 < T) st2(o + (hb + r1) * ldo + c, acc[n][2] * i1, acc[n][3] * i1);
    }
    if (t4 == 0) {
        const long lb = ((long)b * H + h) * T;
        if (r0 < T) lse[lb + r0] = l0 > 0.f ? (m0 + log2f(l0)) * 0.6931471805599453f : -1e30f;
        if (r1 < T) lse[lb + r1] = l1 > 0.f ? (m1 + log2f(l1)) * 0.6931471805599453f : -1e30f;
    }
}

// ---------------------------------------------------------------- backward 1: dq (and D = rowsum(dO o) into dsum)
template <int HD, typename TI, typename TG, typename TO, bool PF = false>
__device__ void flash_bwd_dq(const TG* dout, const TI* q, const TI* k, const TI* v, const TO* o, const float* lse, float* dsum,
                             const int* seg, float* dq, int T, int H, int ldg, int ldq, int ldk, int ldv, int ldo, int lddq, float scale) {
    constexpr int BR = 64, BC = HD <= 64 ? 64 : 32, KS = HD / 16, NB = BC / 8, ND = HD / 8, SK = HD + 8;
    __shared__ __align__(16) u16 sK[BC * SK];
    __shared__ __align__(16) u16 sV[BC * SK];
    __shared__ int sSeg[BC];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * BR;
    const int r0 = q0 + warp * 16 + g, r1 = r0 + 8;
    const long hb = (long)b * T, lb = ((long)b * H + h) * T;
    const float sl = scale * 1.4426950408889634f;
    Tile<BC, HD> tk, tv;
    if (PF) { tk.fetch(k, hb * ldk + h * HD, ldk, 0, T); tv.fetch(v, hb * ldv + h * HD, ldv, 0, T); }
    u32 qa[KS][4], ga[KS][4];
    load_a<KS>(qa, q, hb + r0, hb + r1, r0 < T, r1 < T, ldq, h * HD + 2 * t4);
    load_a<KS>(ga, dout, hb + r0, hb + r1, r0 < T, r1 < T, ldg, h * HD + 2 * t4);
    float D0 = 0.f, D1 = 0.f;                          // D = rowsum(dO * o) in fp32; the 4 lanes of a row split the columns
    for (int d = 2 * t4; d < HD; d += 8) {
        if (r0 < T) D0 += ldf(dout + (hb + r0) * ldg + h * HD + d) * ldf(o + (hb + r0) * ldo + h * HD + d)
                        + ldf(dout + (hb + r0) * ldg + h * HD + d + 1) * ldf(o + (hb + r0) * ldo + h * HD + d + 1);
        if (r1 < T) D1 += ldf(dout + (hb + r1) * ldg + h * HD + d) * ldf(o + (hb + r1) * ldo + h * HD + d)
                        + ldf(dout + (hb + r1) * ldg + h * HD + d + 1) * ldf(o + (hb + r1) * ldo + h * HD + d + 1);
    }
    D0 += __shfl_xor_sync(0xffffffff, D0, 1); D0 += __shfl_xor_sync(0xffffffff, D0, 2);
    D1 += __shfl_xor_sync(0xffffffff, D1, 1); D1 += __shfl_xor_sync(0xffffffff, D1, 2);
    if (t4 == 0) { if (r0 < T) dsum[lb + r0] = D0; if (r1 < T) dsum[lb + r1] = D1; }
    const float L0 = r0 < T ? lse[lb + r0] * 1.4426950408889634f : 0.f, L1 = r1 < T ? lse[lb + r1] * 1.4426950408889634f : 0.f;
    const int sg0 = (seg && r0 < T) ? seg[hb + r0] : 0, sg1 = (seg && r1 < T) ? seg[hb + r1] : 0;
    const bool see0 = r0 < T && sg0 >= 0, see1 = r1 < T && sg1 >= 0;
    float acc[ND][4];
#pragma unroll
    for (int n = 0; n < ND; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    const int kend = min(T, q0 + BR);
    for (int k0 = 0; k0 < kend; k0 += BC) {
        __syncthreads();
        if (!PF) { tk.fetch(k, hb * ldk + h * HD, ldk, k0, T); tv.fetch(v, hb * ldv + h * HD, ldv, k0, T); }
        tk.put(sK, SK); tv.put(sV, SK);
        if (seg) for (int i = tid; i < BC; i += 128) sSeg[i] = k0 + i < T ? seg[hb + k0 + i] : -1;
        __syncthreads();
        if (PF && k0 + BC < kend) { tk.fetch(k, hb * ldk + h * HD, ldk, k0 + BC, T); tv.fetch(v, hb * ldv + h * HD, ldv, k0 + BC, T); }
        float s[NB][4], dp[NB][4];
#pragma unroll
        for (int n = 0; n < NB; n++) { s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f; dp[n][0] = dp[n][1] = dp[n][2] = dp[n][3] = 0.f; }
        mma_abt<NB, KS>(s, qa, sK, SK, lane);          // S = Q Kᵀ
        mma_abt<NB, KS>(dp, ga, sV, SK, lane);         // dP = dO Vᵀ
        const bool need_mask = seg || k0 + BC > q0 + warp * 16 || k0 + BC > T || !see0 || !see1;
#pragma unroll
        for (int n = 0; n < NB; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                bool ok = true;
                if (need_mask) {
                    int jj = n * 8 + 2 * t4 + (e & 1), j = k0 + jj, r = e < 2 ? r0 : r1;
                    ok = j <= r && j < T && (e < 2 ? see0 : see1) && (!seg || sSeg[jj] == (e < 2 ? sg0 : sg1));
                }
                float p = ok ? exp2f(s[n][e] * sl - (e < 2 ? L0 : L1)) : 0.f;
                s[n][e] = p * (dp[n][e] - (e < 2 ? D0 : D1));     // dS = P (dP - D)
            }
        mma_pb<ND, BC / 16>(acc, s, sK, SK, lane);     // dq += dS K
    }
#pragma unroll
    for (int n = 0; n < ND; n++) {
        int c = h * HD + n * 8 + 2 * t4;
        if (r0 < T) st2(dq + (hb + r0) * lddq + c, acc[n][0] * scale, acc[n][1] * scale);
        if (r1 < T) st2(dq + (hb + r1) * lddq + c, acc[n][2] * scale, acc[n][3] * scale);
    }
}

// ---------------------------------------------------------------- backward 2: dk, dv (reads D from dsum)
template <int HD, typename TI, typename TG, bool PF = (HD <= 64)>
__device__ void flash_bwd_dkdv(const TG* dout, const TI* q, const TI* k, const TI* v, const float* lse, const float* dsum,
                               const int* seg, float* dk, float* dv, int T, int H, int ldg, int ldq, int ldk, int ldv,
                               int lddk, int lddv, float scale) {
    constexpr int BC = 64, BR = HD <= 64 ? 64 : 32, KS = HD / 16, NB = BR / 8, ND = HD / 8, SK = HD + 8;
    __shared__ __align__(16) u16 sQ[BR * SK];
    __shared__ __align__(16) u16 sG[BR * SK];
    __shared__ float sL[BR], sD[BR];
    __shared__ int sSeg[BR];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int b = blockIdx.z, h = blockIdx.y, kb = blockIdx.x * BC;
    const int j0 = kb + warp * 16 + g, j1 = j0 + 8;
    const long hb = (long)b * T, lb = ((long)b * H + h) * T;
    const float sl = scale * 1.4426950408889634f;
    Tile<BR, HD> tq, tg;
    if (PF) { tq.fetch(q, hb * ldq + h * HD, ldq, kb, T); tg.fetch(dout, hb * ldg + h * HD, ldg, kb, T); }
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
    for (int q0 = kb; q0 < T; q0 += BR) {                // causal: only queries t >= kb see these keys
        __syncthreads();
        if (!PF) { tq.fetch(q, hb * ldq + h * HD, ldq, q0, T); tg.fetch(dout, hb * ldg + h * HD, ldg, q0, T); }
        tq.put(sQ, SK); tg.put(sG, SK);
        for (int i = tid; i < BR; i += 128) {
            int t = q0 + i;
            sL[i] = t < T ? lse[lb + t] * 1.4426950408889634f : 0.f;
            sD[i] = t < T ? dsum[lb + t] : 0.f;
            sSeg[i] = t < T ? (seg ? seg[hb + t] : 0) : -1;
        }
        __syncthreads();
        if (PF && q0 + BR < T) { tq.fetch(q, hb * ldq + h * HD, ldq, q0 + BR, T); tg.fetch(dout, hb * ldg + h * HD, ldg, q0 + BR, T); }
        float s[NB][4], dp[NB][4];                       // transposed: rows = this warp's keys, columns = the tile's queries
#pragma unroll
        for (int n = 0; n < NB; n++) { s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f; dp[n][0] = dp[n][1] = dp[n][2] = dp[n][3] = 0.f; }
        mma_abt<NB, KS>(s, ka, sQ, SK, lane);          // Sᵀ = K Qᵀ
        mma_abt<NB, KS>(dp, va, sG, SK, lane);         // dPᵀ = V dOᵀ
        const bool need_mask = seg || q0 < kb + BC || q0 + BR > T || !seen0 || !seen1;
#pragma unroll
        for (int n = 0; n < NB; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int tt = n * 8 + 2 * t4 + (e & 1), t = q0 + tt, j = e < 2 ? j0 : j1;
                bool ok = !need_mask || (j <= t && t < T && (e < 2 ? seen0 : seen1) && (!seg || sSeg[tt] == (e < 2 ? sg0 : sg1)));
                float p = ok ? exp2f(s[n][e] * sl - sL[tt]) : 0.f;
                s[n][e] = p;
                dp[n][e] = p * (dp[n][e] - sD[tt]);       // dSᵀ
            }
        mma_pb<ND, BR / 16>(gv, s, sG, SK, lane);      // dv += Pᵀ dO
        mma_pb<ND, BR / 16>(gk, dp, sQ, SK, lane);     // dk += dSᵀ Q
    }
#pragma unroll
    for (int n = 0; n < ND; n++) {
        int c = h * HD + n * 8 + 2 * t4;
        if (j0 < T) { st2(dk + (hb + j0) * lddk + c, gk[n][0] * scale, gk[n][1] * scale); st2(dv + (hb + j0) * lddv + c, gv[n][0], gv[n][1]); }
        if (j1 < T) { st2(dk + (hb + j1) * lddk + c, gk[n][2] * scale, gk[n][3] * scale); st2(dv + (hb + j1) * lddv + c, gv[n][2], gv[n][3]); }
    }
}
