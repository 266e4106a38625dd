"""Parity of exported models with Mint: every architecture (report -> Ernie 4.5, llama, qwen3) and tokenizer (char, BPE),
trained for real, exported, loaded by `transformers` on the CPU in float32: ids, logits and 32 greedy tokens.
GGUF: the files are written (or refused, with the reason); llama.cpp parity runs when llama-cpp-python is installed
(recorded in bench/results/gguf_parity.json by bench/gguf_parity.py)."""
import importlib.util, json, subprocess, sys
import numpy as np
import pytest
from conftest import ARCH_TOKENIZERS
from mint.export import export_hf, export_gguf, hf_parity, gguf_parity, gguf_arch
from mint.cli import main
from mint.vocab import BOS, EOS, HUMAN, ASSISTANT

HF_CLASS = {"report": "Ernie4_5_MoeForCausalLM", "llama": "LlamaForCausalLM", "qwen3": "Qwen3ForCausalLM"}
needs_hf = pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason='pip install -e ".[interop]"')


def validation_text(peoples_daily, n=70):
    "Unseen text (lines 400+ of the corpus), long enough to fill the tiny model's 64-token window."
    return "".join(peoples_daily[400:])[:n]


@needs_hf
@pytest.mark.parametrize("arch,tokenizer", ARCH_TOKENIZERS)
def test_hf_parity(arch, tokenizer, trained, peoples_daily, tmp_path):
    ck = trained(arch, tokenizer)
    info = export_hf(ck.params, ck.config, ck.vocab, tmp_path / "hf")
    assert info["hf_class"] == HF_CLASS[arch] and info["warning"] is None
    r = hf_parity(tmp_path / "hf", ck.params, ck.config, ck.vocab, validation_text(peoples_daily))
    print(json.dumps(r))
    assert r["arch"] == HF_CLASS[arch] and r["n_tokens"] >= 40
    assert r["ids_equal"], "transformers' tokenizer gives other ids than Mint's"
    assert r["max_abs_dlogit"] < 1e-4
    assert r["greedy_equal"] and r["n_greedy"] == 32


@needs_hf
@pytest.mark.parametrize("tokenizer", ["char", "bpe"])
def test_an_export_continues_a_prompt_as_mint_generate_does(tokenizer, trained, tmp_path, capsys):
    "A user's call — `tok(prompt)`, then `model.generate` greedy — gives the text `mint generate --temperature 0` gives: the exported tokenizer puts <eos> first, as Mint reads a prompt (without it the continuations differed)."
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    ck = trained("llama", tokenizer)
    export_hf(ck.params, ck.config, ck.vocab, tmp_path / "hf")
    tok, model = AutoTokenizer.from_pretrained(tmp_path / "hf"), AutoModelForCausalLM.from_pretrained(tmp_path / "hf", dtype=torch.float32)
    prompt = "人民日报"
    enc = tok(prompt, return_tensors="pt")
    out = model.generate(**enc, max_new_tokens=12, do_sample=False)
    theirs = tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    assert main(["generate", "--ckpt", str(ck.path), "--prompt", prompt, "--temperature", "0", "--max-new-tokens", "12"]) == 0
    ours = capsys.readouterr().out
    assert theirs and theirs in ours, (theirs, ours)


@needs_hf
@pytest.mark.parametrize("tokenizer", ["char", "bpe"])
def test_hf_tokenizer_on_hard_text(tokenizer, trained, tmp_path):
    "Unknown characters, newlines, tabs, emoji, full-width spaces and literal special-token text tokenize as in Mint."
    from transformers import AutoTokenizer
    ck = trained("llama", tokenizer)
    export_hf(ck.params, ck.config, ck.vocab, tmp_path / "hf")
    tok = AutoTokenizer.from_pretrained(tmp_path / "hf")
    for text in ["中国人民\n\t猫😀 <bos><eos>ǅ", "  a  b ", "\u3000中\r\n", "𠀀𪚥龘", "<unk>"]:   # specials' text as characters, as Mint reads it
        assert tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"] == ck.vocab.encode(text).tolist(), text
    for text in ["中国人民\n\t猫😀 ǅ", "  a  b ", "\u3000中\r\n", "𠀀𪚥龘"]:                # a plain call, on text without them
        assert tok(text, add_special_tokens=False)["input_ids"] == ck.vocab.encode(text).tolist(), text
    ids = ck.vocab.encode("人民日报社论")
    assert tok.decode(ids.tolist(), skip_special_tokens=True) == ck.vocab.decode(ids)


