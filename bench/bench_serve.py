"""`mint serve` under load: tokens/s and p50/p95 request latency at 1, 4, 16 and 64 concurrent clients, with continuous
batching (the server's default, `--slots 16`) and without it (`slots=0`: a Decoder per request, each in its own
thread — what the server did before). Appends a record to bench/results/serve_<device>.jsonl and prints a table.

    python bench/bench_serve.py                              # CPU, medium, clients 1 4 16 64
    python bench/bench_serve.py --device cuda --clients 1 4 16 64

The server is the real app (`mint.serve.create_app`: guard, routing, JSON, the batcher) under uvicorn on a free
127.0.0.1 port, in this process; the clients are threads of other processes (`--client-procs`: a quarter of the cores, 1
to 4; on a 2-core host more processes would only take the server's cores) sending completions with httpx (loopback
only), whole or, with `--stream`, streamed and read event by event. A server's clients are never in its process: in this one, 64 client threads' Python would compete
with the server's for the interpreter lock, and in a single other process they are slow enough at 64 to leave the
batch part empty. Every process starts its clients at the same moment, after each client's first connection, and
tokens/s is taken from the first request sent to the last reply. `--switch-interval` sets the server process's
`sys.setswitchinterval` (an experiment knob: how the interpreter lock is handed between its threads). The batch decodes
in a process of its own, as `mint serve` does; `--decode process thread` also measures it in a thread of the server's
process (before 2026-12-05, the only way), one server after the other.
Every loop is bounded: each client sends `--requests` requests one after another; `--rounds` sweeps over the client counts
(alternating their order), and the ratios to one client are taken within each round, so the spread shows how much the
other work on the host moved them. The model has random weights with
`<eos>` pushed down, so every request decodes exactly `--max-tokens` tokens (greedy by default; `--temperature 0.7` samples, with a seed per request): the work per request is
the same in every row. One warm-up request per server first (compilation, first allocations).
"""
from __future__ import annotations
import argparse, json, os, socket, statistics, sys, threading, time
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


def load(pool, procs: int, base: str, clients: int, requests: int, *args) -> dict:
    """`clients` clients spread over `procs` processes of `pool` (a ProcessPoolExecutor of spawned processes, at most
    `clients`): tokens/s over the wall time from the first request sent to the last reply, latency percentiles."""
    procs = max(1, min(procs, clients))
    start = time.time() + 0.2                          # every process starts its clients at the same moment
    futs = [pool.submit(clients_load, base, list(range(i, clients, procs)), clients, requests, start, *args) for i in range(procs)]
    results = [x for f in futs for x in f.result()]
    wall = max(t1 for _, t1, _ in results) - min(t0 for t0, _, _ in results)
    lat = sorted(t1 - t0 for t0, t1, _ in results)
    tokens = sum(n for _, _, n in results)
    return dict(clients=clients, client_procs=procs, requests=len(results), tokens=tokens, wall_s=round(wall, 3), tokens_per_s=tokens / wall,
                p50_s=statistics.median(lat), p95_s=lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))])


