"""Issue 20, classes 3, 4, 8 and 9, driven through the CLI: a NaN validation keeps the last good state and fails; runs
that stop learning fail with their cause; --resume tells a value given from a default and says how it re-plans a
longer run; a signal during the last history write loses nothing and `mint report` rebuilds without history.json;
Ctrl-C during start-up, `mint chat` at its prompt and SIGTERM inside compiled code end with 130 / 143 and one line."""
import json, os, shutil, signal, subprocess, sys, time
from pathlib import Path
import pytest

import mint.train as T
from mint.cli import main
from mint.checkpoint import load_checkpoint, load_train_state

SMALL = ["--preset", "tiny", "--batch-size", "4", "--seq-len", "16", "--no-progress"]
POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def error_line(err):
    return [l for l in err.strip().splitlines() if l.strip()][-1]


def cli(args, patch="", **kw):
    "`mint ARGS` in a fresh Python process, after executing `patch` there (test-only monkeypatching)."
    code = "import sys\n" + patch + "\nfrom mint.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    "A finished 6-step run (batch 4, seed 0, lr and warmup by default)."
    out = tmp_path_factory.mktemp("fin") / "r"
    assert main(["train", "--max", "200", "--steps", "6", "--eval-every", "3", "--out", str(out), *SMALL]) == 0
    return out


# ---- 3. a NaN validation loss: exit 1, the last good state and best checkpoint kept, not "finished" ----

def test_nan_validation_after_start_keeps_the_last_good_state(tmp_path, capsys, monkeypatch):
    step = T.Engine.step
    def spoiling(self, b, lr, i):                       # the weights turn NaN right after step 6, before its validation
        loss = step(self, b, lr, i)
        if i == 6: self.p[:5] = float("nan")
        return loss
    monkeypatch.setattr(T.Engine, "step", spoiling)
    out = tmp_path / "r"
    code, stdout, err = run(["train", "--max", "200", "--steps", "12", "--eval-every", "3", "--out", out, *SMALL], capsys)
    msg = error_line(err)
    assert code == 1 and msg.startswith("mint: error: training failed:") and "validation loss became nan at step 6" in msg, err
    assert "training state of step 3" in msg and "best checkpoint of step 3" in msg
    assert load_train_state(out).step == 3 and load_checkpoint(out / "best.safetensors").meta["step"] == 3
    monkeypatch.setattr(T.Engine, "step", step)
    code, listed, _ = run(["list", "--root", out], capsys)
    assert code == 0 and "finished" not in listed and f"{out}: training state at step 3 of 12" in listed, listed
    code, _, err = run(["train", "--resume", out, "--no-progress"], capsys)      # the kept state resumes
    assert code == 0 and load_train_state(out).step == 12, err


# ---- 4. runs that do not learn: exit 1 naming the cause ----

NAN_GRADS = ("import numpy as np, mint.train as T\n_g = T.Engine.grads\n"
             "def grads(self, b):\n    loss = _g(self, b)\n    self.n = getattr(self, 'n', 0) + 1\n"
             "    if self.n >= 3: self.g[:7] = np.nan\n    return loss\nT.Engine.grads = grads")

@pytest.mark.parametrize("why,extra,patch,words,not_words", [
    ("lr too small", ["--lr", "1e-300"], "", ["too small", "raise --lr"], ["lower --lr"]),
    ("weight decay", ["--weight-decay", "1e30"], "", ["weight decay", "lower --weight-decay"], ["--lr"]),
    ("NaN gradients", [], NAN_GRADS, ["not finite", "Adam rejected"], []),
])
def test_a_run_that_does_not_learn_exits_1_with_its_cause(tmp_path, why, extra, patch, words, not_words):
    out = tmp_path / "r"
    p = cli(["train", "--max", "200", "--steps", "12", "--eval-every", "6", "--out", out, *SMALL, *extra], patch)
    stdout, err = p.communicate(timeout=600)
    msg = error_line(err)
    assert p.returncode == 1 and msg.startswith("mint: error: training failed:"), (why, err)
    assert all(w in msg for w in words) and not any(w in msg for w in not_words), (why, msg)
    h = json.loads((out / "history.json").read_text())
    assert h["val_step"] == [6, 12] and len(h["val_rejected"]) == len(h["val_moved"]) == 2 and "val_untrained" in h


