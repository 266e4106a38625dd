"The benchmark's peer (bench/torch_model.py, PyTorch) computes Mint's model: same loss and gradients on the same weights."
import importlib.util, sys
from pathlib import Path
import numpy as np
import pytest

torch = pytest.importorskip("torch")   # torch is a bench-only extra: `pip install -e ".[bench]"`

BENCH = Path(__file__).resolve().parents[1] / "bench"
spec = importlib.util.spec_from_file_location("torch_parity", BENCH / "torch_parity.py")
tp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tp)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("case", tp.CASES, ids=[c[0] for c in tp.CASES])
def test_loss_and_grads_match_mint(case, dtype):
    name, cfg, packed, impl, B, T = case
    loss_err, grad_err, worst, worst_err = tp.parity(cfg, dtype, packed, impl, B, T)
    tol = tp.TOL[np.dtype(dtype).name]
    assert loss_err <= tol, f"{name}: loss differs by {loss_err:.1e} (relative)"
    assert grad_err <= tol and worst_err <= 10 * tol, f"{name}: gradients differ by {grad_err:.1e}; worst {worst} {worst_err:.1e}"


@pytest.mark.parametrize("case", tp.CASES, ids=[c[0] for c in tp.CASES])
def test_names_and_shapes_match_mint(case):
    from mint.model import param_specs
    cfg = case[1]
    model = tp.MintTorch(cfg)
    test = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    assert sorted(test) == sorted((n, tuple(s)) for n, s in param_specs(cfg))


def test_load_flat_rejects_wrong_size():
    from mint.model import n_params
    cfg = tp.CASES[0][1]
    with pytest.raises(ValueError, match="parameter buffer has shape"):
        tp.load_flat(tp.MintTorch(cfg), np.zeros(n_params(cfg) + 1, np.float32), cfg)


def test_padding_row_gives_zero_not_nan():
    "A token with seg < 0 sees nothing: its attention output is 0 (as Mint), and nothing is NaN."
    cfg = tp.CASES[0][1]
    b = tp.parity_batch(cfg, 2, 8, packed=True)
    model = tp.MintTorch(cfg, "math").double()
    loss = tp.loss_of_batch(model, tp.batch_to_torch(b))
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters())
