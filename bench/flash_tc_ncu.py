"""One forward + backward of the tensor-core flash attention (mint.flash_tc) and of SDPA's flash backend at seq 512,
head_dim 64 (B 16, H 16, causal, bf16 q/k/v), for Nsight Compute to profile kernel by kernel:

    ncu --clock-control none -k regex:'flash|fwd_kernel|dq_kernel|dkdv_kernel' --section SpeedOfLight ... python bench/flash_tc_ncu.py [SASS_DIR [CU [REGS]]]
"""
import numpy as np, torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
from numba import cuda
import os, sys
import mint.flash_tc as FT
from mint.flash_tc import flash_tc_forward, flash_tc_backward
if len(sys.argv) > 2: FT.FLASH_TC_CU = open(sys.argv[2]).read()          # other device code (e.g. bench/flash_tc_v3.cu) ...
if len(sys.argv) > 3:                                                          # ... and register caps F/Q/D
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from flash_tc_bench import register_caps
    FT.MAX_REGISTERS = register_caps(sys.argv[3])

B, T, H, hd = 16, 512, 16, 64
g = torch.Generator(device="cuda").manual_seed(0)
qkv = torch.randn((3, B, T, H, hd), device="cuda", dtype=torch.bfloat16, generator=g)
dout16 = torch.randn((B, T, H, hd), device="cuda", dtype=torch.bfloat16, generator=g)
as_nb = lambda t: cuda.as_cuda_array(t.view(torch.int16)).view(np.uint16)
mq, mk, mv = (as_nb(x) for x in qkv)
dout = cuda.as_cuda_array(dout16.float())
out, lse = flash_tc_forward(mq, mk, mv)
flash_tc_backward(dout, mq, mk, mv, out, lse)
q, k, v = (x.clone().requires_grad_(True) for x in qkv)
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
torch.autograd.grad(o, (q, k, v), dout16.transpose(1, 2))
torch.cuda.synchronize()
print("done")
if len(sys.argv) > 1:                                                          # also write the three kernels' SASS there
    from mint.flash_tc import make_tc_kernels
    for name, kern in zip(("fwd", "dq", "dkdv"), make_tc_kernels(hd, np.uint16, np.float32, np.float32)):
        for sig in kern.overloads:
            try: open(os.path.join(sys.argv[1], f"sass_{name}.txt"), "w").write(kern.inspect_sass(sig))
            except Exception as e: print("sass", name, repr(e)[:200])
