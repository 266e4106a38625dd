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


MISSING_PATHS = [  # every option that reads a path, given one that is not there: (args, the hint it must give)
    (["train", "--data", "MISSING.txt"], "give an existing file"),
    (["train", "--data", "MISSING/"], "or a folder of them"),
    (["train", "--init", "MISSING.safetensors"], "give a checkpoint"),
    (["train", "--resume", "MISSING"], "give the folder of a run"),
    (["eval", "MISSING"], "give a checkpoint"),
    (["eval", "PRETRAINED", "--data", "MISSING.jsonl"], "give an existing file"),
    (["generate", "--ckpt", "MISSING.safetensors", "--prompt", "x"], "give a checkpoint"),
    (["chat", "--ckpt", "MISSING"], "give a checkpoint"),
    (["info", "MISSING.safetensors"], "give a checkpoint"),
    (["report", "MISSING"], "give a run folder"),
    (["list", "--root", "MISSING"], "give a folder that holds runs"),
    (["export", "MISSING.safetensors", "--to", "gguf", "OUT.gguf"], "give a checkpoint"),
    (["serve", "MISSING"], "give a checkpoint"),
]


@pytest.mark.parametrize("args,hint", MISSING_PATHS, ids=[" ".join(a[:2]) for a, _ in MISSING_PATHS])
def test_a_missing_path_is_named_with_what_to_give(args, hint, pretrained, tmp_path):
    "Each path option given a path that does not exist: exit 1, one line naming the path and what the option takes, no traceback."
    subst = {"PRETRAINED": str(pretrained.parent), "OUT.gguf": str(tmp_path / "out.gguf")}
    argv = [subst.get(a, a.replace("MISSING", str(tmp_path / "missing"))) for a in args]
    r = subprocess.run([sys.executable, "-c", "import sys; from mint.cli import main; sys.exit(main())", *argv],
                       capture_output=True, text=True, cwd=tmp_path)
    line = one_line_error(r.returncode, r.stderr)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert str(tmp_path / "missing") in line and hint in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == []          # nothing written


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


def usage_error(code, err):
    "A usage error: exit code 2 and one line `mint: error: …; see 'mint X --help'`."
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mint: error: ") and lines[0].endswith(" --help'"), err
    return lines[0]


def test_bad_numbers_are_usage_errors(capsys):
    "Numbers out of range are usage errors (exit 2, one line naming the flag) found at parse time, before any model is loaded."
    cases = [(["train", "--steps", "0"], "--steps"), (["train", "--batch-size", "-1"], "--batch-size"),
             (["train", "--lr", "-1"], "--lr"), (["train", "--warmup", "-1"], "--warmup"),
             (["train", "--weight-decay", "-0.1"], "--weight-decay"), (["train", "--time-limit", "-5"], "--time-limit"),
             (["train", "--seed", "-1"], "--seed"), (["train", "--lr", "inf"], "--lr"), (["demo", "--seed", "-2"], "--seed"),
             (["serve", "x", "--port", "0"], "--port"), (["chat", "--max-rounds", "0"], "--max-rounds")]
    for opt, val in (("--temperature", "-1"), ("--top-k", "-1"), ("--top-k", "1.5"), ("--top-p", "0"), ("--top-p", "1.01"),
                     ("--max-new-tokens", "-3"), ("--seed", "-1"), ("--temperature", "nan")):
        cases.append((["generate", "--prompt", "中国", opt, val, "--ckpt", "nowhere"], opt))
    for args, opt in cases:
        msg = usage_error(*run(args, capsys)[::2])
        assert f"argument {opt}:" in msg and f"see 'mint {args[0]} --help'" in msg, msg


def test_mistyped_command_choice_or_option_gets_a_suggestion(capsys):
    msg = usage_error(*run(["trian", "--steps", "3"], capsys)[::2])
    assert "unknown command 'trian'; did you mean 'train'?" in msg and "see 'mint --help'" in msg
    assert "commands: train, generate" in usage_error(*run(["xyzzy"], capsys)[::2])
    assert "did you mean 'tiny'?" in usage_error(*run(["train", "--preset", "tinny"], capsys)[::2])
    assert "did you mean 'gguf'?" in usage_error(*run(["export", "a", "b", "--to", "gguff"], capsys)[::2])
    msg = usage_error(*run(["train", "--stepz", "3"], capsys)[::2])
    assert "unrecognized arguments: --stepz 3; did you mean '--steps'?" in msg and "see 'mint train --help'" in msg
    assert "required: --prompt" in usage_error(*run(["generate"], capsys)[::2])
    assert run(["--version"], capsys)[0] == 0


