"Training's GEMM (mint.gemm: its provider switch, what it imports) and the ladder's benchmark script, without a GPU (chapters 20, 20b and 24 have the kernels' checks)."
import json, os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_cublas_provider_without_cupy_is_a_clear_error():
    from mint import gemm as G
    if not G.simulator_enabled():
        try:
            import cupy  # noqa: F401
            pytest.skip("cupy is installed here: the provider may work")
        except ImportError:
            pass
    for name in ("cublas", "cublas-tf32", "cublas-bf16"):             # the error names the provider asked for
        with pytest.raises(RuntimeError, match=f"GEMM provider '{name}'(: the cuBLAS library did not load| needs a real GPU)"):
            G.set_gemm_provider(name)
    if G.simulator_enabled():
        with pytest.raises(RuntimeError, match="GEMM provider 'tc' needs a real GPU"):
            G.set_gemm_provider("tc")
    assert G.get_gemm_provider() == "mint"
    with pytest.raises(ValueError, match="unknown GEMM provider 'mkl'"):
        G.set_gemm_provider("mkl")


def test_gemm_ladder_script_runs_tiny_in_the_simulator(tmp_path):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    env.pop("OUT", None)
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "gemm_ladder.py"), "--tiny", "--no-sweep", "--out", str(tmp_path)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (path,) = tmp_path.glob("gemm_ladder_sim_*.json")
    doc = json.loads(path.read_text())
    assert doc["failures"] == [] and doc["tiny"]
    timed = [x for x in doc["records"] if x["kind"] == "time"]
    assert {x["version"] for x in timed} == {1, 2, 3, 4, 5} and all(x["max_err"] < 1e-5 for x in timed)
    assert any(x["version"] == 5 and x["split_k"] > 1 for x in timed)          # the tiny dW shape takes split-K
    assert "| GEMM (M×N×K) |" in r.stdout


def test_bf16_operands_on_a_float32_provider_are_widened_exactly():
    "bf16 (uint16) operands: launch_gemm with provider 'mint' (v5 multiplies float32) refuses them, naming the bf16 providers; mint.precision.gemm_bf16 widens them exactly and the result is the product of the rounded operands."
    from mint import gemm as G
    from mint.precision import to_bf16, from_bf16, gemm_bf16
    from numba import cuda
    import numpy as np
    r = np.random.default_rng(0)
    x, w = to_bf16(r.standard_normal((5, 8), dtype=np.float32)), to_bf16(r.standard_normal((3, 8), dtype=np.float32))
    with G.gemm_provider("mint"):
        with pytest.raises(ValueError, match="need a bf16 provider"):
            G.launch_gemm(cuda.to_device(x), cuda.to_device(w), None, None, False, True)
        y = gemm_bf16(cuda.to_device(x), cuda.to_device(w), trans_b=True).copy_to_host()
    exact = from_bf16(x).astype(np.float64) @ from_bf16(w).astype(np.float64).T
    assert np.abs(y - exact).max() / np.abs(exact).max() < 1e-6
    with pytest.raises(ValueError, match="must be float32 or uint16"):
        G.launch_gemm(cuda.to_device(np.zeros((4, 8))), cuda.to_device(np.zeros((8, 4))), None, None, False, False)


def test_no_import_circle_between_matmul_and_gemm():
    "mint.gemm (training's GEMM), mint.cublas and mint.tensor_cores import neither mint.matmul nor each other in a circle; the ladder imports them, never the reverse."
    import ast
    deps = {}
    for mod in ("matmul", "gemm", "gemm_ladder", "cublas", "tensor_cores", "kernels"):
        tree = ast.parse((ROOT / "mint" / f"{mod}.py").read_text())
        deps[mod] = {n.module.lstrip(".") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 1}
    assert "matmul" not in deps["gemm"] | deps["cublas"] | deps["tensor_cores"]
    assert "gemm" in deps["matmul"] and "gemm" not in deps["cublas"] | deps["tensor_cores"]
    assert {"gemm", "matmul"} <= deps["gemm_ladder"]
    assert not any("gemm_ladder" in d for m, d in deps.items() if m != "gemm_ladder")


@pytest.mark.parametrize("module", ["mint.train", "mint.gemm", "mint.matmul", "mint.model"])
def test_training_never_loads_the_ladder(module):
    "Training's import closure holds mint.gemm (v5, its tile choice, the launcher, the provider switch) and not the ladder's rungs and benchmark (mint.gemm_ladder)."
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    code = f"import sys, {module}; print('mint.gemm' in sys.modules, 'mint.gemm_ladder' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "False"], (module, r.stdout)
