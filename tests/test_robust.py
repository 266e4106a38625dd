"""Mint under faults, bad values and real-world trouble (issue 10): saves killed at every stage, two runs in one
folder, damaged checkpoints, diverged runs, signals and exit codes, a full disk, a read-only --out, too little memory,
unbounded generation, stop / save now / resume. Each test drives one class of failure end to end."""
import contextlib, errno, json, os, shutil, signal, subprocess, sys, time
from pathlib import Path
import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save as st_save

import mint.checkpoint as C
import mint.train as T
from mint.cli import main
from mint.checkpoint import load_checkpoint, CheckpointError, RunLock, temp_files, STATE_NAME
from mint.core import ModelConfig
from mint.vocab import Vocab
from mint.data import lm_batches, lm_eval_batches, encode_corpus
from mint.model import init_params

SMALL = ["--preset", "tiny", "--batch-size", "4", "--seq-len", "16", "--no-progress"]
POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals, fork and mounts")


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def last_error_line(code, err, prefix="mint: error:"):
    "The command failed and its last stderr line is the one-line error (notes may come before it)."
    assert code != 0, err
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert lines and lines[-1].startswith(prefix), err
    return lines[-1]


def one_line_error(code, err):
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert code != 0 and len(lines) == 1 and lines[0].startswith("mint: "), err
    return lines[0]


def cli(args, patch="", **kw):
    "Run `mint ARGS` in a fresh Python process, after executing `patch` (test-only monkeypatching) there."
    code = "import sys\n" + patch + "\nfrom mint.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def at_step(n, action):
    "Patch text: after training step `n` finishes, run `action` (e.g. send this process a signal)."
    return ("import os, signal, mint.train as T\n_s = T.Engine.step\n"
            f"def step(self, b, lr, i):\n    loss = _s(self, b, lr, i)\n    if i == {n}: {action}\n    return loss\n"
            "T.Engine.step = step")


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    out = tmp_path_factory.mktemp("pre")
    assert main(["train", "--max", "300", "--steps", "6", "--eval-every", "3", "--out", str(out), *SMALL]) == 0
    return out / "best.safetensors"


# ---- 1. a save killed at any instant leaves a whole checkpoint ----

def tiny_setup():
    voc = Vocab.build(["中国人民银行今天宣布"], min_count=1)
    toks = encode_corpus(["中国人民银行今天宣布消息"] * 100, voc)
    cfg = ModelConfig(vocab_size=len(voc), d_model=16, n_heads=2, n_layers=1, max_seq_len=16)
    tc = T.TrainConfig(steps=9, batch_size=4, seq_len=16, lr=1e-2, eval_every=3)
    val = list(lm_eval_batches(toks[:300], 4, 16))
    go = lambda out, **kw: T.train(init_params(cfg, seed=0), cfg, tc, lm_batches(toks, 4, 16, np.random.default_rng(0)),
                                   val, voc, out, progress=False, **kw)
    return go


def killed_run(i, out, before, names):
    "A run in a fresh process that dies (os._exit: no clean-up) at save event `i`, after copying `names` from `out` to `before`."
    C.CHUNK = 8192
    n = [0]
    def kill_here(pt, path):
        if n[0] == i:
            before.mkdir()
            for f in names:
                if (out / f).exists(): shutil.copy(out / f, before / f)
            os._exit(137)
        n[0] += 1
    C.fault_hook = kill_here
    try: tiny_setup()(out)
    finally: os._exit(0)


