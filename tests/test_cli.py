"End-to-end tests of the `mint` command: small runs, bad inputs (one-line errors, exit codes, nothing destroyed)."
import json, shutil, subprocess, sys
from pathlib import Path
import numpy as np
import pytest
from mint.cli import main
from mint.checkpoint import load_checkpoint

SMALL = ["--preset", "tiny", "--batch-size", "4", "--seq-len", "16", "--eval-every", "5", "--no-progress"]


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    "A tiny model pretrained for a few steps on the first 400 lines of People's Daily."
    out = tmp_path_factory.mktemp("pre")
    assert main(["train", "--max", "400", "--steps", "12", "--out", str(out), *SMALL]) == 0
    return out / "best.safetensors"


def test_train_writes_checkpoint_and_generate_reads_it(pretrained, capsys):
    ck = load_checkpoint(pretrained)
    assert ck.meta["step"] > 0 and np.isfinite(ck.meta["val_loss"])
    code, out, err = run(["generate", "--ckpt", pretrained, "--prompt", "中国", "--max-new-tokens", "8", "--seed", "0"], capsys)
    assert code == 0 and out.startswith("中国")
    code, out, _ = run(["info", pretrained], capsys)
    assert code == 0 and "d_model=64" in out and "parameters" in out
    code, out, _ = run(["list", "--root", pretrained.parent], capsys)
    assert code == 0 and "best.safetensors" in out


def test_pretrain_finetune_chat_end_to_end(pretrained, tmp_path, capsys, monkeypatch):
    ft = tmp_path / "chat"
    code, out, err = run(["train", "--data", "chatterbot", "--init", pretrained, "--steps", "12", "--batch-size", "4",
                          "--seq-len", "32", "--eval-every", "6", "--no-progress", "--out", ft], capsys)
    assert code == 0, err
    assert "new characters in the data become <unk>" in out
    ck = load_checkpoint(ft / "best.safetensors")
    assert ck.vocab == load_checkpoint(pretrained).vocab          # fine-tuning keeps the vocab
    lines = iter(["你好", "你叫什么名字?", "clear", "再见", "quit"])
    monkeypatch.setattr("builtins.input", lambda _: next(lines))
    code, out, _ = run(["chat", "--ckpt", ft / "best.safetensors", "--seed", "0"], capsys)
    assert code == 0 and out.count("Mint: ") == 3 and "(conversation cleared)" in out


# ---- bad input: a one-line error, exit code != 0, nothing destroyed ----

def one_line_error(code, err):
    assert code != 0
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("mint: error:"), err
    return lines[0]


def test_missing_corpus(tmp_path, capsys):
    code, _, err = run(["train", "--data", tmp_path / "nope.txt", "--out", tmp_path / "r", *SMALL], capsys)
    assert "nope.txt" in one_line_error(code, err)


def test_empty_corpus(tmp_path, capsys):
    f = tmp_path / "empty.txt"; f.write_text("")
    code, _, err = run(["train", "--data", f, "--out", tmp_path / "r", *SMALL], capsys)
    assert "empty.txt" in one_line_error(code, err)


def test_prompt_of_unknown_characters(pretrained, capsys):
    code, _, err = run(["generate", "--ckpt", pretrained, "--prompt", "ＸＹＺ☃"], capsys)
    assert "vocabulary" in one_line_error(code, err)


def test_checkpoint_from_another_config(pretrained, tmp_path, capsys):
    before = pretrained.read_bytes()
    code, _, err = run(["train", "--init", pretrained, "--preset", "small", "--max", "100", "--steps", "2",
                        "--out", tmp_path / "r", "--no-progress"], capsys)
    assert "preset" in one_line_error(code, err)
    assert pretrained.read_bytes() == before                     # nothing destroyed


def test_rerun_into_a_folder_with_a_checkpoint(pretrained, capsys):
    before = pretrained.read_bytes()
    code, _, err = run(["train", "--max", "100", "--steps", "2", "--out", pretrained.parent, *SMALL], capsys)
    assert "--overwrite" in one_line_error(code, err)
    assert pretrained.read_bytes() == before                     # the earlier (better) model is kept


def test_bad_numbers_are_usage_errors(capsys):
    for args in (["train", "--steps", "0"], ["train", "--batch-size", "-1"], ["train", "--lr", "-1"]):
        with pytest.raises(SystemExit) as e: main(args)
        assert e.value.code == 2 and args[1] in capsys.readouterr().err
    for opt, val in (("--temperature", "-1"), ("--top-k", "-1"), ("--top-p", "0"), ("--max-new-tokens", "-3")):
        code, _, err = run(["generate", "--prompt", "中国", opt, val, "--ckpt", "nowhere"], capsys)
        msg = one_line_error(code, err)
        assert opt in msg or opt.lstrip("-").replace("-", "_") in msg


def test_corrupt_checkpoint(pretrained, tmp_path, capsys):
    bad = tmp_path / "best.safetensors"
    bad.write_bytes(pretrained.read_bytes()[:1000])
    code, _, err = run(["generate", "--ckpt", bad, "--prompt", "中国"], capsys)
    assert "truncated" in one_line_error(code, err)


def test_text_with_no_characters_in_vocab(pretrained, tmp_path, capsys):
    f = tmp_path / "latin.txt"
    f.write_text("".join(f"한국어 문장 {chr(0xAC00 + i)}{chr(0xAC00 + 2 * i)}\n" for i in range(60)))
    code, _, err = run(["train", "--data", f, "--init", pretrained, "--steps", "2", "--out", tmp_path / "r", "--no-progress"], capsys)
    assert "latin.txt" in one_line_error(code, err)


def test_unknown_option_and_help():
    r = subprocess.run([sys.executable, "-c", "import sys; from mint.cli import main; sys.exit(main())", "train", "--bogus"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "unrecognized arguments: --bogus" in r.stderr
    for cmd in ["train", "generate", "chat", "info", "list", "gpu", "demo"]:
        r = subprocess.run([sys.executable, "-c", "import sys; from mint.cli import main; sys.exit(main())", cmd, "--help"],
                           capture_output=True, text=True)
        assert r.returncode == 0 and "usage: mint " + cmd in r.stdout


def test_gpu_command_without_gpu(capsys, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    code, out, _ = run(["gpu"], capsys)
    assert code == 1 and "no CUDA device found" in out


@pytest.mark.parametrize("args, words", [(["--device", "cpu", "--gemm", "cublas"], ["--gemm cublas", "GPU training"]),
                                         (["--gemm", "cublas-tf32"], ["cublas", "simulator"]),
                                         (["--device", "cuda", "--ranks", "2", "--gemm", "cublas"], ["--gemm cublas", "one process"])])
def test_gemm_provider_errors_before_training(args, words, tmp_path, capsys, monkeypatch):
    "A second GEMM provider where it cannot run (the CPU, the simulator, several ranks) is one clear error, before any data is read."
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    code, out, err = run(["train", "--out", tmp_path / "r", *args, *SMALL], capsys)
    msg = one_line_error(code, err)
    assert all(w in msg for w in words) and "data:" not in out, msg
