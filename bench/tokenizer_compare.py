"""Char against BPE on People's Daily at equal compute: the same preset, steps, batch and sequence length (so the same
number of token positions through the same model body; BPE's head is wider), scored per token, per character and
per UTF-8 byte on the same validation text (`mint.pipeline.bits_summary`, what `mint train` prints).

    nice -n 10 python bench/tokenizer_compare.py --steps 150 --batch-size 16 --max 3000

Appends one record per tokenizer to bench/results/tokenizer_compare.jsonl (the tokenizer chapter shows them).
"""
from __future__ import annotations
import argparse, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402  (puts the repo root on sys.path)
from mint.pipeline import train_corpus  # noqa: E402
from mint.train import TrainConfig  # noqa: E402
from mint.core import temp_dir  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max", type=int, default=3000, dest="max_lines")
    ap.add_argument("--bpe-vocab", type=int, default=2000)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args(argv)
    rows = []
    for tok, vs in (("char", None), ("bpe", a.bpe_vocab)):
        tc = TrainConfig(steps=a.steps, batch_size=a.batch_size, eval_every=a.steps)
        rep = train_corpus("peoples_daily", a.preset, tc, temp_dir() / "run", max_samples=a.max_lines,
                           device=a.device, progress=False, log=lambda *x, **k: None, tokenizer=tok, vocab_size=vs)
        row = dict(tokenizer=tok if vs is None else f"bpe {vs}", vocab_size=rep["vocab_size"], n_params=rep["n_params"],
                   steps=rep["steps"], batch_size=a.batch_size, seq_len=rep["train_config"]["seq_len"] or rep["config"]["max_seq_len"],
                   seconds=rep["train_seconds"], **rep["bits"])
        rows.append(row)
        benchlib.record("tokenizer_compare", dict(bench="tokenizer_compare", preset=a.preset, corpus_lines=a.max_lines,
                                                  device=a.device, host=benchlib.host_info(a.device), **row))
    print(benchlib.table(rows, [("tokenizer", "tokenizer", ""), ("vocab_size", "vocab", ","), ("steps", "steps", ","),
                                ("nats_per_token", "nats/token", ".4f"), ("bits_per_char", "bits/char", ".4f"),
                                ("bits_per_byte", "bits/byte", ".4f"), ("unigram_bits_per_byte", "unigram bits/byte", ".4f"),
                                ("lzma_bits_per_byte", "lzma bits/byte", ".4f"), ("seconds", "train s", ".0f")]))


if __name__ == "__main__":
    main()
