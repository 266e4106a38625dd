"Mint's Muon against torch.optim.Muon on the same weights and gradients (skipped without torch), and its plan and hook."
import math
import numpy as np
import pytest
from mint.core import preset, rel_error
from mint.model import init_params, n_params
from mint.muon import MuonConfig, MuonPlan, muon_update, muon_step, newton_schulz, newton_schulz_ref, optimizer_step
from mint.optim import AdamConfig, adam_step, grad_sumsq


@pytest.mark.parametrize("adjust", ["match_rms_adamw", "original"])
@pytest.mark.parametrize("nesterov", [True, False])
def test_against_torch_muon(adjust, nesterov):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    shapes, lr, wd = [(16, 24), (24, 16), (12, 12)], 0.02, 0.1
    mc = MuonConfig(nesterov=nesterov, adjust=adjust)
    W0 = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    tw = [torch.nn.Parameter(torch.tensor(w)) for w in W0]
    opt = torch.optim.Muon(tw, lr=lr, weight_decay=wd, momentum=mc.momentum, nesterov=nesterov, adjust_lr_fn=adjust)
    mw, mb = [w.copy() for w in W0], [np.zeros_like(w) for w in W0]
    for _ in range(4):
        gs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for t, g in zip(tw, gs): t.grad = torch.tensor(g)
        opt.step()
        for w, b, g in zip(mw, mb, gs): muon_update(w, g, b, lr, mc, weight_decay=wd)
    for t, w, b, w0 in zip(tw, mw, mb, W0):
        # the momentum is plain float32 arithmetic on both sides
        assert rel_error(b, opt.state[t]["momentum_buffer"].numpy()) < 1e-6
        # torch runs Newton-Schulz in bfloat16 (8-bit mantissa, ~4e-3 relative per rounding), Mint in float32
        assert rel_error(w - w0, t.detach().numpy() - w0) < 2e-2


def test_newton_schulz_paths_agree():
    rng = np.random.default_rng(1)
    for shape in [(5, 9), (9, 5), (7, 7)]:
        G = rng.standard_normal(shape)
        np.testing.assert_allclose(newton_schulz(G.copy()), newton_schulz_ref(G), rtol=0, atol=1e-12)
        s = np.linalg.svd(newton_schulz_ref(G), compute_uv=False)
        assert 0.5 < s.min() and s.max() < 1.3


def test_muon_step_splits_the_buffer():
    "muon_step = muon_update on each layer matrix + adam_step on each other run, with the same clipping."
    cfg = preset("tiny", vocab_size=50)
    plan = MuonPlan(cfg)
    n = n_params(cfg)
    rng = np.random.default_rng(2)
    p = init_params(cfg); g = rng.standard_normal(n).astype(np.float32) * 10
    m, v = np.zeros(n, np.float32), np.zeros(n, np.float32)
    acfg = AdamConfig(lr=1e-3, max_grad_norm=50.0, weight_decay=0.01)
    p2, g2, m2, v2 = p.copy(), g.copy(), m.copy(), v.copy()
    s = grad_sumsq(g)
    assert muon_step(p, g, m, v, 1e-3, 1, acfg, sumsq=s, plan=plan) == 0
    scale = 50.0 / math.sqrt(s)
    for _, o, shape in plan.matrices:
        k = math.prod(shape)
        at = lambda a: a[o:o + k].reshape(shape)
        muon_update(at(p2), at(g2), at(m2), 1e-3, plan.mcfg, 0.01, scale)
    for a, e in plan.adam_runs:
        adam_step(p2[a:e], g2[a:e], m2[a:e], v2[a:e], 1e-3, 1, acfg, sumsq=s)
    np.testing.assert_array_equal(p, p2); np.testing.assert_array_equal(m, m2); np.testing.assert_array_equal(v, v2)
    for _, o, shape in plan.matrices:                      # Muon's matrices leave Adam's second moment alone
        assert not v[o:o + math.prod(shape)].any()


def test_nonfinite_gradient_drops_the_step():
    cfg = preset("tiny", vocab_size=50)
    n = n_params(cfg)
    p = init_params(cfg); p0 = p.copy()
    g = np.ones(n, np.float32); g[7] = np.nan
    m, v = np.zeros(n, np.float32), np.zeros(n, np.float32)
    step = optimizer_step("muon", cfg)
    assert step(p, g, m, v, 1e-3, 1, AdamConfig(), sumsq=grad_sumsq(g)) == n
    np.testing.assert_array_equal(p, p0); assert not g.any() and not m.any()
    with pytest.raises(ValueError, match="unknown optimizer"): optimizer_step("sgd", cfg)