@POSIX
def test_a_save_killed_at_every_stage_leaves_the_old_or_the_new_whole_file(tmp_path, monkeypatch):
    """Record every stage of every atomic write of a run (create, each write of an 8 KiB chunk, fsync, rename, folder
    fsync; best checkpoint, training state, history), then for each stage kill a copy of the run right there
    (os._exit: no clean-up) and check what it left: each file is byte-identical to what was on disk before, or a newer
    whole one that loads; the run resumes from it to the same losses as the uninterrupted run."""
    go = tiny_setup()
    monkeypatch.setattr(C, "CHUNK", 8192)
    events = []
    monkeypatch.setattr(C, "fault_hook", lambda point, path: events.append((point, path.name)))
    full = go(tmp_path / "full")
    monkeypatch.setattr(C, "fault_hook", None)
    names = sorted({n for _, n in events})
    assert names == ["best.safetensors", "history.json", STATE_NAME]
    assert {p for p, _ in events} == {"created", "wrote", "synced", "renamed", "dir_synced"}
    assert sum(p == "wrote" for p, n in events if n == STATE_NAME) > 3 * 4     # several writes per state file
    kinds = {"best.safetensors": lambda p: load_checkpoint(p).meta["step"], STATE_NAME: lambda p: T.load_train_state(p).step,
             "history.json": lambda p: len(json.loads(p.read_text())["loss"])}
    # The copies are forked by a fork server that never ran a parallel numba loop: forking this process, which has,
    # would abort the child (GNU OpenMP is not fork-safe; numba's threading-layer docs say to use spawn or forkserver).
    import multiprocessing as mp
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["mint.train", "mint.checkpoint"])
    for i, (point, name) in enumerate(events):
        out, before = tmp_path / f"k{i}", tmp_path / f"b{i}"
        p = ctx.Process(target=killed_run, args=(i, out, before, list(kinds)))
        p.start(); p.join()
        assert p.exitcode == 137, (i, point, name)
        for f, read in kinds.items():
            old, new = before / f, out / f
            if not new.exists():
                assert not old.exists(), (i, point, name, f)                   # a file never disappears
                continue
            if old.exists() and new.read_bytes() == old.read_bytes(): continue   # the previous one, byte for byte
            assert read(new) >= (read(old) if old.exists() else 0), (i, point, name, f)   # or a newer whole one
        with RunLock(out, log=lambda s: None): pass                            # the next run here cleans temp files
        assert temp_files(out) == []
        if (out / STATE_NAME).exists():
            rest = go(out, resume=T.load_train_state(out))
            assert rest.history["loss"] == full.history["loss"], (i, point, name)


@POSIX
def test_cli_killed_inside_a_save_then_generate_and_resume(tmp_path, capsys):
    "`mint train` killed after the weights of its second best checkpoint are written, before the rename: generate still works, resume finishes."
    run_dir = tmp_path / "r"
    patch = ("import os, mint.checkpoint as C\nn = [0]\ndef hook(point, path):\n"
             "    if point == 'synced' and path.name == 'best.safetensors':\n        n[0] += 1\n"
             "        if n[0] == 2: os._exit(137)\nC.fault_hook = hook")
    p = cli(["train", "--max", "200", "--steps", "8", "--eval-every", "2", "--out", run_dir, *SMALL], patch)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 137, err
    assert temp_files(run_dir)                                                # the killed save left its temp file
    code, out, _ = run(["list", "--root", tmp_path], capsys)
    assert code == 0 and "temp file(s) left by an interrupted save" in out and "training state at step 2" in out
    assert load_checkpoint(run_dir).meta["step"] == 2                         # the first best, whole
    code, out, _ = run(["generate", "--ckpt", run_dir, "--prompt", "中国", "--max-new-tokens", "5", "--seed", "0"], capsys)
    assert code == 0 and out.startswith("中国")
    code, out, err = run(["train", "--resume", run_dir, "--no-progress"], capsys)
    assert code == 0, err
    assert "removed 1 temp file" in err and "no longer running" in err       # the dead run's lock and temp file
    assert temp_files(run_dir) == [] and load_checkpoint(run_dir).meta["step"] > 2


# ---- 2. one run per folder ----

