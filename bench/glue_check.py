"""The glue kernels on a GPU, checked exactly against NumPy at the d768 step's shapes: `add`, `copy`, `fill` (the flat
path of a contiguous array and the divided path of strided views) and the cuBLAS providers' bias start
(`mint.cublas.bias_rows_kernel` in the simulator; on a GPU cuBLASLt's bias epilogue through `launch_gemm` with a bias, and with a residual), RoPE against its reference, rope_bf16 (RoPE then bf16 in one launch) bit for bit against RoPE's kernel then to_bf16, to_bf16 (two elements a thread where the size is even and aligned) bit for bit, and bias_grad (row parts, then their sum) against a float64 sum, each also timed (ms, the median of 20 launches);
to_bf16_and_bias_grad (one read of dy) against the two, RMSNorm and SwiGLU straight to bf16 against the float32 kernels
then to_bf16, and SwiGLU's one-pass bf16 backward (swiglu_backward_bf16) against its steps, bit for bit;
then a bf16 + flash-tc model step on the device (each bf16 GEMM provider) against the NumPy emulation, and its --recompute
gradients bit for bit (but the embedding's, whose backward adds with atomics: chapter 27).

    python bench/glue_check.py          # needs a CUDA GPU; exit 1 if any check fails"""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402,F401  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from mint.kernels import add, copy, fill  # noqa: E402
from mint.gemm import gemm_provider, launch_gemm, GEMM_PROVIDERS  # noqa: E402


def ms(fn, n=20):
    if simulator_enabled(): n = 1
    fn(); cuda.synchronize(); ts = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(); cuda.synchronize(); ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


rng = np.random.default_rng(0)
from mint.core import simulator_enabled  # noqa: E402
N, d = (96, 128) if simulator_enabled() else (32 * 512, 768)     # the simulator: a small run of the same checks
H = d // 64
a, b = (rng.standard_normal((N, d)).astype(np.float32) for _ in range(2))
da, db, do = cuda.to_device(a), cuda.to_device(b), cuda.device_array((N, d), np.float32)
ok = True
def check(name, got, want, t):
    global ok
    good = np.array_equal(got, want); ok &= good
    gb = want.nbytes * (3 if name.startswith("add") else 2) / 1e9
    print(f"{name:34s} {'exact' if good else 'WRONG'}  {t:.3f} ms  ({gb / max(t, 1e-9):.2f} TB/s of its tensors)", flush=True)
check(f"add, contiguous [{N}, {d}]", (add(da, db, do), do.copy_to_host())[1], a + b, ms(lambda: add(da, db, do)))
s3a, s3b = da.reshape(N, H, 64), db.reshape(N, H, 64)
o3 = cuda.to_device(np.zeros((N, H, 64), np.float32))
va, vb, vo = s3a[:, 1:], s3b[:, 1:], o3[:, 1:]      # views made once, as the model's are (numba takes ~0.7 s to slice these)
add(va, vb, vo); w = np.zeros((N, H, 64), np.float32); w[:, 1:] = (a + b).reshape(N, H, 64)[:, 1:]
check("add, strided view [N, H-1, 64]", o3.copy_to_host(), w, ms(lambda: add(va, vb, vo)))
check("copy, contiguous", (copy(da, do), do.copy_to_host())[1], a, ms(lambda: copy(da, do)))
check("fill, contiguous", (fill(do, 0.25), do.copy_to_host())[1], np.full((N, d), 0.25, np.float32), ms(lambda: fill(do, 0.25)))
bias = rng.standard_normal(3 * d).astype(np.float32)
x16 = rng.integers(0, 1, (N, d)).astype(np.float32)                       # zero operands: the product is exactly the bias
w = np.zeros((3 * d, d), np.float32)
dx, dw, dbias, dout = cuda.to_device(x16), cuda.to_device(w), cuda.to_device(bias), cuda.device_array((N, 3 * d), np.float32)
if simulator_enabled():                                                   # no cuBLAS: the bias start alone
    from mint.cublas import bias_rows_kernel
    from mint.kernels import rows_grid
    bias_rows_kernel[rows_grid(N, 3 * d)](dout, dbias)
    check("bias_rows_kernel", dout.copy_to_host(), np.broadcast_to(bias, (N, 3 * d)), 0.0)
for prov in [p for p in ("cublas-tf32", "cublas") if p in GEMM_PROVIDERS and not simulator_enabled()]:
    with gemm_provider(prov):
        launch_gemm(dx, dw, dout, dbias, False, True)
        check(f"{prov} GEMM with bias (cuBLASLt epilogue)", dout.copy_to_host(), np.broadcast_to(bias, (N, 3 * d)),
              ms(lambda: launch_gemm(dx, dw, dout, dbias, False, True)))
        res = rng.standard_normal((N, 3 * d)).astype(np.float32); dres = cuda.to_device(res)
        launch_gemm(dx, dw, dout, dbias, False, True, residual=dres)      # zero product: exactly fl(residual + bias)
        check(f"{prov} GEMM + bias + residual (cuBLASLt)", dout.copy_to_host(), res + bias,
              ms(lambda: launch_gemm(dx, dw, dout, dbias, False, True, residual=dres)))
