"""Compile Mint's tensor-core kernels (chapter 24's v7 and v8, chapter 26's flash-tc, bench/v8_serial.py's other v8 entry points) for a GPU
architecture without a GPU: NVRTC turns each CUDA C++ source into PTX and nvJitLink assembles it, printing what ptxas
says of it (registers, spill stores and loads, stack). A compile error or a spill shows up here, before device time is
spent. Both libraries come from NVIDIA's pip wheels, which this script does not install:

    pip download --no-deps -d /tmp/nvrtc nvidia-cuda-nvrtc-cu12 nvidia-nvjitlink-cu12   # then unzip both wheels, or
    pip install nvidia-cuda-nvrtc-cu12 nvidia-nvjitlink-cu12                             # into a scratch venv
    python tools/ptxas_check.py --lib /tmp/nvrtc/x/nvidia            # the folder holding cuda_nvrtc/ and nvjitlink/

Exit status 1 when a source fails to compile or a kernel spills.
"""
from __future__ import annotations
import argparse, ctypes, os, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")     # mint imports without a GPU; the sources are plain strings

def wrap(name: str, types: list[str], threads: int | None) -> str:
    "A kernel calling the device function `name` with arguments of C `types` (as numba's wrapper does), so that ptxas reports on it."
    args = [f"a{i}" for i in range(len(types))]
    bounds = f"__launch_bounds__({threads}, 1) " if threads else ""
    return (f'\nextern "C" __global__ void {bounds}ptxas_check_entry(' + ", ".join(f"{t} {x}" for t, x in zip(types, args))
            + f") {{ {name}(" + ", ".join(args) + "); }\n")


def find_lib(root: Path, pattern: str) -> Path:
    hits = sorted(root.rglob(pattern))
    if not hits: sys.exit(f"ptxas_check: no {pattern} under {root}; see this script's header for where the wheels come from")
    return hits[0]


class Toolchain:
    "NVRTC (CUDA C++ -> PTX) and nvJitLink (PTX -> cubin, with ptxas's report) through ctypes."
    def __init__(self, lib: Path, arch: str):
        self.nvrtc = ctypes.CDLL(str(find_lib(lib, "libnvrtc.so.*[0-9]")))
        self.jit = ctypes.CDLL(str(find_lib(lib, "libnvJitLink.so.*[0-9]")))
        self.arch = arch

    def ptx(self, src: str) -> tuple[bytes | None, str]:
        prog = ctypes.c_void_p()
        if self.nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None): return None, "nvrtcCreateProgram failed"
        opts = [f"--gpu-architecture={self.arch}".encode(), b"-std=c++17"]
        rc = self.nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        n = ctypes.c_size_t(); self.nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value); self.nvrtc.nvrtcGetProgramLog(prog, log)
        if rc: return None, log.value.decode(errors="replace")
        self.nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value); self.nvrtc.nvrtcGetPTX(prog, buf)
        return buf.raw, log.value.decode(errors="replace")

    def assemble(self, ptx: bytes, max_registers: int | None = None) -> tuple[bool, str]:
        h = ctypes.c_void_p()
        opts = [f"-arch={self.arch}".encode(), b"-verbose", b"-O3"] + ([f"-maxrregcount={max_registers}".encode()] if max_registers else [])
        if self.jit.nvJitLinkCreate(ctypes.byref(h), len(opts), (ctypes.c_char_p * len(opts))(*opts)): return False, "nvJitLinkCreate failed"
        ok = self.jit.nvJitLinkAddData(h, 2, ptx, len(ptx), b"kernel.ptx") == 0 and self.jit.nvJitLinkComplete(h) == 0   # 2: PTX input
        logs = []
        for size, get in ((self.jit.nvJitLinkGetInfoLogSize, self.jit.nvJitLinkGetInfoLog), (self.jit.nvJitLinkGetErrorLogSize, self.jit.nvJitLinkGetErrorLog)):
            n = ctypes.c_size_t(); size(h, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value + 1); get(h, buf); logs.append(buf.value.decode(errors="replace"))
        return ok, "\n".join(logs)


def sources():
    "(label, device function, its argument types, threads for __launch_bounds__ or None, register cap or None, CUDA source) of every kernel checked."
    import numpy as np
    import mint.tensor_cores as TC, mint.flash_tc as F
    for ta in (False, True):
        for tb in (False, True):
            for bn in TC.V8_STAGES:
                for spread in (False, True):                      # the splits summed in a chain or spread
                    name, src = TC.tc_source(8, False, None, ta, tb, bn, spread)
                    yield f"v8 {bn} ta={int(ta)} tb={int(tb)}{' spread' if spread else ''}", name, ["i64"] * 13, 256, None, src
            cfg = TC.V7_TILES[0]
            name, src = TC.tc_source(7, False, cfg, ta, tb)
            yield f"v7 {cfg} ta={int(ta)} tb={int(tb)}", name, ["i64"] * 11, cfg.threads, None, src
    u, i = "unsigned long long", "int"
    for hd in F.HEAD_DIMS:                                    # chapter 26: bf16 q, k, v; fp32 dout and out (training's)
        src, name = F.tc_source(hd, np.uint16, np.float32, np.float32)
        caps = F.MAX_REGISTERS if hd <= 64 else {}
        for part, types in (("fwd", [u] * 6 + [i] * 6), ("dq", [u] * 10 + [i] * 8), ("dkdv", [u] * 9 + [i] * 8)):
            yield f"flash-tc {part} head_dim {hd}", f"mint_{part}_{name}", types + ["float"], None, caps.get(part), src
    try: import v8_serial
    except ImportError: return
    for bn in TC.V8_STAGES:                                             # the entry point v8 had before 2026-12-07
        name, src = v8_serial.variant_source(bn, True, False)
        yield f"bench/v8_serial.py before {bn} ta=1 tb=0", name, ["i64"] * 13, 256, None, src


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", type=Path, required=True, help="a folder holding libnvrtc.so.12 and libnvJitLink.so.12 (searched below it)")
    ap.add_argument("--arch", default="sm_90a", help="the GPU architecture (default sm_90a: v8's wgmma needs it)")
    a = ap.parse_args()
    tools, bad = Toolchain(a.lib, a.arch), 0
    for label, name, types, threads, cap, src in sources():
        ptx, log = tools.ptx(src + wrap(name, types, threads))
        if ptx is None:
            print(f"{label}: does not compile\n{log}"); bad += 1; continue
        ok, log = tools.assemble(ptx, cap)
        regs = re.search(r"Used (\d+) registers", log)
        spill = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
        spills = bool(spill) and any(int(x) for x in spill.groups()[1:])
        what = (f"{regs.group(1) if regs else '?'} registers, " + (f"stack {spill.group(1)} B, spill stores {spill.group(2)} B, "
                f"spill loads {spill.group(3)} B" if spill else "no ptxas report")) if ok else log.strip()
        print(f"{label:42s} {'ok' if ok and not spills else 'SPILLS' if ok else 'FAILED'}: {what}")
        bad += (not ok) or spills
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