@POSIX
def test_two_runs_started_at_once_into_one_folder(tmp_path):
    out = tmp_path / "r"
    args = ["train", "--max", "300", "--steps", "100000", "--eval-every", "1000", "--out", out, *SMALL]
    procs = [cli(args), cli(args)]
    deadline = time.time() + 300
    while all(p.poll() is None for p in procs) and time.time() < deadline: time.sleep(0.1)
    loser = next(p for p in procs if p.poll() is not None)
    winner = next(p for p in procs if p is not loser)
    _, err = loser.communicate()
    assert loser.returncode == 1 and winner.poll() is None
    msg = one_line_error(loser.returncode, err)
    assert "is in use by another run" in msg and f"pid {winner.pid}" in msg
    winner.send_signal(signal.SIGTERM)                                         # the winner trains; stop it cleanly
    wout, werr = winner.communicate(timeout=300)
    assert winner.returncode == 143, werr
    assert "data:" in wout and load_checkpoint(out).meta["step"] > 0


# ---- 3. checkpoints that are not what they claim ----

def rewritten(src, dst, fn_info=None, fn_tensors=None):
    "Copy checkpoint `src` to `dst` with its header JSON / tensors edited (the stored checksum kept, as a hand edit would)."
    with safe_open(str(src), framework="numpy") as f:
        info, t = json.loads(f.metadata()["mint"]), {k: f.get_tensor(k) for k in f.keys()}
    if fn_info: fn_info(info)
    if fn_tensors: fn_tensors(t)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(st_save(t, metadata={"mint": json.dumps(info, ensure_ascii=False)}))
    return dst


def flip(b):
    b = bytearray(b); b[len(b) - 100] ^= 0x10; return bytes(b)


def swap_ids(i):
    t2i = i["vocab"]["token_to_id"]; a, b = [k for k, v in t2i.items() if v in (10, 11)]; t2i[a], t2i[b] = t2i[b], t2i[a]


def nan_weights(t):
    w = t["model.norm.weight"].copy(); w[:5] = np.nan; t["model.norm.weight"] = w


