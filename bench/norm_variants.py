"""Where the d768 step's RMSNorm and SwiGLU kernels lose time (issue 17): each variant timed on the GPU with CUDA events
over back-to-back launches (not launch-bound), checked bit for bit against the kernel training uses.

  python bench/norm_variants.py            # [16384, 768] RMSNorm -> bf16, [16384, 2304] SwiGLU forward and backward

RMSNorm -> bf16: the training kernel (`mint.precision.rmsnorm_bf16_kernel`, one block per row) at block sizes 32-256
(the bits compared with 128 threads, the default when this was measured; training now takes `rmsnorm_block(d)`), and a variant with several rows per block (threads (tx, ty): ty the row, the tree over tx only).
SwiGLU: the row-strided kernels training uses against the earlier grid-stride kernels that divided each flat index.
"""
import time
import numpy as np
import mint  # noqa: F401  (before numba: the simulator switch)
from mint.core import simulator_enabled
from numba import cuda, float32
import math
from mint.kernels import launch, grid1d, rows_grid, _tree
from mint.precision import rmsnorm_bf16_kernel, swiglu_bf16_kernel, bf16_round, f32_bits
from mint.rmsnorm import RMSNORM_MAX_BLOCK, rmsnorm_bwd_kernel
from mint.swiglu import swiglu_value, swiglu_bwd_kernel


@cuda.jit
def rms_rows_kernel(x, g, eps, y16, rstd):
    "blockDim.y rows per block, blockDim.x threads along a row; the sum of squares reduced over tx only."
    buf = cuda.shared.array(RMSNORM_MAX_BLOCK, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.x * cuda.blockDim.y + ty
    acc = float32(0.0)
    if row < x.shape[0]:
        for j in range(tx, x.shape[1], cuda.blockDim.x):
            v = x[row, j]
            acc += v * v
    r = float32(1.0) / math.sqrt(_tree(buf, acc, tx, cuda.blockDim.x, 1, ty * cuda.blockDim.x, False) / float32(x.shape[1]) + eps)
    if row < x.shape[0]:
        if tx == 0: rstd[row] = r
        for j in range(tx, x.shape[1], cuda.blockDim.x):
            y16[row, j] = bf16_round(f32_bits(x[row, j] * r * g[j]))


@cuda.jit
def swiglu_bf16_flat_kernel(gate, up, h16):
    n_cols = gate.shape[1]
    for i in range(cuda.grid(1), gate.shape[0] * n_cols, cuda.gridsize(1)):
        r = i // n_cols
        c = i - r * n_cols
        h16[r, c] = bf16_round(f32_bits(swiglu_value(gate[r, c], up[r, c])))


def events_ms(fn, n=50):
    fn(); cuda.synchronize()
    a, b = cuda.event(), cuda.event()
    a.record()
    for _ in range(n): fn()
    b.record(); b.synchronize()
    return a.elapsed_time(b) / n


def main():
    N, d, F = (64, 96, 160) if simulator_enabled() else (16384, 768, 2304)
    n = 1 if simulator_enabled() else 50
    rng = np.random.default_rng(0)
    x = cuda.to_device(rng.standard_normal((N, d)).astype(np.float32))
    g = cuda.to_device((1 + 0.1 * rng.standard_normal(d)).astype(np.float32))
    y16, rstd = cuda.device_array((N, d), np.uint16), cuda.device_array(N, np.float32)
    y16b, rstdb = cuda.device_array((N, d), np.uint16), cuda.device_array(N, np.float32)
    eps = np.float32(1e-6)
    mb = (N * d * 6) / 1e6
    print(f"RMSNorm -> bf16 [{N}, {d}] ({mb:.0f} MB a call)")
    rmsnorm_bf16_kernel[launch(N, 128)](x, g, eps, y16, rstd)
    ref16, refr = y16.copy_to_host(), rstd.copy_to_host()
    for bs in (32, 64, 128, 256):
        t = events_ms(lambda: rmsnorm_bf16_kernel[launch(N, bs)](x, g, eps, y16b, rstdb), n)
        same = np.array_equal(y16b.copy_to_host(), ref16) if bs == 128 else "-"
        print(f"  one row a block, {bs:4d} threads: {1e3 * t:8.1f} us  {mb / 1e3 / t:5.2f} TB/s  {same}")
    for bx, by in ((32, 4), (32, 8), (64, 4), (128, 2)):
        t = events_ms(lambda: rms_rows_kernel[((N + by - 1) // by,), (bx, by)](x, g, eps, y16b, rstdb), n)
        err = int(np.abs(y16b.copy_to_host().astype(np.int32) - ref16.astype(np.int32)).max())
        print(f"  {by} rows a block, {bx:3d} threads each: {1e3 * t:8.1f} us  {mb / 1e3 / t:5.2f} TB/s  max |bf16 ulp diff| {err}")
    dy, res, dx = (cuda.to_device(rng.standard_normal((N, d)).astype(np.float32)) for _ in range(3))
    mb = N * d * 16 / 1e6
    print(f"RMSNorm backward with the residual [{N}, {d}] ({mb:.0f} MB a call)")
    for bs in (32, 64, 128, 256):
        t = events_ms(lambda: rmsnorm_bwd_kernel[launch(N, bs)](dy, x, g, rstd, dx, res, True), n)
        print(f"  one row a block, {bs:4d} threads: {1e3 * t:8.1f} us  {mb / 1e3 / t:5.2f} TB/s")
    gu = cuda.to_device(rng.standard_normal((N, 2 * F)).astype(np.float32))
    gate, up = gu[:, :F], gu[:, F:]
    h16, h16b = cuda.device_array((N, F), np.uint16), cuda.device_array((N, F), np.uint16)
    mb = N * F * 10 / 1e6
    print(f"SwiGLU -> bf16 [{N}, {F}] strided gate/up ({mb:.0f} MB a call)")
    t_new = events_ms(lambda: swiglu_bf16_kernel[rows_grid(N, F)](gate, up, h16), n)
    t_old = events_ms(lambda: swiglu_bf16_flat_kernel[grid1d(N * F)](gate, up, h16b), n)
    print(f"  rows (training): {1e3 * t_new:8.1f} us {mb / 1e3 / t_new:5.2f} TB/s; flat with index division: {1e3 * t_old:8.1f} us "
          f"{mb / 1e3 / t_old:5.2f} TB/s; same bits {np.array_equal(h16.copy_to_host(), h16b.copy_to_host())}")
    dh = cuda.to_device(rng.standard_normal((N, F)).astype(np.float32))
    dg, du = cuda.device_array((N, F), np.float32), cuda.device_array((N, F), np.float32)
    mb = N * F * 20 / 1e6
    t = events_ms(lambda: swiglu_bwd_kernel[rows_grid(N, F)](dh, gate, up, dg, du), n)
    print(f"SwiGLU backward [{N}, {F}] ({mb:.0f} MB a call): {1e3 * t:8.1f} us {mb / 1e3 / t:5.2f} TB/s")


if __name__ == "__main__":
    main()