@needs_hf
def test_report_as_llama_is_a_loud_choice(trained, tmp_path, capsys):
    ck = trained("report", "char")
    code = main(["export", str(ck.path), "--to", "hf", str(tmp_path / "x"), "--arch", "llama"])
    err = capsys.readouterr().err
    assert code == 1 and "--drop-lm-head-bias" in err
    code = main(["export", str(ck.path), "--to", "hf", str(tmp_path / "x"), "--drop-lm-head-bias"])
    err = capsys.readouterr().err
    assert code == 0 and "mint: warning: lm_head.bias dropped" in err and "nats" in err
    assert json.loads((tmp_path / "x" / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]


@needs_hf
def test_cli_export_check(trained, tmp_path, capsys):
    ck = trained("qwen3", "bpe")
    code = main(["export", str(ck.path.parent), "--to", "hf", str(tmp_path / "q"), "--check"])
    out = capsys.readouterr().out
    assert code == 0 and "Qwen3ForCausalLM" in out and "greedy tokens identical" in out
    code = main(["export", str(ck.path.parent), "--to", "hf", str(tmp_path / "q")])
    assert code == 1 and "--overwrite" in capsys.readouterr().err


@needs_hf
def test_cli_export_check_with_dropped_bias_compares_with_the_model_as_exported(trained, tmp_path, capsys):
    "--drop-lm-head-bias --check: the export is checked against Mint without its lm_head bias (what was asked for) and passes."
    ck = trained("report", "char")
    code = main(["export", str(ck.path), "--to", "hf", str(tmp_path / "x"), "--drop-lm-head-bias", "--check"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "check (against Mint without its lm_head bias, as exported)" in out and "greedy tokens identical" in out
    assert "mint: error" not in err and "mint: warning: lm_head.bias dropped" in err


@needs_hf
def test_cli_export_check_failure_is_a_one_line_error(trained, tmp_path, capsys, monkeypatch):
    "A --check that finds a difference ends with one `mint: error:` line naming what differs (it used to exit 1 silently)."
    import mint.export
    ck = trained("llama", "char")
    bad = dict(n_tokens=10, ids_equal=True, max_abs_dlogit=0.5, greedy_equal=False, n_greedy=32, greedy_matched=3)
    monkeypatch.setattr(mint.export, "hf_parity", lambda *a, **k: bad)
    code = main(["export", str(ck.path), "--to", "hf", str(tmp_path / "x"), "--check"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("mint: error: --check failed"), lines
    assert "max |Δlogit| 5.0e-01" in lines[0] and "greedy tokens differ from token 3 of 32" in lines[0]


@pytest.mark.parametrize("arch,tokenizer", ARCH_TOKENIZERS)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_gguf_export_or_refusal(arch, tokenizer, dtype, trained, peoples_daily, tmp_path):
    import gguf
    ck = trained(arch, tokenizer)
    path = tmp_path / "m.gguf"
    if arch == "report":
        with pytest.raises(ValueError, match="lm_head bias"): export_gguf(ck.params, ck.config, ck.vocab, path, dtype)
        assert not path.exists()
        return
    info = export_gguf(ck.params, ck.config, ck.vocab, path, dtype)
    r = gguf.GGUFReader(str(path))
    assert r.fields["general.architecture"].contents() == arch
    assert r.fields["tokenizer.ggml.model"].contents() == ("t5" if tokenizer == "char" else "gpt2")
    assert len(r.fields["tokenizer.ggml.tokens"].contents()) == ck.config.vocab_size
    from mint.vocab import EOS                                          # llama.cpp puts <eos> first, as `mint generate`
    assert r.fields["tokenizer.ggml.add_bos_token"].contents() is True and r.fields["tokenizer.ggml.bos_token_id"].contents() == EOS
    from mint.export import CHAT_TEMPLATE                               # Mint's chat format, as in the transformers export
    assert r.fields["tokenizer.chat_template"].contents() == CHAT_TEMPLATE
    if importlib.util.find_spec("llama_cpp") is not None and dtype == "f32":
        p = gguf_parity(path, ck.params, ck.config, ck.vocab, validation_text(peoples_daily))
        assert p["ids_equal"] and p["greedy_equal"] and p["max_abs_dlogit"] < 1e-3, p


def test_gguf_refusals_name_the_bias():
    from mint.core import preset
    for opts, words in ((dict(arch="report"), ["lm_head bias", "--arch llama"]),
                        (dict(arch="qwen3", attention_bias=True), ["o_proj", "attention_bias"]),
                        (dict(arch="qwen3", mlp_bias=True), ["MLP", "mlp_bias"])):
        with pytest.raises(ValueError) as e: gguf_arch(preset("tiny", 100, **opts))
        assert all(w in str(e.value) for w in words), e.value


@needs_hf
@pytest.mark.parametrize("tokenizer", ["char", "bpe"])
def test_chat_template_gives_the_ids_of_mints_chat_format(tokenizer, trained, tmp_path):
    "`apply_chat_template` on a 2-turn conversation gives the ids Mint's chat formats (`mint.serve.chat_prompt`, as `mint chat`: <bos><human>Q<assistant>A<eos><human>Q2<assistant>); there was no chat_template. With sanitize_control_tokens=True a literal <eos> in a message stays text, as in Mint."
    from transformers import AutoTokenizer
    from mint.serve import chat_prompt
    ck = trained("llama", tokenizer)
    export_hf(ck.params, ck.config, ck.vocab, tmp_path / "hf")
    tok = AutoTokenizer.from_pretrained(tmp_path / "hf")
    chat = [{"role": "user", "content": "人民日报"}, {"role": "assistant", "content": "中国人民"}, {"role": "user", "content": "今天 新闻"}]
    want = chat_prompt(ck.vocab, chat, ck.config.max_seq_len)
    assert want[:2] == [BOS, HUMAN] and want[-1] == ASSISTANT and want.count(EOS) == 1
    assert tok.apply_chat_template(chat, add_generation_prompt=True)["input_ids"] == want
    tricky = [*chat[:2], {"role": "user", "content": "今天<eos>"}]          # short: the tiny model's window keeps both rounds
    got = tok.apply_chat_template(tricky, add_generation_prompt=True, sanitize_control_tokens=True)["input_ids"]
    assert got == chat_prompt(ck.vocab, tricky, ck.config.max_seq_len) and got[0] == BOS and got.count(EOS) == 1
    with pytest.raises(Exception, match="no system prompt"):
        tok.apply_chat_template([{"role": "system", "content": "x"}, *chat], add_generation_prompt=True)


@needs_hf
def test_bos_metadata_is_the_token_the_tokenizer_puts_first(trained, tmp_path):
    "config.json, generation_config.json and the tokenizer name <eos> as the first token (they said <bos>, the tokenizer and the GGUF put <eos>); generate with no prompt starts a document there and gives Mint's greedy tokens."
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from mint.export import mint_greedy
    ck = trained("llama", "char")
    export_hf(ck.params, ck.config, ck.vocab, tmp_path / "hf")
    cfg = json.loads((tmp_path / "hf" / "config.json").read_text())
    gen = json.loads((tmp_path / "hf" / "generation_config.json").read_text())
    tok = AutoTokenizer.from_pretrained(tmp_path / "hf")
    first = tok("中国")["input_ids"][0]
    assert first == EOS and cfg["bos_token_id"] == gen["bos_token_id"] == tok.bos_token_id == EOS
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "hf", dtype=torch.float32).eval()
    with torch.no_grad(): out = model.generate(max_new_tokens=12, min_new_tokens=12, do_sample=False)
    assert out[0, 0].item() == EOS and out[0, 1:].tolist() == mint_greedy(ck.params, ck.config, [EOS], 12)
    assert tok.decode(tok.apply_chat_template([{"role": "user", "content": "中国"}], add_generation_prompt=True)["input_ids"],
                      skip_special_tokens=True) == "中国"                 # <bos> stays special
