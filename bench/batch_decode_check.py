"""The batched decode step against the per-row path (issue 18), and its speed per batch size.

    python bench/batch_decode_check.py --device cuda --preset medium     # a GPU: CUDA graphs per batch-size bucket
    python bench/batch_decode_check.py                                   # the CPU (the same check, no graphs)
    NUMBA_ENABLE_CUDASIM=1 python bench/batch_decode_check.py --device cuda --preset micro --sizes 1 2
                                                                         # the simulator: the logic only (slow)

Check: sequences of different prompt lengths join a `BatchDecoder` at different steps, read their prompts in chunks
beside the others' tokens, decode greedily or sampled (temperature 0.8, top-k 50, top-p 0.9, a seed each) and leave
at different steps; every sequence's tokens must equal what it decodes alone in its own `Decoder` on the same device
(the per-row path), and on the GPU also what the batch gives kernel by kernel (`graphs=False`: the same kernels, so
the same bits). The largest logit difference to the per-row path is printed. Speed: B sequences decoding together
(after their prompts), milliseconds per step and tokens/s, with the step replayed as a CUDA graph and kernel by kernel.
Appends a record to bench/results/batch_decode_<device>.jsonl; exit 1 on a mismatch.
"""
from __future__ import annotations
import argparse, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from mint.core import ModelConfig, preset  # noqa: E402
from mint.model import init_params  # noqa: E402
from mint.generate import Decoder, BatchDecoder, allowed_logits, sample_next  # noqa: E402

VOCAB = 4130                                    # People's Daily's vocabulary size (bench_decode's)


def model(name: str):
    "(params, cfg): preset `name` (or 'micro', a one-layer d16 model for the simulator) with random weights, as bench_decode makes them."
    cfg = (ModelConfig(vocab_size=64, d_model=16, n_heads=2, n_layers=1, max_seq_len=32) if name == "micro"
           else preset(name, VOCAB))
    P = init_params(cfg, seed=0)
    P += np.random.default_rng(1).standard_normal(P.shape).astype(np.float32) * 0.02
    return P, cfg