def test_a_warmup_as_long_as_the_run_is_refused_before_it(tmp_path, capsys):
    "--warmup not below --steps: the learning rate would never reach --lr, and the run would train to its end and then fail on it; refused at once, nothing written (the library's diagnosis of such a run stays in chapter 36)."
    code, _, err = run(["train", "--warmup", "12", "--steps", "12", "--out", tmp_path / "r"], capsys)
    assert code == 1 and "--warmup 12 is not below --steps 12" in error_line(err), err
    assert not (tmp_path / "r").exists()


def test_an_lr_every_update_would_exceed_is_refused_before_the_run(tmp_path, capsys):
    "--lr 1e30: Adam would drop every update (each is about lr in size, over max_update 1e10); refused at once, nothing written. The library's end-of-run diagnosis of such a run is checked in chapter 36."
    code, _, err = run(["train", "--lr", "1e30", "--steps", "12", "--out", tmp_path / "r"], capsys)
    assert code == 2 and "argument --lr: must be in (0, 1e+09]" in err and "larger than Adam accepts" in err, err
    assert not (tmp_path / "r").exists()


def test_a_run_that_learns_records_its_checks(finished):
    h = json.loads((finished / "history.json").read_text())
    assert h["val_moved"] == [True, True] and max(h["val_rejected"]) < 0.5 and h["val_loss"][-1] < h["val_untrained"] - 0.01


# ---- 8. --resume: a value given is honoured or refused, never ignored; a longer run says its new plan ----

def test_resume_tells_a_value_given_from_a_default(finished, tmp_path, capsys):
    r = tmp_path / "r"; shutil.copytree(finished, r)
    code, _, err = run(["train", "--resume", r, "--steps", "8", "--batch-size", "64"], capsys)   # 64 is the parser's default
    msg = error_line(err)
    assert code == 1 and "--batch-size 64 (the run's: 4)" in msg and "cannot change" in msg, err
    code, _, err = run(["train", "--resume", r, "--steps", "8", "--seed", "1"], capsys)
    assert code == 1 and "--seed 1 (the run's: 0)" in error_line(err)
    code, _, err = run(["train", "--resume", r, "--steps", "8", "--preset", "small"], capsys)
    assert code == 1 and "--preset small (the run's: tiny)" in error_line(err)
    # the run's own values, given explicitly (0 and 4 here, one of them the default): honoured, the run goes on
    code, _, err = run(["train", "--resume", r, "--steps", "8", "--seed", "0", "--batch-size", "4", "--preset", "tiny",
                        "--no-progress"], capsys)
    assert code == 0 and load_train_state(r).step == 8, err


def test_extending_a_finished_run_prints_the_new_plan(finished, tmp_path, capsys):
    r = tmp_path / "r"; shutil.copytree(finished, r)
    code, _, err = run(["train", "--resume", r, "--steps", "12", "--no-progress"], capsys)
    assert code == 0, err
    note = next(l for l in err.splitlines() if l.startswith("note: --steps 12 re-plans"))
    assert "6-step run" in note and "at step 6 is" in note and "the old plan" in note, note
    lr = json.loads((r / "history.json").read_text())["lr"]
    assert len(lr) == 12 and lr[6] > lr[5]                                    # what the note announced: the rate rises again


# ---- 9. late signals and start-up ----

HISTORY_SIGNAL = ("import os, signal, mint.checkpoint as C\n_sent = []\n"
                  "def hook(point, path):\n"
                  "    if path.name == 'history.json' and point == 'wrote' and not _sent:\n"
                  "        _sent.append(1); signal.raise_signal(signal.{sig})\n"
                  "C.fault_hook = hook")

