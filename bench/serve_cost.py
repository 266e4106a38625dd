"""CPU time of the server's own process per request (`mint.serve.create_app` under uvicorn: HTTP, routing, checks,
hand-offs, JSON), the batch decoding in its own process as `mint serve` runs it. A tiny model and 2 tokens a request
keep decoding out of the way; clients are 8 threads of another process (loopback only), `--requests` in all.

    python bench/serve_cost.py                    # prints ms of server-process CPU per request, three runs
"""
from __future__ import annotations
import argparse, multiprocessing, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_serve as B  # noqa: E402  (puts the repo root on sys.path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    from mint.serve import create_app
    P, cfg, voc = B.model("tiny")
    srv = B.Server(create_app(P, cfg, voc, "bench", slots=16, device="cpu"))
    per = max(1, a.requests // a.clients)
    try:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
            ex.submit(B.clients_load, srv.base, [0], 1, 5, time.time(), 2, 8, 2000).result()      # warm: compile, connect
            for _ in range(a.runs):
                c0, t0 = time.process_time(), time.perf_counter()
                ex.submit(B.clients_load, srv.base, list(range(a.clients)), a.clients, per, time.time(), 2, 8, 2000).result()
                cpu, wall, n = time.process_time() - c0, time.perf_counter() - t0, per * a.clients
                print(f"{n} requests in {wall:.2f} s: the server's process used {cpu:.2f} s of CPU, {cpu / n * 1e3:.2f} ms a request", flush=True)
    finally: srv.close()


if __name__ == "__main__":
    main()
