"""The CPU paths' compiled loops that may write over their input ("out may be x"): numba compiles a `prange` body as
if its arrays never overlapped, so an in-place call must give the bits of a separate output. A read after a write of
the same memory broke the cross-entropy's loss value once (4815e2b); these pin every such loop."""
import numpy as np
import pytest
from mint.loss import cross_entropy_cpu
from mint.rope import rope_forward, rope_backward


@pytest.mark.parametrize("seed", range(20))
def test_cross_entropy_in_place_equals_a_separate_output(seed):
    g = np.random.default_rng(seed)
    n, v = int(g.integers(1, 300)), int(g.integers(2, 200))
    x = (g.standard_normal((n, v)) * 5).astype(np.float32)
    t, mk = g.integers(0, v, n), (g.random(n) > 0.2).astype(np.float32)
    mk[0] = 1
    l1, d1 = cross_entropy_cpu(x, t, mk)
    y = x.copy()
    l2, d2 = cross_entropy_cpu(y, t, mk, dlogits=y)
    assert l1 == l2 and np.array_equal(d1.view(np.uint32), d2.view(np.uint32))


@pytest.mark.parametrize("fn", [rope_forward, rope_backward])
def test_rope_in_place_equals_a_separate_output(fn):
    g = np.random.default_rng(1)
    x = g.standard_normal((37, 3, 8)).astype(np.float32)
    pos = g.integers(0, 64, 37).astype(np.int32)
    a = fn(x, pos)
    y = x.copy()
    b = fn(y, pos, out=y)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