DAMAGE = {
    "heads 4 -> 8": (lambda i: i["config"].update(n_heads=8), None, "checksum"),
    "n_layers": (lambda i: i["config"].update(n_layers=3), None, "missing"),
    "max_seq_len": (lambda i: i["config"].update(max_seq_len=128), None, "checksum"),
    "swapped vocab ids": (swap_ids, None, "checksum"),
    "int32 weights": (None, lambda t: t.update({"model.norm.weight": t["model.norm.weight"].astype(np.int32)}), "I32"),
    "bool weights": (None, lambda t: t.update({"model.norm.weight": t["model.norm.weight"] > 0}), "BOOL"),
    "NaN weights": (None, nan_weights, "checksum"),
    "huge dimensions": (lambda i: i["config"].update(d_model=2**20, n_heads=2**10), None, "shape"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_checkpoint_is_refused_in_one_line(pretrained, tmp_path, capsys, kind):
    fi, ft, word = DAMAGE[kind]
    bad = rewritten(pretrained, tmp_path / "best.safetensors", fi, ft)
    for cmd in (["generate", "--ckpt", bad, "--prompt", "中国"], ["info", bad]):
        code, out, err = run(cmd, capsys)
        msg = one_line_error(code, err)
        assert word in msg and "best.safetensors" in msg and out == "", msg


def test_flipped_bit_and_recomputed_nan(pretrained, tmp_path, capsys):
    bad = tmp_path / "flip" / "best.safetensors"; bad.parent.mkdir(); bad.write_bytes(flip(pretrained.read_bytes()))
    assert "checksum" in one_line_error(*run(["info", bad], capsys)[::2])
    def nan_and_checksum(t):                         # someone who meant it: NaN weights with a correct checksum
        nan_weights(t)
    src = rewritten(pretrained, tmp_path / "nan" / "best.safetensors", None, nan_and_checksum)
    with safe_open(str(src), framework="numpy") as f:
        info, t = json.loads(f.metadata()["mint"]), {k: f.get_tensor(k) for k in f.keys()}
    info["checksum"] = C.content_checksum(info, t)
    src.write_bytes(st_save(t, metadata={"mint": json.dumps(info, ensure_ascii=False)}))
    msg = one_line_error(*run(["generate", "--ckpt", src, "--prompt", "中国"], capsys)[::2])
    assert "5 of" in msg and "NaN" in msg


def test_first_format_checkpoints_still_load(pretrained, tmp_path, capsys):
    "A checkpoint of the first format (weights + best.json, same JSON in the header) loads, whatever its sidecar says."
    ck = load_checkpoint(pretrained)
    info = dict(format=C.LEGACY_FORMAT, save_id="x", config=ck.config.to_dict(), vocab=ck.vocab.to_dict(), meta=ck.meta)
    old = tmp_path / "best.safetensors"
    from mint.model import views
    old.write_bytes(st_save(views(ck.params, ck.config).named, metadata={"mint": json.dumps(info, ensure_ascii=False)}))
    (tmp_path / "best.json").write_text(json.dumps({**info, "save_id": "another save"}))  # the old two-rename crash
    code, out, _ = run(["info", old], capsys)
    assert code == 0 and "mint-checkpoint-v1" in out
    assert load_checkpoint(old).params.tobytes() == ck.params.tobytes()


# ---- 4. diverged and do-nothing runs are failures ----

def test_diverged_and_do_nothing_runs_exit_nonzero(tmp_path, capsys):
    base = ["train", "--max", "200", "--steps", "12", "--eval-every", "6", *SMALL]
    code, out, err = run([*base, "--lr", "1e-300", "--out", tmp_path / "a"], capsys)
    assert "weights never changed" in last_error_line(code, err)
    code, out, err = run([*base, "--lr", "100", "--out", tmp_path / "b"], capsys)
    msg = last_error_line(code, err)
    assert "diverged" in msg and "perplexity inf" in out                     # the report prints, inf and all


def test_nan_before_the_first_validation_is_a_failure(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(T.CpuEngine, "update", lambda self, loss, lr, step: float("nan"))
    code, out, err = run(["train", "--max", "200", "--steps", "12", "--out", tmp_path / "r", *SMALL], capsys)
    msg = last_error_line(code, err)
    assert "diverged" in msg and "no finite validation loss" in msg and "best checkpoint: none saved" in out


# ---- 5 & 6. one-line errors, found before training ----

@contextlib.contextmanager
def small_filesystem(path: Path, mib: int, read_only=False):
    "A tmpfs of `mib` MiB at `path` (needs root); None when the machine does not allow it."
    path.mkdir(parents=True, exist_ok=True)
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("mount"):
        yield None; return
    opts = f"size={mib}m" + (",ro" if read_only else "")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True).returncode != 0:
        yield None; return
    try: yield path
    finally: subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_read_only_out_fails_before_the_corpus_is_loaded(tmp_path, capsys):
    with small_filesystem(tmp_path / "ro", 1, read_only=True) as fs:
        ro = fs
        if ro is None:
            if os.name == "posix" and os.geteuid() == 0: pytest.skip("root ignores permissions and cannot mount here")
            ro = tmp_path / "ro"; ro.chmod(0o555)
        code, out, err = run(["train", "--max", "100", "--steps", "2", "--out", ro / "run", *SMALL], capsys)
    msg = one_line_error(code, err)
    assert "cannot write" in msg and "ro" in msg and "data:" not in out       # no corpus was loaded


def test_disk_too_small_fails_before_training(tmp_path, capsys):
    with small_filesystem(tmp_path / "fs", 1) as fs:
        if fs is None:
            pytest.skip("cannot mount a small file system here (needs root); the ENOSPC injection test covers saves")
        code, out, err = run(["train", "--max", "100", "--steps", "2", "--out", fs / "run", *SMALL], capsys)
    msg = one_line_error(code, err)
    assert "MiB free" in msg and "--out" in msg and "validation loss" not in out


def test_disk_full_mid_run_fails_that_save_not_the_run(tmp_path, capsys, monkeypatch):
    """After step 3 the disk fills up. Real: a 24 MiB tmpfs filled by a file; elsewhere: ENOSPC injected into every later
    write. The run goes on to its end, keeps the checkpoint saved before, leaves no temp file, and exits 1 saying so."""
    with small_filesystem(tmp_path / "fs", 24) as fs:
        where = fs or tmp_path
        def fill():
            if fs is not None:
                with open(fs / "filler", "wb") as f:
                    with contextlib.suppress(OSError):
                        while True: f.write(b"\0" * 65536); f.flush()
            else:
                def enospc(point, path):
                    if point == "wrote": raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                monkeypatch.setattr(C, "fault_hook", enospc)
        orig = T.Engine.step
        def step(self, b, lr, i):
            loss = orig(self, b, lr, i)
            if i == 3: fill()
            return loss
        monkeypatch.setattr(T.Engine, "step", step)
        out = where / "run"
        code, stdout, err = run(["train", "--max", "200", "--steps", "9", "--eval-every", "2", "--out", out, *SMALL], capsys)
        msg = last_error_line(code, err)
        assert "save(s) failed" in msg and "disk is full" in msg
        assert "9 steps" in stdout                                               # the run went to its end
        assert load_checkpoint(out).meta["step"] == 2 and temp_files(out) == []
        assert err.count("warning:") >= 2                                        # each failed save said so
        report = [l for l in err.splitlines() if "no report written" in l]      # the real cause, not "no history.json here"
        assert len(report) == 1 and "history was not saved" in report[0] and "disk is full" in report[0], err
        assert "no history.json here" not in err and not (out / "report.html").exists()


def test_resume_after_freeing_space_counts_the_files_it_replaces(tmp_path, capsys, monkeypatch):
    """A resume replaces best.safetensors and the training state: their bytes count as free. With room for the run
    less those files it resumes; with less it is refused in one line saying how much is needed and how much is free."""
    out = tmp_path / "run"
    assert run(["train", "--max", "200", "--steps", "4", "--eval-every", "2", "--out", out, *SMALL], capsys)[0] == 0
    c, s = C.checkpoint_bytes(load_checkpoint(out).config), T.state_bytes(load_checkpoint(out).config, 8)
    held = (out / "best.safetensors").stat().st_size + (out / STATE_NAME).stat().st_size
    need = 2 * c + 2 * s - held                                             # what the resume really needs
    usage = shutil.disk_usage(tmp_path)
    for free in (need - 4096, need + 4096):
        monkeypatch.setattr(C.shutil, "disk_usage", lambda p, free=free: usage._replace(free=free))
        code, stdout, err = run(["train", "--resume", out, "--steps", "8", "--no-progress"], capsys)
        if free < need:
            msg = one_line_error(code, err)
            assert f"{free / 2**20:,.1f} MiB free, the run needs about {need / 2**20:,.1f} MiB" in msg, msg
            assert "best.safetensors and train_state.safetensors, which it replaces" in msg and "--out" in msg
        else:
            assert code == 0, err
    assert T.load_train_state(out).step == 8


@pytest.mark.parametrize("kind", ["damaged", "missing", "another model"])
def test_resume_never_replaces_a_bad_best_checkpoint_silently(pretrained, tmp_path, capsys, kind):
    "A damaged, missing or foreign best.safetensors on --resume: one warning naming it and when it is replaced; the run goes on and leaves a good one."
    out = tmp_path / "run"
    assert run(["train", "--max", "200", "--steps", "4", "--eval-every", "3", "--out", out, *SMALL], capsys)[0] == 0
    best = out / "best.safetensors"
    if kind == "damaged": b = bytearray(best.read_bytes()); b[-5] ^= 0xFF; best.write_bytes(bytes(b))
    elif kind == "missing": best.unlink()
    else: shutil.copy(pretrained, best)
    code, stdout, err = run(["train", "--resume", out, "--steps", "8", "--no-progress"], capsys)
    assert code == 0, err
    warns = [l for l in err.splitlines() if l.startswith("warning:")]
    assert len(warns) == 1 and str(best) in warns[0] and "next validation (step 6)" in warns[0], err
    assert {"damaged": "checksum", "missing": "missing", "another model": "another model"}[kind] in warns[0]
    assert load_checkpoint(best).meta["step"] in (6, 8)


def test_not_enough_memory_is_found_before_training(tmp_path, capsys, monkeypatch):
    code, out, err = run(["train", "--max", "100", "--steps", "2", "--batch-size", "100000000", "--out", tmp_path / "h",
                          "--no-progress"], capsys)
    assert "--batch-size" in one_line_error(code, err) and "model:" not in out   # a huge batch: before any batch is made
    import mint.loop as L                                                 # the CPU engine checks memory there
    monkeypatch.setattr(L, "available_memory", lambda: 2**20)
    code, out, err = run(["train", "--max", "100", "--steps", "2", "--out", tmp_path / "r", *SMALL], capsys)
    msg = one_line_error(code, err)
    assert "GiB" in msg and "--batch-size" in msg and "done" not in out


def test_interrupted_or_terminated_during_start_up(tmp_path, capsys, monkeypatch):
    import mint.pipeline as P
    for sig, code_want, word in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")):
        monkeypatch.setattr(P, "load_samples", lambda *a, **k: signal.raise_signal(sig) or time.sleep(5))
        code, out, err = run(["train", "--steps", "2", "--out", tmp_path / word, *SMALL], capsys)
        assert code == code_want and one_line_error(code, err) == f"mint: {word}"
        assert not (tmp_path / word / "mint.lock").exists()                     # the lock was released


# ---- time limit: none by default, and a warning judged on the steady pace ----

def test_default_train_runs_all_its_steps():
    "`mint train` has no time limit unless one is given: a fixed number of steps is done however slow the machine."
    from mint.cli import build_parser
    assert build_parser().parse_args(["train"]).time_limit is None and T.TrainConfig().time_limit is None


@pytest.mark.parametrize("first,rest,warned", [(30.0, 0.3, False), (1.5, 1.5, True)])
def test_slow_run_warning_is_judged_after_the_warm_up(tmp_path, capsys, monkeypatch, first, rest, warned):
    """A fake clock: 60 steps under a 1-minute limit. A first step of 30 s (numba compiling) and 0.3 s a step after it
    fit (48 s): no warning, all 60 steps (judged on the first 20 steps it once predicted 71 s). At 1.5 s a step (90 s)
    the warning comes at step 25, before the limit stops the run."""
    now, orig = [0.0], T.Engine.step
    def step(self, b, lr, i):
        now[0] += first if i == 1 else rest
        return orig(self, b, lr, i)
    monkeypatch.setattr(T.Engine, "step", step)
    monkeypatch.setattr(T, "_clock", lambda: now[0])
    code, stdout, err = run(["train", "--max", "200", "--steps", "60", "--eval-every", "1000", "--time-limit", "1",
                             "--out", tmp_path / "r", *SMALL], capsys)
    assert code == 0, err
    warns = [l for l in err.splitlines() if "time limit" in l]
    if not warned: assert warns == [] and "60 steps" in stdout, err
    else:
        assert len(warns) == 1 and "(steps 6–25)" in warns[0] and "stop near step 41 of 60" in warns[0], err
        assert "time limit (60 s) reached at step 41" in stdout


# ---- 7. signals, exit codes, resume ----

RUN10 = ["--max", "200", "--steps", "10", "--eval-every", "3", *SMALL]

@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    "The history of a 10-step run that nobody stopped."
    out = tmp_path_factory.mktemp("full")
    assert main(["train", *RUN10, "--out", str(out)]) == 0
    return json.loads((out / "history.json").read_text())


@POSIX
@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_signal_mid_run_stops_cleanly_saves_and_resumes_to_the_same_losses(uninterrupted, tmp_path, capsys, sig, code, word):
    args, full = RUN10, uninterrupted
    stopped = tmp_path / "stopped"
    p = cli(["train", *args, "--out", stopped], at_step(5, f"signal.raise_signal({int(sig)})"))
    _, err = p.communicate(timeout=300)
    assert p.returncode == code, err
    assert err.strip().splitlines()[-1] == f"mint: {word} at step 5; continue with: mint train --resume {stopped}"
    assert T.load_train_state(stopped).step == 5 and (stopped / "history.json").exists()
    assert load_checkpoint(stopped).meta["step"] in (3, 5)
    capsys.readouterr()
    c, out, err = run(["train", "--resume", stopped, "--no-progress"], capsys)
    assert c == 0, err
    resumed = json.loads((stopped / "history.json").read_text())
    assert resumed["loss"] == full["loss"] and resumed["lr"] == full["lr"]     # bit for bit (JSON floats round-trip)


def test_resume_refuses_changed_settings_and_finished_runs(pretrained, capsys):
    run_dir = pretrained.parent
    msg = one_line_error(*run(["train", "--resume", run_dir, "--lr", "0.1"], capsys)[::2])
    assert "--lr" in msg and "cannot change" in msg
    msg = one_line_error(*run(["train", "--resume", run_dir, "--no-progress"], capsys)[::2])
    assert "--steps" in msg and "6 of 6" in msg


@POSIX
def test_terminal_s_saves_now_and_ctrl_c_stops(tmp_path):
    "In a real terminal (a pty): `s` + Enter writes step-NNNNNN.safetensors and training goes on; Ctrl-C then stops it with 130."
    import pty, select
    out = tmp_path / "r"
    patch = "import time, mint.train as T\n_t = T.Engine.step\nT.Engine.step = lambda *a: (time.sleep(0.02), _t(*a))[1]"
    code = "import sys\n" + patch + "\nfrom mint.cli import main\nsys.exit(main(sys.argv[1:]))"
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", code, "train", "--max", "200", "--steps", "100000",
                                  "--eval-every", "100000", "--out", str(out), *SMALL])
    seen = ""
    def read_until(text, timeout=300):
        nonlocal seen
        end = time.time() + timeout
        while text not in seen and time.time() < end:
            if select.select([fd], [], [], 1)[0]:
                try: seen += os.read(fd, 4096).decode("utf-8", "replace")
                except OSError: break
        assert text in seen, seen
    read_until("s + Enter saves")
    os.write(fd, b"s\n")
    read_until("and the training state in the run folder; training goes on")
    os.write(fd, b"\x03")                                                       # Ctrl-C, from the terminal
    read_until("continue with: mint train --resume")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.WEXITSTATUS(status) == 130
    saved = list(out.glob("step-*.safetensors"))
    assert len(saved) == 1 and load_checkpoint(saved[0]).meta["step"] > 0
    assert T.load_train_state(out).step >= load_checkpoint(saved[0]).meta["step"]