from mint.rope import rope_forward, rope_forward_ref       # noqa: E402
xq = rng.standard_normal((N, H, 64)).astype(np.float32)
pos = (np.arange(N) % 512).astype(np.int32)
dxq, dpos, drot = cuda.to_device(xq), cuda.to_device(pos), cuda.device_array((N, H, 64), np.float32)
got = (rope_forward(dxq, dpos, out=drot), drot.copy_to_host())[1]
err = float(np.abs(got - rope_forward_ref(xq, pos)).max()); ok &= err < 1e-5
print(f"{f'rope [{N}, {H}, 64]':34s} max |err| vs reference {err:.1e}  {ms(lambda: rope_forward(dxq, dpos, out=drot)):.3f} ms", flush=True)
from mint.precision import to_bf16, to_bf16_ref         # noqa: E402
edge = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1 + 2**-8, 1 + 3 * 2**-8, 3.4e38, 1e-45], np.float32)
xb = np.concatenate([a.ravel()[:-edge.size], edge]).reshape(N, d)       # ties, NaNs, infinities, the largest, subnormals
dxb, d16 = cuda.to_device(xb), cuda.device_array((N, d), np.uint16)
check("to_bf16, pairs (even size)", (to_bf16(dxb, d16), d16.copy_to_host())[1], to_bf16_ref(xb), ms(lambda: to_bf16(dxb, d16)))
odd = cuda.device_array(N * d - 1, np.uint16)
check("to_bf16, one at a time (odd size)", (to_bf16(dxb.reshape(N * d)[1:], odd), odd.copy_to_host())[1], to_bf16_ref(xb.ravel()[1:]),
      ms(lambda: to_bf16(dxb.reshape(N * d)[1:], odd)))
from mint.flash_tc import rope_bf16                        # noqa: E402
q3 = rng.standard_normal((N, 3, H, 64)).astype(np.float32)                 # the fused projection's rows: q | k | v
dq3, d3 = cuda.to_device(q3), cuda.device_array((3, N, H, 64), np.uint16)
want3 = np.stack([to_bf16(rope_forward(cuda.to_device(np.ascontiguousarray(q3[:, i])), dpos)).copy_to_host() for i in (0, 1)]
                 + [to_bf16_ref(q3[:, 2])])                             # the kernels' RoPE, then rounded: the same bits
qv, kv_, vv = dq3[:, 0], dq3[:, 1], dq3[:, 2]
check("rope_bf16 (strided q, k, v rows)", (rope_bf16(qv, kv_, vv, dpos, out=d3), d3.copy_to_host())[1], want3,
      ms(lambda: rope_bf16(qv, kv_, vv, dpos, out=d3)))
from mint.matmul import bias_grad                          # noqa: E402
gb = cuda.device_array(d, np.float32)
g1 = bias_grad(da, out=gb).copy_to_host(); g2 = bias_grad(da, out=gb).copy_to_host()
err = float(np.linalg.norm(g1 - a.astype(np.float64).sum(0)) / np.linalg.norm(a.astype(np.float64).sum(0)))
ok &= err < 1e-5 and np.array_equal(g1, g2)
print(f"{f'bias_grad [{N}, {d}]':34s} rel err {err:.1e}, same bits twice {np.array_equal(g1, g2)}  "
      f"{ms(lambda: bias_grad(da, out=gb)):.3f} ms", flush=True)
from mint.precision import to_bf16_and_bias_grad           # noqa: E402
d16b, gb2 = cuda.device_array((N, d), np.uint16), cuda.device_array(d, np.float32)
to_bf16_and_bias_grad(da, d16b, gb2)
check("to_bf16_and_bias_grad: dy16", d16b.copy_to_host(), to_bf16_ref(a), ms(lambda: to_bf16_and_bias_grad(da, d16b, gb2)))
check("to_bf16_and_bias_grad: db = bias_grad", gb2.copy_to_host(), g1, 0.0)
from mint.precision import rmsnorm_forward_bf16, swiglu_forward_bf16   # noqa: E402
from mint.rmsnorm import rmsnorm_forward                   # noqa: E402
from mint.swiglu import swiglu_forward                     # noqa: E402
gn = cuda.to_device(rng.standard_normal(d).astype(np.float32))
n16, rs = cuda.device_array((N, d), np.uint16), cuda.device_array(N, np.float32)
rmsnorm_forward_bf16(da, gn, 1e-6, n16, rs)
check("rmsnorm_forward_bf16 = RMSNorm, to_bf16", n16.copy_to_host(), to_bf16(rmsnorm_forward(da, gn, 1e-6)[0]).copy_to_host(),
      ms(lambda: rmsnorm_forward_bf16(da, gn, 1e-6, n16, rs)))
