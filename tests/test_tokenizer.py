"""The tokenizer interface end to end: char and BPE checkpoints (and old vocab dicts) load, BPE checkpoints keep their tokenizer, `mint train
--tokenizer bpe` works from the command line, and the llama.cpp form of the char vocabulary matches Mint on random text
(checked against a reading of llama.cpp's normalizer; against llama.cpp itself when llama-cpp-python is installed)."""
import importlib.util, json
import numpy as np
import pytest
from mint.cli import main
from mint.checkpoint import load_checkpoint, save_checkpoint
from mint.tokenizer import BPETokenizer, tokenizer_kind, tokenizer_from_dict, gguf_tokenizer, charsmap_normalize
from mint.vocab import Vocab
from mint.core import ModelConfig
from mint.model import init_params


def random_text(rng, known, n):
    "Known characters mixed with code points of every UTF-8 length (surrogates left out)."
    kinds = rng.integers(0, 4, n)
    cps = np.where(kinds == 0, rng.choice(known, n), np.where(kinds == 1, rng.integers(1, 0x800, n),
                   np.where(kinds == 2, rng.integers(0x800, 0x10000, n), rng.integers(0x10000, 0x110000, n))))
    return "".join(chr(c) for c in cps if not 0xD800 <= c < 0xE000)


def test_char_and_bpe_checkpoints_load_their_tokenizer(tmp_path):
    "A char checkpoint loads a Vocab, a BPE one a BPETokenizer; a vocab dict written before BPE existed (no 'format') is a Vocab."
    v = Vocab.build(["中国人民中国人民"], min_count=1)
    b = BPETokenizer.train(["中国人民银行今天宣布降息。"] * 20, vocab_size=270)
    for tok in (v, b):
        cfg = ModelConfig(vocab_size=len(tok), d_model=8, n_heads=2, n_layers=1, max_seq_len=8)
        ck = save_checkpoint(tmp_path / tokenizer_kind(tok) / "best.safetensors", init_params(cfg), cfg, tok)
        assert load_checkpoint(ck).vocab == tok
    assert tokenizer_from_dict({"token_to_id": v.to_dict()["token_to_id"]}) == v


def test_train_bpe_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "bpe"
    code = main(["train", "--max", "300", "--steps", "4", "--batch-size", "4", "--seq-len", "16", "--eval-every", "4",
                 "--no-progress", "--tokenizer", "bpe", "--vocab-size", "500", "--arch", "qwen3", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "nats/token" in text and "BPE tokens per character" in text
    ck = load_checkpoint(out)
    assert tokenizer_kind(ck.vocab) == "bpe" and len(ck.vocab) == 500 and ck.config.qk_norm
    code = main(["generate", "--ckpt", str(out), "--prompt", "中国", "--max-new-tokens", "5", "--seed", "0"])
    assert code == 0 and capsys.readouterr().out.startswith("中国")


@pytest.mark.parametrize("args,words", [(["--vocab-size", "500"], ["--vocab-size", "--tokenizer bpe"]),
                                        (["--tokenizer", "bpe"], ["--vocab-size"])])
def test_tokenizer_options_checked_before_loading(args, words, tmp_path, capsys):
    code = main(["train", "--out", str(tmp_path / "x"), *args])
    err = capsys.readouterr().err
    assert code == 1 and all(w in err for w in words), err


WHITESPACE = np.array([0x09, 0x0A, 0x0D, 0x20, 0x85, 0xA0, 0x2003, 0x2028, 0x3000])


def with_whitespace(peoples_daily):
    "People's Daily's characters plus space, newline and tab as entries (so the other whitespace has aliases)."
    return Vocab.build(peoples_daily + ["a b\n\t"] * 2)


def test_char_vocab_for_llama_cpp_on_random_text(peoples_daily):
    v = with_whitespace(peoples_daily)
    g = gguf_tokenizer(v)
    known = np.r_[[ord(c) for c in v.chars], WHITESPACE]
    rng = np.random.default_rng(0)
    for _ in range(200):
        s = random_text(rng, known, int(rng.integers(1, 30)))
        assert charsmap_normalize(g["charsmap"], s) == "".join(g["tokens"][1] if i == 1 else v.itos[i] for i in v.encode(s))


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_char_vocab_in_llama_cpp_itself(peoples_daily, tmp_path):
    import llama_cpp
    from mint.core import preset
    from mint.export import export_gguf
    v = with_whitespace(peoples_daily)
    cfg = preset("tiny", len(v), arch="llama", n_layers=1)
    export_gguf(init_params(cfg), cfg, v, tmp_path / "m.gguf")
    llm = llama_cpp.Llama(str(tmp_path / "m.gguf"), n_ctx=64, verbose=False)
    rng, known = np.random.default_rng(1), np.r_[[ord(c) for c in v.chars], WHITESPACE]
    for _ in range(200):
        s = random_text(rng, known, int(rng.integers(1, 30)))
        assert llm.tokenize(s.encode(), add_bos=False, special=False) == v.encode(s).tolist(), s


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_llama_cpp_decodes_as_mint(tmp_path):
    "llama.cpp itself detokenizes a char GGUF export exactly as Mint decodes: the Unicode samples (format characters, emoji sequences, other scripts) and <unk> as U+FFFD."
    import llama_cpp
    from mint.core import preset
    from mint.export import export_gguf
    from mint.vocab import UNICODE_SAMPLES, UNK
    texts = list(UNICODE_SAMPLES.values())
    v = Vocab.build(texts, min_count=1)
    cfg = preset("tiny", len(v), arch="llama", n_layers=1)
    export_gguf(init_params(cfg), cfg, v, tmp_path / "m.gguf")
    llm = llama_cpp.Llama(str(tmp_path / "m.gguf"), n_ctx=64, verbose=False)
    for s in texts:
        ids = v.encode(s).tolist()
        assert llm.detokenize(ids).decode("utf-8") == v.decode(np.array(ids, np.int32)) == s, s
    ids = [*v.encode("中").tolist(), UNK, *v.encode("国").tolist()]
    assert llm.detokenize(ids).decode("utf-8") == v.decode(np.array(ids, np.int32))
