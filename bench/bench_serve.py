"""`mint serve` under load: tokens/s and p50/p95 request latency at 1, 4, 16 and 64 concurrent clients, with continuous
batching (the server's default, `--slots 16`) and without it (`slots=0`: a Decoder per request, each in its own
thread — what the server did before). Appends a record to bench/results/serve_<device>.jsonl and prints a table.

    python bench/bench_serve.py                              # CPU, medium, clients 1 4 16 64
    python bench/bench_serve.py --device cuda --clients 1 4 16 64

The server is the real app (`mint.serve.create_app`: guard, routing, JSON, the batcher) under uvicorn on a free
127.0.0.1 port, in this process; the clients are threads of a second process sending non-streamed completions with
httpx (loopback only). A server's clients are never in its process: in this one, 64 client threads' Python would
compete with the server's for the interpreter lock.
Every loop is bounded: each client sends `--requests` requests one after another; `--rounds` sweeps over the client counts
(alternating their order), and the ratios to one client are taken within each round, so the spread shows how much the
other work on the host moved them. The model has random weights with
`<eos>` pushed down, so every request decodes exactly `--max-tokens` tokens (greedy by default; `--temperature 0.7` samples, with a seed per request): the work per request is
the same in every row. One warm-up request per server first (compilation, first allocations).
"""
from __future__ import annotations
import argparse, os, socket, statistics, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
import numpy as np  # noqa: E402
from bench_train_step import CONFIGS, PD_VOCAB, config  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def model(preset: str):
    "Random weights of `preset` over a char vocabulary of People's Daily's size, `<eos>` never likely: `(params, cfg, vocab)`."
    from mint.model import init_params, views
    from mint.vocab import Vocab, EOS, SPECIAL_TOKENS
    voc = Vocab.build(["".join(chr(0x4E00 + i) for i in range(PD_VOCAB - len(SPECIAL_TOKENS)))], min_count=1)
    cfg = config(preset, len(voc))
    P = init_params(cfg, seed=0)
    P += np.random.default_rng(1).standard_normal(P.shape).astype(np.float32) * 0.02     # not a flat distribution
    if cfg.lm_head_bias: views(P, cfg).lm_b[EOS] = -1e4
    else: raise SystemExit(f"{preset}: needs an lm_head bias to keep <eos> away")
    return P, cfg, voc


class Server:
    "The app under uvicorn on a free loopback port in a thread of this process."
    def __init__(self, app):
        import uvicorn
        self.port = free_port()
        self.srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.th = threading.Thread(target=self.srv.run, daemon=True)
        self.th.start()
        deadline = time.time() + 60
        while not self.srv.started:
            if time.time() > deadline or not self.th.is_alive(): raise RuntimeError("the server did not start")
            time.sleep(0.05)
        self.base = f"http://127.0.0.1:{self.port}"
    def close(self):
        self.srv.should_exit = True; self.th.join(30)


def load(pool, *args) -> dict:
    "`clients_load(*args)` in the client process `pool` (a ProcessPoolExecutor of one spawned process)."
    return pool.submit(clients_load, *args).result()


def clients_load(base: str, clients: int, requests: int, max_tokens: int, prompt_len: int, vocab_size: int, temperature: float = 0.0) -> dict:
    "`clients` threads, each sending `requests` completions one after another: tokens/s over the wall time, latency percentiles."
    import httpx
    rng = np.random.default_rng(clients)
    prompts = ["".join(chr(0x4E00 + int(i)) for i in rng.integers(0, vocab_size - 6, prompt_len)) for _ in range(clients * requests)]
    def client(c: int):
        out = []
        with httpx.Client(base_url=base, timeout=600) as h:
            for r in range(requests):
                t0 = time.perf_counter()
                resp = h.post("/v1/completions", json={"model": "bench", "prompt": prompts[c * requests + r], "max_tokens": max_tokens,
                                                       "temperature": temperature, "seed": c * requests + r})
                resp.raise_for_status()
                out.append((time.perf_counter() - t0, resp.json()["usage"]["completion_tokens"]))
        return out
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as ex:
        results = [x for xs in ex.map(client, range(clients)) for x in xs]
    wall = time.perf_counter() - t0
    lat = sorted(x for x, _ in results)
    tokens = sum(n for _, n in results)
    return dict(clients=clients, requests=len(results), tokens=tokens, wall_s=round(wall, 3), tokens_per_s=tokens / wall,
                p50_s=statistics.median(lat), p95_s=lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))])


def health(base: str) -> dict:
    "The batcher's counters from /health (None without a batcher)."
    import httpx
    return httpx.get(base + "/health").json()["slots"]