def test_train_help_lists_every_task_format_and_folders():
    "`mint train --help` is written from mint.formats' tables: every task (squad too) and file type, and what a folder means."
    from mint.formats import TASK_PATHS, DATA_SUFFIXES
    r = subprocess.run([sys.executable, "-c", "import sys; from mint.cli import main; sys.exit(main())", "train", "--help"],
                       capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "400"})
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert all(t in text for t in [*TASK_PATHS, "squad", "peoples_daily", "chatterbot"]), text
    assert all(x in text for x in DATA_SUFFIXES) and "a folder (all its" in text and "in name order" in text


def test_train_on_a_folder_reads_every_file(tmp_path, capsys):
    "`--data DIR` trains on all the folder's data files, in name order, and says so (it used to read only the first)."
    from mint import data as D
    lines = D.load_peoples_daily(max_lines=300)
    d = tmp_path / "corpus"; d.mkdir()
    (d / "b.txt").write_text("\n".join(lines[150:]) + "\n", encoding="utf-8")
    (d / "a.txt").write_text("\n".join(lines[:150]) + "\n", encoding="utf-8")
    code, out, err = run(["train", "--data", d, "--steps", "2", "--out", tmp_path / "r", *SMALL], capsys)
    assert code == 0, err
    assert "read 2 of 2 file(s) in name order: a.txt (150), b.txt (150)" in out and "300 sample(s)" in out


def test_list_offers_resume_only_for_runs_that_stopped_early(pretrained, tmp_path, capsys):
    code, out, _ = run(["list", "--root", pretrained.parent], capsys)
    assert code == 0 and f"{pretrained.parent}: finished, all 12 steps done" in out and "--resume" not in out
    early = tmp_path / "early"
    assert main(["train", "--max", "300", "--steps", "500", "--time-limit", "0.0001", "--out", str(early), *SMALL]) == 0
    capsys.readouterr()
    code, out, _ = run(["list", "--root", early], capsys)
    assert code == 0 and "training state at step " in out and "of 500 (continue: mint train --resume" in out and "finished" not in out, out


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


def test_every_option_has_help():
    "Every option of every subcommand says what it does in --help (once `mint demo --preset` and `--device` did not)."
    import argparse
    from mint.cli import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [(name, a.option_strings[0]) for name, p in sub.choices.items() for a in p._actions if a.option_strings and not a.help]
    assert bare == [], bare


def test_gpu_command_without_gpu(capsys, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    code, out, _ = run(["gpu"], capsys)
    assert code == 1 and "no CUDA device found" in out


@pytest.mark.parametrize("args, words", [(["--device", "cpu", "--gemm", "cublas"], ["--gemm cublas", "GPU training"]),
                                         (["--gemm", "cublas-tf32"], ["'cublas-tf32'", "needs a real GPU", "use 'mint'"]),
                                         (["--gemm", "cublas-bf16"], ["'cublas-bf16'", "needs a real GPU", "use 'mint'"]),
                                         (["--gemm", "tc"], ["'tc'", "needs a real GPU", "use 'mint'"]),
                                         (["--device", "cpu", "--gemm", "cublas-bf16"], ["--gemm cublas-bf16", "GPU training"]),
                                         (["--device", "cuda", "--ranks", "2", "--gemm", "cublas"], ["--gemm cublas", "one process"])])
def test_gemm_provider_errors_before_training(args, words, tmp_path, capsys, monkeypatch):
    "A second GEMM provider where it cannot run (the CPU, the simulator, several ranks) is one clear error, before any data is read."
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    code, out, err = run(["train", "--out", tmp_path / "r", *args, *SMALL], capsys)
    msg = one_line_error(code, err)
    assert all(w in msg for w in words) and "data:" not in out, msg


def test_startup_sigint_is_the_mint_commands_not_its_spawned_childrens():
    "Ctrl-C during start-up prints 'mint: interrupted' once: the handler is installed in the `mint` command's process, not in a process it spawns (the decoding process inherits its argv)."
    import subprocess, sys
    code = ("import sys, signal; sys.argv = ['/venv/bin/mint', 'serve']; import mint; "
            "print(signal.getsignal(signal.SIGINT) is mint._startup_sigint and mint._startup_sigint is not None)")
    as_command = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    as_child = subprocess.run([sys.executable, "-c", code, "--multiprocessing-fork"], capture_output=True, text=True, check=True)
    assert as_command.stdout.split()[-1] == "True", as_command
    assert as_child.stdout.split()[-1] == "False", as_child