F2 = 3 * d                                                 # d_ff
gu = cuda.to_device(rng.standard_normal((N, 2, F2)).astype(np.float32) * 4)    # the fused GEMM's rows: gate | up
gate_v, up_v, s16 = gu[:, 0], gu[:, 1], cuda.device_array((N, F2), np.uint16)
swiglu_forward_bf16(gate_v, up_v, s16)
check("swiglu_forward_bf16 = SwiGLU, to_bf16", s16.copy_to_host(), to_bf16(swiglu_forward(gate_v, up_v)).copy_to_host(),
      ms(lambda: swiglu_forward_bf16(gate_v, up_v, s16)))
from mint.precision import swiglu_backward_bf16             # noqa: E402
from mint.swiglu import swiglu_backward                    # noqa: E402
dh2, t32 = cuda.to_device(rng.standard_normal((N, F2)).astype(np.float32)), cuda.device_array((N, 2 * F2), np.float32)
g16f, g16u = cuda.device_array((N, 2 * F2), np.uint16), cuda.device_array((N, 2 * F2), np.uint16)
dbf, dbu = cuda.device_array(2 * F2, np.float32), cuda.device_array(2 * F2, np.float32)
swiglu_backward_bf16(dh2, gate_v, up_v, g16f, dbf)                          # one pass (N > 1024: the fused kernel)
swiglu_backward(dh2, gate_v, up_v, dgate=t32[:, :F2], dup=t32[:, F2:]); to_bf16_and_bias_grad(t32, g16u, dbu)   # the steps
check("swiglu_backward_bf16: dgu16 = steps", g16f.copy_to_host(), g16u.copy_to_host(), ms(lambda: swiglu_backward_bf16(dh2, gate_v, up_v, g16f, dbf)))
check("swiglu_backward_bf16: db = steps", dbf.copy_to_host().view(np.uint32), dbu.copy_to_host().view(np.uint32), 0.0)
# The model step that uses them: bf16 + flash-tc (rope_bf16, bf16 q/k/v/o), the device against the NumPy emulation, and
# --recompute's gradients (block and mlp) against the step without it, bit for bit on the device
from mint.core import ModelConfig                           # noqa: E402
from mint.model import Workspace, init_params, views, loss_forward, backward   # noqa: E402
from mint.gpu_train import device_workspace                # noqa: E402
from mint.data import Batch                                # noqa: E402
Bm, Tm = (2, 8) if simulator_enabled() else (16, 128)     # GPU: 2,048 rows, so the one-pass backward kernels run
cm = ModelConfig(vocab_size=64, d_model=32 if simulator_enabled() else 256, n_heads=2 if simulator_enabled() else 4,
                 n_layers=2, max_seq_len=Tm, attention_bias=True)
pm = init_params(cm, seed=0)
ids = rng.integers(0, 64, (Bm, Tm)).astype(np.int32)
bm = Batch(ids, np.roll(ids, -1, 1), np.ones((Bm, Tm), np.float32), np.tile(np.arange(Tm, dtype=np.int32), (Bm, 1)), None)
def step(ws, W, g):
    v_ = ws.load_batch(bm); L_ = loss_forward(W, cm, v_); backward(W, views(g, cm), cm, v_)
    return float(np.asarray(L_.copy_to_host() if hasattr(L_, "copy_to_host") else L_).ravel()[0]), (g.copy_to_host() if hasattr(g, "copy_to_host") else g)
emb = slice(0, cm.vocab_size * cm.d_model)     # model.embed_tokens.weight: its backward adds with atomics, in any order on a GPU
rest = lambda g: np.delete(g, emb)
lh, gh = step(Workspace(cm, Bm, Tm, attention="flash-tc", precision="bf16"), views(pm, cm), np.zeros_like(pm))
from mint.gemm import gemm_provider                        # noqa: E402
for prov in ["mint"] if simulator_enabled() else ["mint", "cublas-bf16", "tc"]:
    with gemm_provider(prov):
        Wd = views(cuda.to_device(pm), cm)
        runs = [step(device_workspace(cm, Bm, Tm, attention="flash-tc", precision="bf16", recompute=r), Wd,
                     cuda.to_device(np.zeros_like(pm))) for r in (False, True, "mlp")]
    rel = float(np.linalg.norm(runs[0][1] - gh) / np.linalg.norm(gh))
    same = all(np.array_equal(rest(runs[0][1]), rest(r[1])) and runs[0][0] == r[0] for r in runs[1:])
    ok &= abs(runs[0][0] - lh) < 1e-3 and rel < 1e-2 and same
    print(f"{f'model step, bf16 + flash-tc, {prov}':34s} loss device {runs[0][0]:.6f} NumPy {lh:.6f}; grads rel diff {rel:.1e}; "
          f"--recompute block and mlp: loss and non-embedding gradients the same bits {same}, embedding gradient rel diff "
          f"{np.linalg.norm(runs[1][1][emb] - runs[0][1][emb]) / np.linalg.norm(runs[0][1][emb]):.1e}", flush=True)
print("glue check", "passed" if ok else "FAILED")
sys.exit(0 if ok else 1)