def split(h0, h1, wall: float) -> dict:
    "Where the batch thread's time went between two /health reads: steps, ms per step, of which the forward (`dec.step`: uploads, the launches or graph, the logits' copy back), picking the tokens, and the rest of the wall time per step (the batch loop's own work, waiting for requests, HTTP); the most requests in one step so far."
    if not h0: return {}
    n = h1["steps"] - h0["steps"]
    d = lambda k: (h1["seconds"].get(k, 0) - h0["seconds"].get(k, 0)) * 1e3 / max(n, 1)
    return dict(steps=n, ms_per_step=wall * 1e3 / max(n, 1), forward_ms=d("step"), pick_ms=d("pick"),
                rest_ms=wall * 1e3 / max(n, 1) - d("step") - d("pick"), peak=h1["peak"], warm_up_s=h1["warm_up_s"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="medium", choices=CONFIGS)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--requests", type=int, default=4, help="requests per client, sent one after another (default 4)")
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--slots", type=int, nargs="+", default=[16, 0], help="batch slots to compare; 0 = a Decoder per request (default: 16 0)")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default); > 0: sampled with top-k 50, top-p 0.9, a seed per request")
    ap.add_argument("--rounds", type=int, default=3, help="sweeps over the client counts, in alternating order (default 3)")
    a = ap.parse_args()
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from mint.serve import create_app
    P, cfg, voc = model(a.preset)
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))    # the clients' process, started once
    load0 = [round(x, 2) for x in os.getloadavg()]
    rows = []                                      # one row per (server, round, clients)
    for slots in a.slots:
        if slots == 0 and a.device == "cuda": continue                 # a Decoder per request is the CPU's old path only
        srv = Server(create_app(P, cfg, voc, "bench", slots=slots, device=a.device))
        name = f"batched, {slots} slots" if slots else "a Decoder per request"
        try:
            load(pool, srv.base, 1, 1, a.max_tokens, a.prompt_len, len(voc))    # warm-up
            for k in range(a.rounds):                                           # rounds alternate the order: drift hits all alike
                for c in (a.clients if k % 2 == 0 else a.clients[::-1]):
                    h0 = health(srv.base)
                    r = dict(server=name, round=k, **load(pool, srv.base, c, a.requests, a.max_tokens, a.prompt_len, len(voc), a.temperature))
                    r.update(split(h0, health(srv.base), r["wall_s"]))
                    rows.append(r)
                    print(f"{name:24s} round {k} {c:3d} clients: {r['tokens_per_s']:8.1f} tokens/s, p50 {r['p50_s']:.2f} s, "
                          f"p95 {r['p95_s']:.2f} s" + (f"; {r['steps']} steps ({r['tokens'] / max(r['steps'], 1):.1f} tokens each) of {r['ms_per_step']:.2f} ms: forward {r['forward_ms']:.2f}, "
                          f"picking {r['pick_ms']:.2f}, the rest {r['rest_ms']:.2f}; up to {r['peak']} requests a step" if "steps" in r else ""), flush=True)
        finally: srv.close()
    pool.shutdown()
    one = {(r["server"], r["round"]): r for r in rows if r["clients"] == a.clients[0]}
    for r in rows:                                  # ratios to the same round's first client count (1): within one process, minutes apart
        b = one[(r["server"], r["round"])]
        r["x_one_client"], r["p95_x_one_client"] = r["tokens_per_s"] / b["tokens_per_s"], r["p95_s"] / b["p95_s"]
    med = lambda xs: statistics.median(xs)
    summary = []
    for name in dict.fromkeys(r["server"] for r in rows):
        for c in a.clients:
            rs = [r for r in rows if r["server"] == name and r["clients"] == c]
            xs, ps = [r["x_one_client"] for r in rs], [r["p95_x_one_client"] for r in rs]
            summary.append(dict(server=name, clients=c, tokens_per_s=med([r["tokens_per_s"] for r in rs]), x_one_client=med(xs),
                                x_range=f"{min(xs):.2f}–{max(xs):.2f}", p50_s=med([r["p50_s"] for r in rs]),
                                p95_s=med([r["p95_s"] for r in rs]), p95_x=med(ps), p95_x_range=f"{min(ps):.1f}–{max(ps):.1f}"))
    host = benchlib.host_info(a.device)
    path = benchlib.record(f"serve_{a.device}", dict(preset=a.preset, max_tokens=a.max_tokens, requests_per_client=a.requests,
                                                     prompt_len=a.prompt_len, temperature=a.temperature, rounds=a.rounds, host=host, rows=rows, summary=summary,
                                                     loadavg_start=load0, loadavg_end=[round(x, 2) for x in os.getloadavg()],
                                                     blas_threads_env=os.environ.get("OPENBLAS_NUM_THREADS")))
    print(f"\n{a.preset}, {a.max_tokens} tokens a request ({f'temperature {a.temperature:g}' if a.temperature else 'greedy'}), {a.requests} requests per client, {a.rounds} rounds (medians; "
          f"ratios to the same round's {a.clients[0]} client(s), their range), on {host['device']}, load average {load0[0]} at the "
          f"start and {os.getloadavg()[0]:.2f} at the end; recorded in {path.relative_to(benchlib.ROOT)}\n")
    print(benchlib.table(summary, [("server", "server", ""), ("clients", "clients", "d"), ("tokens_per_s", "tokens/s", ",.1f"),
                                   ("x_one_client", "× 1 client", ".2f"), ("x_range", "(range)", ""), ("p50_s", "p50 latency s", ".2f"),
                                   ("p95_s", "p95 latency s", ".2f"), ("p95_x", "p95 × 1 client", ".1f"), ("p95_x_range", "(range)", "")]))

if __name__ == "__main__":
    main()
