"The tensor-core chapter's emulation without a GPU: mma.sync's lane maps, the warp-level product they give, and v7's ldmatrix addressing."
import numpy as np
import pytest
from mint import tensor_cores as TC

ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize("kind", ["bf16", "tf32"])
def test_lane_maps_are_bijections(kind):
    m, n, k = TC.MMA_SHAPES[kind]
    for which, (R, C) in dict(a=(m, k), b=(k, n), c=(m, n)).items():
        rows, cols = TC.frag_maps(kind)[which]
        assert rows.shape[0] == 32 and rows.shape == cols.shape
        assert (np.bincount((rows * C + cols).ravel(), minlength=R * C) == 1).all(), which


def test_known_lane_elements():
    "Spot checks against the PTX ISA's tables: lane 5 (group 1, thread 1) of m16n8k16."
    (ra, ca), (rb, cb), (rc, cc) = (TC.frag_maps("bf16")[w] for w in "abc")
    assert list(zip(ra[5], ca[5])) == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]
    assert list(zip(rb[5], cb[5])) == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert list(zip(rc[5], cc[5])) == [(1, 2), (1, 3), (9, 2), (9, 3)]


@pytest.mark.parametrize("kind, shape", [("bf16", (37, 21, 45)), ("tf32", (19, 13, 29)), ("bf16", (16, 8, 16))])
def test_emulated_warp_gemm_is_the_product(kind, shape):
    M, N, K = shape
    rng = np.random.default_rng(M * N * K)
    A, B = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    if kind == "bf16":
        A, B = (x.astype(ml_dtypes.bfloat16).astype(np.float32) for x in (A, B))
    ref = A.astype(np.float64) @ B
    assert np.abs(TC.warp_gemm_emulate(A, B, kind) - ref).max() <= 1e-5 * np.abs(ref).max()


@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_addresses_give_the_fragments(trans):
    lane = np.arange(32)
    rng = np.random.default_rng(int(trans))
    (ra, ca), (rb, cb) = TC.frag_maps("bf16")["a"], TC.frag_maps("bf16")["b"]
    opA, opB = rng.standard_normal((2, 32, 32)).astype(np.float32)          # tiles bigger than one fragment
    for mb, kk in ((0, 0), (16, 16)):
        sA = opA.T.copy() if trans else opA
        regs = TC.ldmatrix_emulate(sA, *TC.a_frag_rows(lane, mb, kk, trans), trans=trans).reshape(32, 8)
        assert (regs == opA[mb + ra, kk + ca]).all()
        sB = opB.T.copy() if trans else opB                                  # B kept [n][k] when trans_b
        regs = TC.ldmatrix_emulate(sB, *TC.b_frag_rows(lane, mb, kk, trans), trans=not trans)
        assert (regs[:, :2].reshape(32, 4) == opB[kk + rb, mb + cb]).all()
        assert (regs[:, 2:].reshape(32, 4) == opB[kk + rb, mb + 8 + cb]).all()


def test_tile_configs_and_sources():
    for c in TC.V7_TILES:
        assert c.check().shared_bytes() <= TC.SHARED_BYTES_MAX
    name, src = TC.tc_source(7, cfg=TC.V7_TILES[0], trans_a=True)
    assert name in src and "#define MINT_TA 1" in src and "ldmatrix" in src
    with pytest.raises(ValueError, match="bytes of shared memory"):
        TC.TcConfig(256, 256, 64, 2, 4, 4).check()


def test_v8_spread_only_where_the_grid_is_resident():
    # d768 out dW (18 tiles of 128 x 256): seven splits spread on 132 multiprocessors, never a spread that would not fit
    assert TC.v8_plan(768, 768, 16384, sms=132) == (256, 7) and TC.v8_spread(768, 768, 256, 7, sms=132)
    assert not TC.v8_spread(768, 768, 256, 2, sms=132)                 # two splits: the chain's one link
    assert not TC.v8_spread(768, 768, 256, 7, sms=100)                 # 126 blocks on 100 multiprocessors: a chain
    for sms in (16, 78, 114, 132):
        for M, N, K in ((768, 768, 16384), (1536, 512, 8192), (136, 263, 16384), (4096, 4096, 4096)):
            bn, s = TC.v8_plan(M, N, K, sms=sms)
            if TC.v8_spread(M, N, bn, TC.v8_k_split(K, s)[1], sms=sms):
                assert TC.cdiv(M, 128) * TC.cdiv(N, bn) * TC.v8_k_split(K, s)[1] <= sms
    chain, spread = TC.tc_source(8, bn=256), TC.tc_source(8, bn=256, spread=True)
    assert spread[0] == chain[0] + "_spread" and "red.release" in spread[1] and "red.release" not in chain[1]


def test_v8_workspace_holds_every_resident_spread():
    # v8_workspace is sized once, sms x one 128 x 256 tile of partials: every grid v8_resident lets spread must fit it
    for sms in range(16, 149, 4):
        for bn in TC.V8_STAGES:
            for S in range(1, TC.V8_MAX_SPLITS + 1):
                for M in range(1, 1400, 61):
                    for N in range(1, 1400, 53):
                        if TC.v8_resident(M, N, bn, S, sms=sms): assert S * M * N <= sms * 128 * 256, (sms, bn, S, M, N)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_tc_reference_is_the_float64_product_of_the_bf16_operands(ta, tb):
    import ml_dtypes
    a, b, a16, b16, _ = TC.tc_problem(37, 29, 41, ta, tb, seed=3)
    A, B = (x.astype(ml_dtypes.bfloat16).astype(np.float64) for x in (a, b))     # the bf16 rounding of each operand
    exact = (A.T if ta else A) @ (B.T if tb else B)
    rows = np.array([0, 5, 36])
    assert np.allclose(TC.tc_reference(a16, b16, ta, tb), exact, rtol=0, atol=1e-12)
    assert np.allclose(TC.tc_reference(a16, b16, ta, tb, rows), exact[rows], rtol=0, atol=1e-12)
