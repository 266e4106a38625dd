"""GGUF parity with llama.cpp (through llama-cpp-python): train tiny models of each architecture and tokenizer, export
them with `mint export --to gguf`, load them in llama.cpp with a float32 KV cache, and compare token ids, logits and 32
greedy tokens with Mint. Models llama.cpp cannot run (the report's lm_head bias) must be refused.

    pip install -e ".[interop]" llama-cpp-python     # builds llama.cpp from source: minutes
    python bench/gguf_parity.py                        # -> bench/results/gguf_parity.json

Not in CI: building llama-cpp-python takes longer than the whole CI run."""
import argparse, importlib.metadata, json, platform, time
from pathlib import Path
import numpy as np
from mint import data as D
from mint.pipeline import train_corpus
from mint.train import TrainConfig
from mint.checkpoint import load_checkpoint
from mint.export import export_gguf, gguf_parity
from mint.core import temp_dir

# a run of unknown characters (snowman, comet, emoji, a newline): llama.cpp alone would join them into one <unk>
UNKNOWN_RUN = "人民\u2603\u2604😀\n日报"

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results/gguf_parity.json")
    ap.add_argument("--steps", type=int, default=60)
    a = ap.parse_args()
    import llama_cpp, gguf
    lines = D.load_peoples_daily(max_lines=500)
    text = "".join(lines[400:])[:70]
    rows, work = [], temp_dir()
    for arch in ("report", "llama", "qwen3"):
        for tok in ("char", "bpe"):
            t0 = time.perf_counter()
            rep = train_corpus("peoples_daily", "tiny", TrainConfig(steps=a.steps, batch_size=8, eval_every=a.steps, seed=0),
                               work / f"{arch}-{tok}", max_samples=400, device="cpu", progress=False, log=lambda *_: None,
                               arch=arch, tokenizer=tok, vocab_size=800 if tok == "bpe" else None)
            ck = load_checkpoint(rep["checkpoint"])
            for dtype in ("f32", "bf16"):
                row = dict(arch=arch, tokenizer=tok, dtype=dtype, val_loss=round(rep["val_loss"], 3))
                try:
                    info = export_gguf(ck.params, ck.config, ck.vocab, work / f"{arch}-{tok}-{dtype}.gguf", dtype)
                except ValueError as e:
                    row.update(refused=str(e)); rows.append(row); print(json.dumps(row, ensure_ascii=False)); continue
                row.update(gguf_arch=info["arch"], gguf_tokenizer=info["gguf_tokenizer"], bytes=Path(info["path"]).stat().st_size)
                row.update({k: v for k, v in gguf_parity(info["path"], ck.params, ck.config, ck.vocab, text).items()
                            if k not in ("file", "tokenizer")})
                llm = llama_cpp.Llama(info["path"], n_ctx=64, verbose=False)
                mine, theirs = ck.vocab.encode(UNKNOWN_RUN).tolist(), llm.tokenize(UNKNOWN_RUN.encode(), add_bos=False, special=False)
                row["unknown_run"] = dict(text=UNKNOWN_RUN, mint=mine, llama_cpp=theirs, equal=mine == theirs)
                rows.append(row); print(json.dumps(row, ensure_ascii=False))
    res = dict(date=time.strftime("%Y-%m-%d"), machine=platform.processor() or platform.machine(),
               llama_cpp_python=llama_cpp.__version__, gguf=importlib.metadata.version("gguf"),
               text=text, kv_cache="f32", results=rows)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    ok = all(r.get("refused") if r["arch"] == "report" else (r["ids_equal"] and r["unknown_run"]["equal"] and (r["dtype"] == "bf16"
             or (r["greedy_equal"] and r["max_abs_dlogit"] < 1e-4))) for r in rows)
    print(f"wrote {a.out}: {'all checks passed' if ok else 'FAILURES'}")
    return 0 if ok else 1

if __name__ == "__main__":
    raise SystemExit(main())