def clients_load(base: str, mine: list, clients: int, requests: int, start: float, max_tokens: int, prompt_len: int, vocab_size: int,
                 temperature: float = 0.0, stream: bool = False) -> list:
    "The clients numbered `mine` (of `clients`) as threads, each sending `requests` completions (`stream`: streamed, every event read) one after another from time `start`: `(sent, answered, tokens)` of each (wall-clock seconds)."
    import httpx
    rng = np.random.default_rng(clients)
    prompts = ["".join(chr(0x4E00 + int(i)) for i in rng.integers(0, vocab_size - 6, prompt_len)) for _ in range(clients * requests)]
    def ok(resp):                                        # an HTTP error as a RuntimeError with the reply (httpx's errors do not pickle)
        if resp.status_code >= 400:
            resp.read(); raise RuntimeError(f"client: HTTP {resp.status_code} from {resp.request.url.path}: {resp.text[:400]}")
    def client(c: int):
        out = []
        with httpx.Client(base_url=base, timeout=600) as h:
            h.get("/health").raise_for_status()          # the connection, before the clock starts
            time.sleep(max(0.0, start - time.time()))
            for r in range(requests):
                body = {"model": "bench", "prompt": prompts[c * requests + r], "max_tokens": max_tokens, "temperature": temperature,
                        "seed": c * requests + r}
                t0 = time.time()
                if not stream:
                    resp = h.post("/v1/completions", json=body)
                    ok(resp)
                    out.append((t0, time.time(), resp.json()["usage"]["completion_tokens"]))
                    continue
                n = None                                 # streamed: every event read, the count from the usage chunk
                with h.stream("POST", "/v1/completions", json={**body, "stream": True, "stream_options": {"include_usage": True}}) as resp:
                    ok(resp)
                    for line in resp.iter_lines():
                        if line.startswith("data: {") and '"usage": {' in line: n = json.loads(line[6:])["usage"]["completion_tokens"]
                if n is None: raise RuntimeError("a streamed reply without its usage chunk")
                out.append((t0, time.time(), n))
        return out
    def named(c: int):                                   # any failure as a RuntimeError that pickles (httpx's do not: the pool broke)
        try: return client(c)
        except Exception as e: raise RuntimeError(f"client {c}: {e!r}") from None
    with ThreadPoolExecutor(len(mine)) as ex:
        return [x for xs in ex.map(named, mine) for x in xs]


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
    ap.add_argument("--decode", nargs="+", choices=["process", "thread"], default=["process"],
                    help="where the batch decodes: a process of its own (the server's default) and/or a thread of the server's process")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default); > 0: sampled with top-k 50, top-p 0.9, a seed per request")
    ap.add_argument("--rounds", type=int, default=3, help="sweeps over the client counts, in alternating order (default 3)")
    ap.add_argument("--stream", action="store_true", help="streamed replies (server-sent events, a chunk a token), each read to its end")
    ap.add_argument("--client-procs", type=int, default=max(1, min(4, (os.cpu_count() or 2) // 4)),
                    help="processes the client threads are spread over (default: a quarter of the cores, 1 to 4)")
    ap.add_argument("--switch-interval", type=float, default=None, help="the server process's sys.setswitchinterval in ms (default: Python's, 5)")
    a = ap.parse_args()
    if a.switch_interval: sys.setswitchinterval(a.switch_interval / 1e3)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from mint.serve import create_app
    P, cfg, voc = model(a.preset)
    pool = ProcessPoolExecutor(a.client_procs, mp_context=multiprocessing.get_context("spawn"))    # the clients' processes, started once
    load0 = [round(x, 2) for x in os.getloadavg()]
    rows = []                                      # one row per (server, round, clients)
    servers = [(slots, d) for slots in a.slots for d in (a.decode if slots else ["thread"])]
    for slots, decode in servers:
        if slots == 0 and a.device == "cuda": continue                 # a Decoder per request is the CPU's old path only
        srv = Server(create_app(P, cfg, voc, "bench", slots=slots, device=a.device, decode_process=decode == "process"))
        name = (f"batched, {slots} slots" + (", decoding in the server's process" if decode == "thread" else "")) if slots else "a Decoder per request"
        try:
            load(pool, a.client_procs, srv.base, a.client_procs, 1, a.max_tokens, a.prompt_len, len(voc))    # warm-up: every process
            for k in range(a.rounds):                                           # rounds alternate the order: drift hits all alike
                for c in (a.clients if k % 2 == 0 else a.clients[::-1]):
                    h0 = health(srv.base)
                    r = dict(server=name, round=k, **load(pool, a.client_procs, srv.base, c, a.requests, a.max_tokens, a.prompt_len, len(voc), a.temperature, a.stream))
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
                                                     prompt_len=a.prompt_len, temperature=a.temperature, stream=a.stream, rounds=a.rounds, host=host,
                                                     client_procs=a.client_procs, switch_interval_ms=sys.getswitchinterval() * 1e3, rows=rows, summary=summary,
                                                     loadavg_start=load0, loadavg_end=[round(x, 2) for x in os.getloadavg()],
                                                     blas_threads_env=os.environ.get("OPENBLAS_NUM_THREADS")))
    print(f"\n{a.preset}, {a.max_tokens} tokens a request ({f'temperature {a.temperature:g}' if a.temperature else 'greedy'}{', streamed' if a.stream else ''}), {a.requests} requests per client, {a.rounds} rounds (medians; "
          f"ratios to the same round's {a.clients[0]} client(s), their range), on {host['device']}, load average {load0[0]} at the "
          f"start and {os.getloadavg()[0]:.2f} at the end; recorded in {path.relative_to(benchlib.ROOT)}\n")
    print(benchlib.table(summary, [("server", "server", ""), ("clients", "clients", "d"), ("tokens_per_s", "tokens/s", ",.1f"),
                                   ("x_one_client", "× 1 client", ".2f"), ("x_range", "(range)", ""), ("p50_s", "p50 latency s", ".2f"),
                                   ("p95_s", "p95 latency s", ".2f"), ("p95_x", "p95 × 1 client", ".1f"), ("p95_x_range", "(range)", "")]))

if __name__ == "__main__":
    main()