# ---- 8. generation is bounded ----

def test_generation_stops_at_the_window_unless_it_slides(pretrained, capsys, monkeypatch):
    monkeypatch.setattr("mint.generate.NEVER_SAMPLED", (0, 1, 2, 3, 4, 5))   # no <eos>: only the window can end it
    t0 = time.perf_counter()
    code, out, err = run(["generate", "--ckpt", pretrained, "--prompt", "中国", "--max-new-tokens", "100000",
                          "--temperature", "0"], capsys)
    assert code == 0 and "window of 64 positions is full" in err and time.perf_counter() - t0 < 60
    assert len(out.strip()) == 64                         # prompt + generated = the window (the last one sampled at its end)
    writes = []
    class Recorder:
        def write(self, s): writes.append(s)
        def flush(self): pass
    monkeypatch.setattr(sys, "stdout", Recorder())
    code = main(["generate", "--ckpt", str(pretrained), "--prompt", "中国", "--max-new-tokens", "150", "--slide",
                 "--temperature", "0"])
    assert code == 0
    text = "".join(writes)
    assert len(text.strip()) == 2 + 150 and len(writes) >= 150               # past the window, one write per character


# ---- one runs location ----

def test_runs_location_is_shared_by_train_list_and_generate(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MINT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--max", "200", "--steps", "3", *SMALL]) == 0
    ck = tmp_path / "home" / "runs" / "peoples_daily" / "best.safetensors"
    assert ck.exists()
    capsys.readouterr()
    code, out, _ = run(["list"], capsys)
    assert code == 0 and str(ck) in out
    monkeypatch.chdir(tmp_path.parent)
    code, out, _ = run(["generate", "--prompt", "中国", "--max-new-tokens", "3"], capsys)
    assert code == 0 and out.startswith("中国")
    monkeypatch.delenv("MINT_HOME")
    repo = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(repo / "nbs")
    assert C.runs_dir() == repo / "runs"
    monkeypatch.chdir(repo)
    assert C.runs_dir() == repo / "runs"


@POSIX
@pytest.mark.parametrize("inherited", ["signal.default_int_handler", "signal.SIG_IGN"], ids=["sigint-default", "sigint-ignored"])
def test_second_ctrl_c_during_the_stops_save_says_what_was_not_saved(tmp_path, inherited):
    "Ctrl-C at step 5, then Ctrl-C again as the stop saves its best checkpoint: the stop ends at once, history.json and summary.json are written, and the line names what was not saved and what is on disk (it said 'the training state is that of step 5' while the state on disk was step 3's). The same when the process starts with SIGINT ignored, as a shell script's background job does (the second Ctrl-C was ignored)."
    out = tmp_path / "r"
    patch = (f"import os, signal, mint.train as T, mint.checkpoint as C\nsignal.signal(signal.SIGINT, {inherited})\n"   # as started
             "_s = T.Engine.step\n"
             "def hook(pt, path, n=[0]):\n    if pt == 'created' and n[0] == 0: n[0] = 1; signal.raise_signal(signal.SIGINT)\n"
             "def step(self, b, lr, i):\n    loss = _s(self, b, lr, i)\n"
             "    if i == 5: signal.raise_signal(signal.SIGINT); C.fault_hook = hook\n    return loss\n"
             "T.Engine.step = step")
    p = cli(["train", *RUN10, "--out", out], patch)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 130, err
    last = err.strip().splitlines()[-1]
    state = T.load_train_state(out).step
    assert state == 3 and "after step 5, during the stop's validation and save" in last, last
    assert "not saved: the training state of step 5" in last and f"on disk: the training state of step {state}" in last, last
    assert f"continue with: mint train --resume {out}" in last
    summary = json.loads((out / "summary.json").read_text())
    assert summary["exit_code"] == 130 and json.loads((out / "history.json").read_text())["step"][-1] == 5


@POSIX
@pytest.mark.parametrize("sig,reason", [(signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupted")])
def test_second_signal_ends_a_process_that_started_ignoring_it(sig, reason):
    "`stop_on_signals` in a process that started with the signal ignored (a script's background job): the first asks for a stop, the second ends the process (SIGTERM: its default action, as an unhandled SIGTERM would; SIGINT: KeyboardInterrupt), where it used to fall back to the ignoring and the process ran on."
    code = (f"import signal\nfrom mint.controls import stop_on_signals, TrainControl\nsignal.signal({int(sig)}, signal.SIG_IGN)\n"
            "c = TrainControl()\nwith stop_on_signals(c):\n"
            f"    signal.raise_signal({int(sig)})\n    print(c.stop_reason, flush=True)\n"
            f"    signal.raise_signal({int(sig)})\n    print('ran on', flush=True)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == [reason], (r.stdout, r.stderr)
    if sig == signal.SIGTERM: assert r.returncode == -signal.SIGTERM, r.returncode
    else: assert r.returncode == -signal.SIGINT and "KeyboardInterrupt" in r.stderr, (r.returncode, r.stderr)   # Python dies by SIGINT
