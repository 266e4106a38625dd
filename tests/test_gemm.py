"The GEMM ladder's provider switch and its benchmark script, without a GPU (chapter 20 has the kernels' checks)."
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
    for name in ("cublas", "cublas-tf32"):
        with pytest.raises(RuntimeError, match="GEMM provider 'cublas' needs"):
            G.set_gemm_provider(name)
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