@POSIX
@pytest.mark.parametrize("sig,code,word", [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")])
def test_a_signal_during_the_last_history_write_loses_nothing(tmp_path, capsys, sig, code, word):
    out = tmp_path / "r"
    p = cli(["train", "--max", "200", "--steps", "6", "--eval-every", "3", "--out", out, *SMALL], HISTORY_SIGNAL.format(sig=sig))
    _, err = p.communicate(timeout=600)
    assert p.returncode == code and "Traceback" not in err, err
    assert error_line(err) == f"mint: done; then {word} while saving (all saved); all 6 steps were done", err
    h = json.loads((out / "history.json").read_text())
    assert len(h["loss"]) == 6 and h["val_step"] == [3, 6]
    assert run(["report", out], capsys)[0] == 0
    (out / "history.json").unlink(); (out / "report.html").unlink()
    c, stdout, err = run(["report", out], capsys)                                # rebuilt from the training state
    assert c == 0 and (out / "report.html").exists() and "history.json" not in err, err
    assert not (out / "history.json").exists()                                  # the report reads the state; it writes no history


def test_report_of_a_folder_without_history_or_state_is_one_line(tmp_path, capsys):
    c, _, err = run(["report", tmp_path], capsys)
    assert c == 1 and "no history.json and no training state" in err and len(err.strip().splitlines()) == 1


@POSIX
@pytest.mark.parametrize("delay", [0.05, 0.3, 1.0, 2.0])
def test_ctrl_c_during_start_up_is_one_line_and_130(tmp_path, delay):
    "The `mint` command (argv[0] = mint) interrupted while it imports numba, NumPy and the rest, or once it trains."
    code = ("import sys, os, signal, threading\nsys.argv[0] = 'mint'\n"
            f"threading.Timer({delay}, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
            "from mint.cli import main\nsys.exit(main(sys.argv[1:]))")
    p = subprocess.run([sys.executable, "-c", code, "train", "--max", "200", "--steps", "100000", "--out", tmp_path / "r", *SMALL],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 130 and "Traceback" not in p.stderr, p.stderr
    assert error_line(p.stderr).startswith("mint: interrupted"), p.stderr


@POSIX
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_chat_at_its_prompt_exits_143_on_sigterm_and_130_on_ctrl_c(finished, sig, code):
    p = cli(["chat", "--ckpt", finished / "best.safetensors"], stdin=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seen = ""
    while not seen.endswith("你: "):                                             # the prompt: chat waits for a line
        ch = p.stdout.read(1)
        assert ch, p.stderr.read()
        seen += ch
    time.sleep(0.3)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code and "Traceback" not in err, err
    assert error_line(err) == ("mint: terminated" if code == 143 else "mint: interrupted"), err


@POSIX
def test_sigterm_inside_compiled_code_during_generate_is_143_not_an_internal_error(finished):
    "A signal handler that raises inside a compiled function comes back as that function's SystemError, chained to it."
    patch = ("import os, signal, time, mint.generate as G\n"
             "def stream(*a, **k):\n    try:\n        signal.raise_signal(signal.SIGTERM); time.sleep(30)\n"
             "    except BaseException as e:\n        raise SystemError('<built-in function> returned a result with an exception set') from e\n"
             "    yield 0\nG.stream = stream")
    p = cli(["generate", "--ckpt", finished / "best.safetensors", "--prompt", "中国"], patch)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143 and "internal error" not in err and error_line(err) == "mint: terminated", err


def test_a_failed_run_is_flagged_by_list_and_never_chosen_by_generate(tmp_path, capsys, monkeypatch):
    "A run that exited 1 (here: the weights never changed) is FAILED in `mint list`, naming its cause, and `mint generate` without --ckpt skips it."
    monkeypatch.setenv("MINT_HOME", str(tmp_path))
    bad = tmp_path / "runs" / "bad"
    c, _, err = run(["train", "--max", "200", "--steps", "6", "--lr", "1e-300", "--out", bad, *SMALL], capsys)
    assert c == 1 and "too small" in err
    c, out, _ = run(["list", "--root", tmp_path / "runs"], capsys)
    assert c == 0 and f"{bad}: FAILED after all 6 steps" in out and "raise --lr" in out and f"{bad}: finished" not in out
    c, _, err = run(["generate", "--prompt", "中国", "--max-new-tokens", "3"], capsys)
    assert c == 1 and "no language model found" in err          # the only run failed: nothing to pick
