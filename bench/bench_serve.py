"""`mint serve` under load: tokens/s and p50/p95 request latency at 1, 4 and 16 concurrent clients, with continuous
batching (the server's default, `--slots 16`) and without it (`slots=0`: a Decoder per request, each in its own
thread — what the server did before). Appends a record to bench/results/serve_<device>.jsonl and prints a table.

    python bench/bench_serve.py                              # CPU, medium, clients 1 4 16
    python bench/bench_serve.py --device cuda --clients 1 4 16 64

The server is the real app (`mint.serve.create_app`: guard, routing, JSON, the batcher) under uvicorn on a free
127.0.0.1 port, in this process; the clients are threads sending non-streamed completions with httpx (loopback only).
Every loop is bounded: each client sends `--requests` requests one after another. The model has random weights with
`<eos>` pushed down, so every request decodes exactly `--max-tokens` tokens (temperature 0): the work per request is
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


def load(base: str, clients: int, requests: int, max_tokens: int, prompt_len: int, vocab_size: int) -> dict:
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
                                                       "temperature": 0})
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="medium", choices=CONFIGS)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests", type=int, default=4, help="requests per client, sent one after another (default 4)")
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--slots", type=int, nargs="+", default=[16, 0], help="batch slots to compare; 0 = a Decoder per request (default: 16 0)")
    a = ap.parse_args()
    from mint.serve import create_app
    P, cfg, voc = model(a.preset)
    rows = []
    for slots in a.slots:
        if slots == 0 and a.device == "cuda": continue                 # a Decoder per request is the CPU's old path only
        srv = Server(create_app(P, cfg, voc, "bench", slots=slots, device=a.device))
        try:
            load(srv.base, 1, 1, a.max_tokens, a.prompt_len, len(voc))          # warm-up
            for c in a.clients:
                r = load(srv.base, c, a.requests, a.max_tokens, a.prompt_len, len(voc))
                r["server"] = f"batched, {slots} slots" if slots else "a Decoder per request"
                rows.append(r)
                print(f"{r['server']:24s} {c:3d} clients: {r['tokens_per_s']:8.1f} tokens/s, p50 {r['p50_s']:.2f} s, p95 {r['p95_s']:.2f} s",
                      flush=True)
        finally: srv.close()
    base = {r["server"]: r["tokens_per_s"] for r in rows if r["clients"] == a.clients[0]}
    for r in rows: r["x_one_client"] = r["tokens_per_s"] / base[r["server"]]
    path = benchlib.record(f"serve_{a.device}", dict(preset=a.preset, max_tokens=a.max_tokens, requests_per_client=a.requests,
                                                     prompt_len=a.prompt_len, host=benchlib.host_info(a.device), rows=rows,
                                                     blas_threads_env=os.environ.get("OPENBLAS_NUM_THREADS")))
    print(f"\n{a.preset}, {a.max_tokens} tokens a request (greedy), {a.requests} requests per client, on "
          f"{benchlib.host_info(a.device)['device']}; recorded in {path.relative_to(benchlib.ROOT)}\n")
    print(benchlib.table(rows, [("server", "server", ""), ("clients", "clients", "d"), ("tokens_per_s", "tokens/s", ",.1f"),
                                ("x_one_client", "× 1 client", ".2f"), ("p50_s", "p50 latency s", ".2f"), ("p95_s", "p95 latency s", ".2f")]))


if __name__ == "__main__":
    main()
