"""GPU decoding with the cuBLAS GEMM providers: the one-token step recorded as a CUDA graph with cuBLAS inside it gives
the logits of the same step launched kernel by kernel, and its speed beside the hand-written GEMM's graph.

    python bench/cublas_decode_check.py [--preset d512] [--tokens 200]      # needs a CUDA GPU and libcublas (cupy)
"""
import argparse, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402,F401  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from bench_train_step import CONFIGS, PD_VOCAB, config  # noqa: E402
from mint.model import init_params  # noqa: E402
from mint.generate import Decoder  # noqa: E402
from mint.gemm import gemm_provider  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--preset", default="d512", choices=CONFIGS); ap.add_argument("--vocab-size", type=int, default=PD_VOCAB)
ap.add_argument("--tokens", type=int, default=200)
args = ap.parse_args()
cfg = config(args.preset, args.vocab_size)
P = init_params(cfg, 0)
toks = np.random.default_rng(0).integers(4, args.vocab_size, min(args.tokens, cfg.max_seq_len - 1)).tolist()
for prov in ("mint", "cublas", "cublas-tf32"):
    with gemm_provider(prov):
        out, speed = [], []
        for graphs in (True, False):
            d = Decoder(P, cfg, device="cuda", graphs=graphs)
            first = [d.feed(toks[:5]), d.feed(toks[5:6])]          # prompt, then one step kernel by kernel (compiles)
            t = time.perf_counter()
            rest = [d.feed([x]) for x in toks[6:]]
            speed.append(len(rest) / (time.perf_counter() - t))
            out.append(np.stack(first + rest))
        diff = float(np.abs(out[0] - out[1]).max())
        print(f"{args.preset} {prov:12s} graph {speed[0]:7,.0f} tok/s, kernel by kernel {speed[1]:6,.0f} tok/s; "
              f"max |graph - kernel by kernel| logit {diff:.1e}", flush=True)
        assert diff < 1e-4, diff
