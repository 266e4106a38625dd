"""KV-cache decoding, batch 1: Mint's `mint.generate.Decoder` (the model's one wiring with a KV cache, CPU or GPU)
against the same loop in PyTorch (`torch_model.greedy_decode`: a preallocated cache, scaled_dot_product_attention),
on the same weights, in one process; prints tokens/s and their ratio and appends a record to bench/results/.

    python bench/bench_decode.py                   # CPU
    python bench/bench_decode.py --device cuda     # GPU (PyTorch with TF32 off; Mint with and without its CUDA graph)

Both sides prefill a 16-token prompt, then decode greedily one token at a time to the end of the model's window
(the special tokens Mint never samples are excluded on both sides); only the one-at-a-time part is timed. The two
sides' greedy tokens are compared: with identical weights they should agree (float rounding can flip a near-tie
late in a sequence; the count of equal leading tokens is recorded).
"""
from __future__ import annotations
import argparse, os, statistics, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# OpenBLAS's own default, not mint.core's 12: on 2 cores PyTorch CPU's batch-1 decoding ran at half speed with NumPy's
# BLAS threads sleeping early (1,467 against ~740 tokens/s at tiny, 2026-12-05), and Mint's did not change (within
# noise, 2^12 to 2^28), so the peer runs as a PyTorch user's process would. Set it yourself to compare.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "28")
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch_model import MintTorch, load_flat, greedy_decode  # noqa: E402
from bench_train_step import CONFIGS, PD_VOCAB, config  # noqa: E402
from mint.model import init_params, flops_per_token  # noqa: E402
from mint.generate import Decoder, allowed_logits, NEVER_SAMPLED  # noqa: E402

PROMPT = 16


def mint_greedy(dec: Decoder, prompt, n_new: int) -> tuple[list[int], float]:
    "Greedy decoding with Mint's Decoder: (the n_new ids, seconds after the prefill)."
    dec.reset()
    z = dec.feed(prompt)
    t0, out = time.perf_counter(), []
    for _ in range(n_new):
        t = int(np.argmax(allowed_logits(z)))
        out.append(t)
        if len(out) == n_new: break
        z = dec.feed([t])
    return out, time.perf_counter() - t0


def bench_config(name: str, args) -> dict:
    cfg = config(name, args.vocab_size)
    params = init_params(cfg, seed=0)
    params += np.random.default_rng(1).standard_normal(params.shape).astype(np.float32) * 0.02   # not all-zero biases
    prompt = np.random.default_rng(2).integers(6, cfg.vocab_size, PROMPT)
    n_new = cfg.max_seq_len - PROMPT
    dev = "cuda" if args.device == "cuda" else "cpu"
    if dev == "cuda": torch.backends.cuda.matmul.allow_tf32 = False
    dec = Decoder(params, cfg, device=dev)
    peer = load_flat(MintTorch(cfg, "sdpa"), params, cfg).to(dev).eval()
    sides = {"Mint Decoder": lambda: mint_greedy(dec, prompt, n_new)}
    if dev == "cuda":                                                   # the same decoder kernel by kernel: the graph's gain
        dec_k = Decoder(params, cfg, device=dev, graphs=False)
        sides["Mint Decoder, no graph"] = lambda: mint_greedy(dec_k, prompt, n_new)
    peer_name = f"PyTorch {dev.upper()} KV cache"
    sides[peer_name] = lambda: greedy_decode(peer, prompt, n_new, NEVER_SAMPLED)
    toks, times = {}, {k: [] for k in sides}
    for k, f in sides.items(): toks[k] = f()[0]                         # warm-up (compiles Mint's kernels on a GPU)
    for r in range(args.rounds):
        for k, f in (list(sides.items()) if r % 2 == 0 else list(sides.items())[::-1]):
            times[k].append(f()[1])
    a, b = toks["Mint Decoder"], toks[peer_name]
    same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
    res = {k: dict(tokens_per_s=n_new / min(t), ms_per_token=1e3 * min(t) / n_new,
                   median_tokens_per_s=n_new / statistics.median(t)) for k, t in times.items()}
    for k, v in res.items():
        if k != "Mint Decoder": v["mint_over_this"] = res["Mint Decoder"]["tokens_per_s"] / v["tokens_per_s"]
    return dict(preset=name, config=cfg.to_dict(), prompt_tokens=PROMPT, new_tokens=n_new, rounds=args.rounds,
                greedy_equal_prefix=same, flops_per_token=flops_per_token(cfg, training=False), results=res)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--presets", nargs="+", default=None, choices=CONFIGS,
                    help="configs (default: tiny small medium on CPU; tiny medium large d512 on a GPU)")
    ap.add_argument("--vocab-size", type=int, default=PD_VOCAB)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-record", action="store_true", help="print only; append nothing to bench/results/")
    args = ap.parse_args(argv)
    args.presets = args.presets or (["tiny", "small", "medium"] if args.device == "cpu" else ["tiny", "medium", "large", "d512"])
    if args.device == "cuda" and not torch.cuda.is_available(): raise SystemExit("--device cuda: PyTorch sees no CUDA GPU")
    host = benchlib.host_info(args.device)
    print(f"device: {host['device']}; decoding, batch 1, prompt {PROMPT} tokens, greedy to the end of the window")
    runs, rows = [], []
    for name in args.presets:
        r = bench_config(name, args)
        runs.append(r)
        for side, v in r["results"].items():
            rows.append(dict(preset=name, side=side, tps=v["tokens_per_s"], ms=v["ms_per_token"], ratio=v.get("mint_over_this"),
                             same=f"{r['greedy_equal_prefix']}/{r['new_tokens']}"))
        print(f"  {name}: " + ", ".join(f"{k} {v['tokens_per_s']:,.0f} tok/s" for k, v in r["results"].items()), flush=True)
    print()
    print(benchlib.table(rows, benchlib.DECODE_COLS))
    if not args.no_record:
        path = benchlib.record(f"decode_{args.device}", dict(bench="decode", device=args.device, host=host,
                                                             vocab_size=args.vocab_size, runs=runs))
        print(f"\nrecorded in {path.relative_to(benchlib.ROOT)}")


if __name__ == "__main__":
    main()