def schedule(cfg: ModelConfig, n: int, seed: int = 0) -> list[dict]:
    "n sequences: prompt, the step it joins at, tokens to decode, its sampling seed."
    rng = np.random.default_rng(seed)
    most = max(2, cfg.max_seq_len // 4)
    return [dict(prompt=rng.integers(6, cfg.vocab_size, int(rng.integers(1, most))).tolist(), join=int(rng.integers(0, 6)),
                 n=int(rng.integers(2, most)), seed=i) for i in range(n)]


def pick(z, temperature, rng) -> int:
    return sample_next(allowed_logits(z), temperature, 50, 0.9, rng)


def batched(P, cfg, seqs, temperature, device, graphs=True, slots=None):
    "Every sequence's tokens and logits, decoded together in one BatchDecoder (prefill 8 tokens a step)."
    bd = BatchDecoder(P, cfg, slots=slots or len(seqs), device=device, prefill=8, graphs=graphs)
    live, toks, zs, rngs = {}, {i: [] for i in range(len(seqs))}, {i: [] for i in range(len(seqs))}, {}
    for step in range(10_000):
        for i, s in enumerate(seqs):
            if s["join"] == step: live[i] = bd.add(s["prompt"]); rngs[i] = np.random.default_rng(s["seed"])
        feeds = {}
        for i in list(live):
            if len(zs[i]) == len(toks[i]): continue                    # its prompt is still being read
            toks[i].append(pick(zs[i][-1], temperature, rngs[i]))
            if len(toks[i]) == seqs[i]["n"]: bd.remove(live.pop(i))
            else: feeds[live[i]] = toks[i][-1]
        if not live and step > max(s["join"] for s in seqs): break
        out = bd.step(feeds)
        for i, seq in live.items():
            if seq in out: zs[i].append(out[seq])
    return toks, zs


def alone(P, cfg, seqs, temperature, device):
    "Every sequence's tokens and logits from a Decoder of its own (the per-row path)."
    toks, zs = {}, {}
    for i, s in enumerate(seqs):
        dec, rng, toks[i], zs[i] = Decoder(P, cfg, device), np.random.default_rng(s["seed"]), [], []
        z = dec.feed(s["prompt"])
        for _ in range(s["n"]):
            zs[i].append(z); toks[i].append(pick(z, temperature, rng))
            if len(toks[i]) < s["n"]: z = dec.feed([toks[i][-1]])
    return toks, zs


def max_dlogit(za, zb) -> float:
    return max(float(np.abs(np.array(za[i][:len(zb[i])]) - np.array(zb[i][:len(za[i])])).max()) for i in za)


def speed(P, cfg, device, B: int, graphs: bool, steps: int, slots: int) -> float:
    "Seconds per step of B sequences decoding together (greedy, after 3 untimed steps)."
    bd = BatchDecoder(P, cfg, slots=slots, device=device, graphs=graphs)
    rng = np.random.default_rng(B)
    seqs = [bd.add(rng.integers(6, cfg.vocab_size, 8).tolist()) for _ in range(B)]
    z = {}
    while len(z) < B: z.update(bd.step({s: int(np.argmax(allowed_logits(z[s]))) for s in z}))   # read the prompts
    t0 = None
    for k in range(steps + 3):
        if k == 3: t0 = time.perf_counter()
        z = bd.step({s: int(np.argmax(allowed_logits(z[s]))) for s in seqs})
    return (time.perf_counter() - t0) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--preset", default="medium")
    ap.add_argument("--seqs", type=int, default=10, help="sequences in the check (default 10)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 4, 16, 64], help="batch sizes timed (default 1 4 16 64)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per batch size (default 30)")
    a = ap.parse_args()
    P, cfg = model(a.preset)
    seqs = schedule(cfg, a.seqs)
    ok, res = True, dict(preset=a.preset, device=a.device, seqs=a.seqs)
    for temp in (0.0, 0.8):
        t0 = time.perf_counter()
        (bt, bz), (at, az) = batched(P, cfg, seqs, temp, a.device), alone(P, cfg, seqs, temp, a.device)
        same = sum(bt[i] == at[i] for i in bt)
        line = (f"temperature {temp}: {same} of {len(seqs)} sequences give the same tokens batched as alone; "
                f"max |Δlogit| {max_dlogit(bz, az):.1e}")
        res[f"same_as_alone_t{temp}"], res[f"max_dlogit_t{temp}"] = same, max_dlogit(bz, az)
        ok &= same == len(seqs)
        if a.device == "cuda":
            kt, kz = batched(P, cfg, seqs, temp, a.device, graphs=False)
            bits = all(np.array_equal(np.array(bz[i]), np.array(kz[i])) for i in bz)
            line += f"; graph replay = kernel by kernel (bits): {bits}"
            res[f"graph_bits_t{temp}"] = bits
            ok &= bits and kt == bt
        print(line + f" ({time.perf_counter() - t0:.1f} s)", flush=True)
    slots = max(a.sizes, default=1)
    rows = []
    for B in a.sizes:
        row = dict(batch=B)
        for graphs in ((True, False) if a.device == "cuda" else (False,)):
            s = speed(P, cfg, a.device, B, graphs, a.steps, slots)
            row["graph_ms" if graphs else "kernels_ms"], row["graph_tok_s" if graphs else "kernels_tok_s"] = s * 1e3, B / s
        rows.append(row)
        print(row, flush=True)
    res["speed"] = rows
    info = benchlib.host_info(a.device)
    from mint.core import simulator_enabled
    if a.device == "cuda" and simulator_enabled(): print("the simulator: not recorded")
    else: print(f"recorded: {benchlib.record(f'batch_decode_{a.device}', dict(host=info, **res))}")
    cols = [("batch", "sequences", "d")] + ([("graph_ms", "ms/step (graph)", ".2f"), ("graph_tok_s", "tokens/s (graph)", ",.0f")]
                                            if a.device == "cuda" else []) + \
           [("kernels_ms", "ms/step" + (" (kernel by kernel)" if a.device == "cuda" else ""), ".2f"),
            ("kernels_tok_s", "tokens/s" + (" (kernel by kernel)" if a.device == "cuda" else ""), ",.0f")]
    print(f"\n{info['device']}, preset {a.preset}\n\n{benchlib.table(rows, cols)}")
    print("CHECK " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
