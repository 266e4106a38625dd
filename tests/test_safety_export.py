"""Issue 20, driven from outside through the `mint` command: a command writes only where it was asked (never over a
run, never over files it did not write, atomically, never into a live run's folder); `--overwrite` of a run keeps the
old run until the new one has started; `mint list` flags damaged entries; text round-trips through Mint and its
exports; console output never fails on encoding; messages name the file or the limit and the real cause."""
import errno, hashlib, importlib.util, json, os, shutil, subprocess, sys
from pathlib import Path
import numpy as np
import pytest
from mint.cli import main
from mint import checkpoint as C
from mint.checkpoint import load_checkpoint, save_checkpoint, RunLock, RunLockedError, LOCK_NAME, STATE_NAME, EXPORT_MARKER
from mint.vocab import UNICODE_SAMPLES, UNK, BOS, EOS, HUMAN, ASSISTANT, PAD

SMALL = ["--preset", "tiny", "--batch-size", "4", "--seq-len", "16", "--eval-every", "3", "--no-progress"]
needs_hf = pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason='pip install -e ".[interop]"')


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(code, err):
    assert code == 1, err
    lines = [l for l in err.strip().splitlines() if l.strip() and not l.startswith(("data:", "split:"))]
    assert len(lines) == 1 and lines[0].startswith("mint: error:"), err
    return lines[0]


def snapshot(folder) -> dict:
    "{relative path: sha256 of the bytes (or the link target)} of everything under `folder`, links not followed."
    out = {}
    for d, dirs, files in os.walk(folder):
        for n in dirs + files:
            p = Path(d) / n
            rel = str(p.relative_to(folder))
            if p.is_symlink(): out[rel] = "-> " + os.readlink(p)
            elif p.is_file(): out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else: out[rel] = "dir"
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    "RUNS/a: a finished tiny llama run made by `mint train` (6 steps, so exportable as GGUF too)."
    root = tmp_path_factory.mktemp("home") / "runs"
    assert main(["train", "--max", "300", "--steps", "6", "--arch", "llama", "--out", str(root / "a"), *SMALL]) == 0
    return root


@pytest.fixture
def run_copy(runs, tmp_path):
    "A private copy of RUNS/a that a test may change."
    dst = tmp_path / "runs" / "a"
    shutil.copytree(runs / "a", dst)
    return dst


# ---- 1. a command writes only where it was asked, never over a run ----

REFUSED = [  # (--to, output, extra options, words of the refusal)
    ("hf", "{runs}", ["--overwrite"], "holds runs"),                           # the folder of all runs
    ("hf", "{run}", ["--overwrite"], "is a run folder"),                        # the run itself
    ("hf", "{run}/sub", [], "lies inside the run folder"),                     # a folder inside it
    ("gguf", "{run}/best.safetensors", ["--overwrite"], "is the checkpoint being exported"),   # its own source
    ("gguf", "{run}/model.gguf", ["--overwrite"], "lies inside the run folder"),
    ("gguf", "{runs}/notes.txt", ["--overwrite"], "a file mint export did not write"),
]


@pytest.mark.parametrize("to,out,extra,words", REFUSED)
def test_export_never_writes_over_a_run(to, out, extra, words, run_copy, capsys):
    runs = run_copy.parent
    (runs / "notes.txt").write_text("mine")
    before = snapshot(runs)
    target = out.format(runs=runs, run=run_copy)
    code, _, err = run(["export", run_copy / "best.safetensors", "--to", to, target, *extra], capsys)
    line = one_line_error(code, err)
    assert words in line and Path(target).name in line, line
    assert snapshot(runs) == before                                    # nothing written, nothing removed


def test_overwrite_replaces_only_an_earlier_export_of_the_same_kind(run_copy, tmp_path, capsys):
    ck = run_copy / "best.safetensors"
    hf, gg = tmp_path / "out" / "hf", tmp_path / "out" / "m.gguf"
    assert run(["export", ck, "--to", "hf", hf], capsys)[0] == 0
    marker = json.loads((hf / EXPORT_MARKER).read_text())
    assert marker["kind"] == "hf" and "model.safetensors" in marker["files"]
    assert "--overwrite" in one_line_error(*run(["export", ck, "--to", "hf", hf], capsys)[::2])
    assert run(["export", ck, "--to", "hf", hf, "--overwrite"], capsys)[0] == 0          # its own earlier export: replaced
    (hf / "README.md").write_text("my notes")                                            # a file the export did not write
    before = snapshot(hf)
    line = one_line_error(*run(["export", ck, "--to", "hf", hf, "--overwrite"], capsys)[::2])
    assert "README.md" in line and "did not write" in line and snapshot(hf) == before
    mine = tmp_path / "mine"; mine.mkdir(); (mine / "thesis.tex").write_text("years of work")
    line = one_line_error(*run(["export", ck, "--to", "hf", mine, "--overwrite"], capsys)[::2])
    assert "did not write" in line and (mine / "thesis.tex").read_text() == "years of work" and len(os.listdir(mine)) == 1
    assert run(["export", ck, "--to", "gguf", gg], capsys)[0] == 0
    assert run(["export", ck, "--to", "gguf", gg, "--overwrite"], capsys)[0] == 0       # a GGUF it wrote: replaced
    line = one_line_error(*run(["export", ck, "--to", "hf", gg, "--overwrite"], capsys)[::2])
    assert "is a file" in line


def test_export_into_a_folder_a_live_run_holds(run_copy, capsys):
    "A second process holds the run's lock the way a running `mint train` does; every write into that folder is refused."
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom mint.checkpoint import RunLock\n"
                               "with RunLock(sys.argv[1]):\n    print('locked', flush=True); time.sleep(120)", str(run_copy)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = snapshot(run_copy)
        ck = run_copy / "best.safetensors"
        line = one_line_error(*run(["export", ck, "--to", "hf", run_copy, "--overwrite"], capsys)[::2])
        assert "a live run holds it" in line and f"pid {holder.pid}" in line, line
        for args in (["--to", "hf", run_copy / "hf"], ["--to", "gguf", run_copy / "m.gguf", "--overwrite"]):
            assert "lies inside the run folder" in one_line_error(*run(["export", ck, *args], capsys)[::2])
        assert "in use by a live run" in one_line_error(*run(["report", run_copy], capsys)[::2])
        line = one_line_error(*run(["train", "--max", "300", "--steps", "3", "--out", run_copy, "--overwrite", *SMALL], capsys)[::2])
        assert "in use by another run" in line
        assert snapshot(run_copy) == before and (run_copy / LOCK_NAME).exists()
        with pytest.raises(RunLockedError): RunLock(run_copy).__enter__()          # the lock still holds
    finally:
        holder.kill(); holder.wait()


def test_train_out_never_inside_or_around_runs(run_copy, capsys):
    runs = run_copy.parent
    before = snapshot(runs)
    line = one_line_error(*run(["train", "--max", "300", "--steps", "3", "--out", runs, *SMALL], capsys)[::2])
    assert "holds other runs" in line
    line = one_line_error(*run(["train", "--max", "300", "--steps", "3", "--out", run_copy / "ft", *SMALL], capsys)[::2])
    assert "lies inside the run folder" in line
    assert snapshot(runs) == before


def test_a_failed_export_leaves_the_old_one_whole(run_copy, tmp_path, capsys):
    "A full disk halfway through (the fault hook raises ENOSPC after a write): one line naming the file, the old export whole, no temp left."
    ck = run_copy / "best.safetensors"
    hf, gg = tmp_path / "out" / "hf", tmp_path / "out" / "m.gguf"
    assert run(["export", ck, "--to", "hf", hf], capsys)[0] == 0 and run(["export", ck, "--to", "gguf", gg], capsys)[0] == 0
    before = snapshot(tmp_path / "out")
    def full_disk(point, path):
        if Path(path).name in ("model.safetensors", "m.gguf"): raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    C.fault_hook = full_disk
    try:
        for to, out in (("hf", hf), ("gguf", gg)):
            line = one_line_error(*run(["export", ck, "--to", to, out, "--overwrite"], capsys)[::2])
            assert "cannot write" in line and ("model.safetensors" if to == "hf" else "m.gguf") in line, line
            assert "disk is full" in line and "internal error" not in line
    finally:
        C.fault_hook = None
    assert snapshot(tmp_path / "out") == before                          # the old exports, byte for byte; no temp files


# ---- 2. --overwrite discards nothing before the new run has started ----

def test_overwrite_with_bad_arguments_keeps_the_old_run_resumable(run_copy, tmp_path, capsys, monkeypatch):
    before = snapshot(run_copy)
    (tmp_path / "empty.txt").write_text("")
    for args, words in ((["--max", "300", "--seq-len", "100000"], "--seq-len 100000 exceeds"),
                        (["--data", tmp_path / "empty.txt"], "empty.txt"),
                        (["--data", tmp_path / "missing.txt"], "missing.txt"),
                        (["--max", "300", "--preset", "tiny", "--arch", "qwen3", "--vocab-size", "100"], "--vocab-size")):
        code, _, err = run(["train", *args, "--steps", "3", "--out", run_copy, "--overwrite", "--no-progress"], capsys)
        assert words in one_line_error(code, err)
        assert snapshot(run_copy) == before, args
    # a check inside the training loop itself fails after the old files were set aside: they come back
    def no_space(*a, **k): raise ValueError(f"{run_copy}: 0.0 MiB free (a test)")
    monkeypatch.setattr("mint.train.check_disk_space", no_space)
    code, _, err = run(["train", "--max", "300", "--steps", "3", "--out", run_copy, "--overwrite", *SMALL], capsys)
    assert code == 1 and "earlier run's files are back" in err
    assert snapshot(run_copy) == before
    monkeypatch.undo()
    code, out, err = run(["train", "--resume", run_copy, "--steps", "9", "--no-progress"], capsys)
    assert code == 0 and "resuming" in out and "at step 6 of 9" in out, err
    code, out, err = run(["train", "--max", "300", "--steps", "3", "--out", run_copy, "--overwrite", *SMALL], capsys)
    assert code == 0, err
    assert load_checkpoint(run_copy / "best.safetensors").meta["step"] == 3
    assert not list(run_copy.glob(".replaced-*"))                       # the old run's files went once the new one saved


def test_a_run_set_aside_by_a_killed_overwrite_is_named_everywhere(run_copy, capsys):
    "A --overwrite killed before the new run's first save leaves the old run in a hidden .replaced-*/ (and the new run's lock): list, resume, generate and a new train name it and the command that puts it back; after that command the run resumes."
    aside = run_copy / ".replaced-abc"
    aside.mkdir()
    for n in ("best.safetensors", STATE_NAME, "history.json", "summary.json", "report.html"): os.replace(run_copy / n, aside / n)
    put_back = f"mv {aside}/* {run_copy}/ && rmdir {aside}"
    code, out, err = run(["list", "--root", run_copy.parent], capsys)
    assert code == 0 and put_back in out, out + err
    for args in (["train", "--resume", run_copy, "--steps", "9", "--no-progress"], ["generate", "--ckpt", run_copy, "--prompt", "中国"],
                 ["train", "--max", "300", "--steps", "3", "--out", run_copy, *SMALL],
                 ["train", "--max", "300", "--steps", "3", "--out", run_copy, "--overwrite", *SMALL]):
        code, _, err = run(args, capsys)
        assert code == 1 and put_back in err, (args, err)
    assert subprocess.run(put_back, shell=True).returncode == 0
    code, out, err = run(["train", "--resume", run_copy, "--steps", "9", "--no-progress"], capsys)
    assert code == 0 and "at step 6 of 9" in out, err


def test_overwrite_replaces_a_run_never_files_that_share_its_names(run_copy, tmp_path, capsys):
    "--overwrite replaces a Mint run; a folder with a user's history.json / summary.json / report.html and no run, a run folder holding a report.html mint did not write, and `mint report` over such a report are refused, and nothing changes."
    mine = tmp_path / "mine"; mine.mkdir()
    for n in ("history.json", "summary.json", "notes.txt"): (mine / n).write_text('{"mine": true}')
    (mine / "report.html").write_text("<html><title>my report</title></html>")
    (run_copy / "report.html").write_text("<html><title>my notes on this run</title></html>")
    before, before_run = snapshot(mine), snapshot(run_copy)
    code, _, err = run(["train", "--max", "300", "--steps", "3", "--out", mine, "--overwrite", *SMALL], capsys)
    assert "no Mint run" in one_line_error(code, err) and snapshot(mine) == before
    code, _, err = run(["train", "--max", "300", "--steps", "3", "--out", run_copy, "--overwrite", *SMALL], capsys)
    assert "was not written by mint" in one_line_error(code, err) and snapshot(run_copy) == before_run
    code, _, err = run(["report", run_copy], capsys)
    assert "was not written by mint" in one_line_error(code, err) and snapshot(run_copy) == before_run


def test_messages_name_the_model_the_option_and_the_export(run_copy, tmp_path, capsys):
    "A prompt the model cannot read names the model it was checked against; an empty --check-text is refused before anything is written; mint list calls an export's model.safetensors an export, not a damaged checkpoint."
    code, _, err = run(["generate", "--ckpt", run_copy, "--prompt", "hello world"], capsys)
    assert f"(the model: {run_copy / 'best.safetensors'})" in one_line_error(code, err)
    code, _, err = run(["export", run_copy, tmp_path / "hf", "--to", "hf", "--check", "--check-text", " "], capsys)
    assert "--check-text is empty" in one_line_error(code, err) and not (tmp_path / "hf").exists()
    assert run(["export", run_copy, run_copy.parent / "exp", "--to", "hf"], capsys)[0] == 0
    code, out, err = run(["list", "--root", run_copy.parent], capsys)
    assert code == 0 and "an export for transformers (mint export), not a checkpoint" in out and "DAMAGED" not in out, out
    foreign = tmp_path / "foreign"; foreign.mkdir(); (foreign / "history.json").write_text('{"epochs": [1, 2]}')
    code, _, err = run(["report", foreign], capsys)                     # was "internal error (KeyError: 'step')"
    assert "is not a mint run's history" in one_line_error(code, err) and not (foreign / "report.html").exists()


# ---- 10. mint list on damaged folders ----

def test_list_flags_damaged_nan_and_unreadable_entries(runs, tmp_path, capsys):
    from mint.checkpoint import read_info, write_unit
    from safetensors.numpy import load_file
    root = tmp_path / "list"
    for name in ("good", "flipped", "nan", "truncated", "badstate"): shutil.copytree(runs / "a", root / name)
    ck = "best.safetensors"
    b = bytearray((root / "flipped" / ck).read_bytes()); b[-100] ^= 0xFF; (root / "flipped" / ck).write_bytes(bytes(b))
    info, t = read_info(runs / "a" / ck), load_file(str(runs / "a" / ck))
    k = sorted(t)[0]; t[k] = t[k].copy(); t[k].flat[0] = np.nan; info.pop("checksum")
    write_unit(root / "nan" / ck, t, info)                              # NaN with a valid checksum: someone meant it
    (root / "truncated" / ck).write_bytes((runs / "a" / ck).read_bytes()[:5000])
    s = bytearray((root / "badstate" / STATE_NAME).read_bytes()); s[-50] ^= 1; (root / "badstate" / STATE_NAME).write_bytes(bytes(s))
    os.symlink("self.safetensors", root / "self.safetensors")          # a symlink loop
    os.symlink("..", root / "good" / "up")                              # a folder loop
    os.symlink("nowhere", root / "good" / "step-000001.safetensors")    # a link to nothing
    (root / "good" / ".replaced-x").mkdir(); shutil.copy(runs / "a" / ck, root / "good" / ".replaced-x" / ck)   # a killed --overwrite
    code, out, err = run(["list", "--root", root], capsys)
    assert code == 0, err
    lines = {l.split()[0].rstrip(":"): l for l in out.splitlines()}
    assert "DAMAGED" not in lines[str(root / "good" / ck)] and "step      6" in lines[str(root / "good" / ck)]
    assert "checksum mismatch" in lines[str(root / "flipped" / ck)]
    assert "NaN" in lines[str(root / "nan" / ck)] and "DAMAGED" in lines[str(root / "nan" / ck)]
    assert "truncated" in lines[str(root / "truncated" / ck)]
    assert "DAMAGED training state" in out and "badstate: DAMAGED" in out
    assert "unreadable" in lines[str(root / "self.safetensors")] and "unreadable" in lines[str(root / "good" / "step-000001.safetensors")]
    assert f"{root / 'good'}: finished, all 6 steps done" in out
    assert str(root / "good" / "up") not in out                         # the loop was not followed
    assert "holds an earlier run (best.safetensors) that an interrupted --overwrite set aside" in out
    assert str(root / "good" / ".replaced-x" / ck) not in out


# ---- 11. text: Unicode round trips, exported tokenizers decode as Mint, any console ----

@pytest.fixture(scope="module")
def unicode_run(tmp_path_factory):
    "A char model trained by `mint train` on a file of emoji sequences and format characters (file and folder named with emoji)."
    d = tmp_path_factory.mktemp("uni")
    f = d / "文本😀.txt"
    f.write_text("\n".join(f"中文句子{i}：{t}。" for i in range(3) for t in UNICODE_SAMPLES.values()) + "\n", encoding="utf-8")
    out = d / "文件夹😀"
    assert main(["train", "--data", str(f), "--steps", "2", "--out", str(out), *SMALL]) == 0
    return out


def test_unicode_classes_round_trip(unicode_run):
    v = load_checkpoint(unicode_run).vocab
    for name, t in UNICODE_SAMPLES.items():
        assert v.count_unknown(t) == 0, name
        assert v.decode(v.encode(t)) == t, name
    assert "\u200d" in v.stoi and "\u200c" in v.stoi and "\U000e0067" in v.stoi


@needs_hf
def test_hf_tokenizer_decodes_as_mint(unicode_run, trained, tmp_path, capsys):
    from transformers import AutoTokenizer
    for ck_path in (unicode_run / "best.safetensors", trained("llama", "bpe").path):
        ck = load_checkpoint(ck_path)
        out = tmp_path / ck_path.parent.name
        assert run(["export", ck_path, "--to", "hf", out], capsys)[0] == 0
        tok = AutoTokenizer.from_pretrained(out)
        for t in [*UNICODE_SAMPLES.values(), "中国人民\n\t猫😀 <unk><bos>x"]:
            ids = ck.vocab.encode(t).tolist()
            assert tok(t, add_special_tokens=False, split_special_tokens=True)["input_ids"] == ids, t   # specials' text as characters
            if "<" not in t: assert tok(t, add_special_tokens=False)["input_ids"] == ids, t                # a plain call, without them
            assert tok.decode(ids, skip_special_tokens=True) == ck.vocab.decode(ids), t
        mixed = [BOS, HUMAN, *ck.vocab.encode("中文").tolist(), UNK, ASSISTANT, UNK, EOS, PAD]
        assert tok.decode(mixed, skip_special_tokens=True) == ck.vocab.decode(mixed)
    assert "\ufffd" in ck.vocab.decode([UNK]) or ck.vocab.decode([UNK]) == ""      # char: U+FFFD; BPE: dropped, as in Mint


@pytest.mark.parametrize("cmd", [["info", "{run}"], ["list", "--root", "{parent}"],
                                 ["generate", "--ckpt", "{run}", "--prompt", "中文👍🏽", "--max-new-tokens", "3", "--seed", "0"]])
def test_console_that_cannot_show_the_text(cmd, unicode_run):
    "A GBK console (PYTHONIOENCODING=gbk): what it cannot show is replaced, the command succeeds."
    args = [a.format(run=unicode_run, parent=unicode_run.parent) for a in cmd]
    env = {**os.environ, "PYTHONIOENCODING": "gbk", "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run([sys.executable, "-c", "import sys; from mint.cli import main; sys.exit(main(sys.argv[1:]))", *args],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr.decode("gbk", "replace")
    out = p.stdout.decode("gbk")                                     # valid GBK throughout
    assert "?" in out + p.stderr.decode("gbk") and "文" in out + p.stderr.decode("gbk")


# ---- 12. messages that name the file or the limit and the real cause ----

def test_missing_task_under_a_missing_root_says_so(tmp_path, capsys):
    line = one_line_error(*run(["train", "--root", tmp_path / "nonexistent", "--data", "belle", "--out", tmp_path / "r"], capsys)[::2])
    assert "does not exist" in line and "did you mean" not in line and "nonexistent" in line


def test_truncated_utf8_is_not_called_gbk(tmp_path, capsys):
    f = tmp_path / "cut.txt"
    f.write_bytes(("中文句子。\n" * 50).encode() + "截断".encode()[:-1])
    line = one_line_error(*run(["train", "--data", f, "--steps", "2", "--out", tmp_path / "r", "--no-progress"], capsys)[::2])
    assert "cut.txt" in line and "ends inside a UTF-8 character" in line and "GBK" not in line


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama-cpp-python is installed")
def test_gguf_check_without_llama_cpp_names_its_install(run_copy, tmp_path, capsys):
    line = one_line_error(*run(["export", run_copy, "--to", "gguf", tmp_path / "m.gguf", "--check"], capsys)[::2])
    assert "pip install llama-cpp-python" in line and ".[interop]" not in line


def test_chat_says_when_a_message_is_cut_to_the_window(runs, capsys, monkeypatch):
    lines = iter(["中" * 200, "quit"])
    monkeypatch.setattr("builtins.input", lambda _: next(lines))
    code, out, err = run(["chat", "--ckpt", runs / "a", "--seed", "0"], capsys)
    assert code == 0 and "(note: the message is 200 tokens" in out and "window of 64 positions" in out


def test_gpu_out_of_memory_names_a_real_size():
    from mint.gpu_train import oom_hint, GpuMemoryError
    from mint.core import preset
    with pytest.raises(GpuMemoryError) as e:
        with oom_hint(preset("tiny", 100), 4, 16): raise MemoryError("CUDA_ERROR_OUT_OF_MEMORY")
    assert "0.00 GiB" not in str(e.value) and "MiB for batch 4" in str(e.value)


def test_generate_and_chat_say_which_checkpoint_and_pick_only_finished_cli_runs(runs, tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    shutil.copytree(runs / "a", home / "runs" / "cli")                  # made by `mint train`
    ck = load_checkpoint(runs / "a")
    demo = home / "runs" / "notebook-demo"                              # newer, made by a chapter or mint.fit (no origin)
    meta = {**ck.meta, "run": {k: v for k, v in ck.meta["run"].items() if k != "origin"}}
    save_checkpoint(demo / "best.safetensors", ck.params, ck.config, ck.vocab, meta)
    (demo / "history.json").write_text("{}")
    save_checkpoint(home / "runs" / "saved" / "step-000003.safetensors", ck.params, ck.config, ck.vocab, ck.meta)   # save-now
    monkeypatch.setenv("MINT_HOME", str(home))
    code, out, err = run(["generate", "--prompt", "中国", "--max-new-tokens", "3", "--seed", "0"], capsys)
    assert code == 0, err
    used = home / "runs" / "cli" / "best.safetensors"
    assert f"mint: using {used} (step 6, validation loss {ck.meta['val_loss']:.3f})" in err
    code, out, err = run(["generate", "--ckpt", demo, "--prompt", "中国", "--max-new-tokens", "3"], capsys)
    assert code == 0 and f"mint: using {demo / 'best.safetensors'}" in err          # asked for: used, and named
    shutil.rmtree(home / "runs" / "cli")
    line = one_line_error(*run(["generate", "--prompt", "中国"], capsys)[::2])
    assert "no language model found" in line and "--ckpt" in line      # the demo and the saved step are not taken


def test_a_corpus_cache_is_never_written_inside_a_run(run_copy, capsys):
    "A wiki dump read with --root pointing into a run: its JSONL cache (ROOT/cache/) would land in the run; refused."
    dump = Path(__file__).resolve().parent.parent / "data" / "fixtures" / "formats" / "zhwiki_sample.xml"
    before = snapshot(run_copy)
    line = one_line_error(*run(["train", "--data", dump, "--root", run_copy, "--steps", "2", "--out", run_copy.parent / "w",
                                "--no-progress"], capsys)[::2])
    assert "lies inside the run folder" in line and "cache" in line
    assert snapshot(run_copy) == before


# ---- 11. a killed export, a link as the output, Ctrl-C after the export ----

def mint_killed(args, point, name):
    "Run `mint ARGS` in a fresh process that dies (os._exit, as SIGKILL: no clean-up) at the fault point `point` of the file or folder `name`."
    patch = ("import os, sys\nfrom pathlib import Path\nimport mint.checkpoint as C\n"
             f"C.fault_hook = lambda pt, p: os._exit(137) if pt == {point!r} and Path(p).name == {name!r} else None\n")
    code = patch + "from mint.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=300)


def test_leftovers_of_a_killed_export_are_removed_by_the_next_one(run_copy, tmp_path, capsys):
    "SIGKILL mid-write leaves .hf.xxxxxxxx/ (its marker says whose it is); killed during the swap, the old export waits in .hf.old.xxxxxxxx/. The next export removes exactly those; a look-alike folder of the user's and a live export's temp folder stay, the first named with the command that removes it."
    ck, out = run_copy / "best.safetensors", tmp_path / "out"
    hf = out / "hf"
    assert run(["export", ck, "--to", "hf", hf], capsys)[0] == 0
    assert mint_killed(["export", ck, "--to", "hf", hf, "--overwrite"], "renamed", "hf").returncode == 137
    hold = tmp_path / "hold"; hold.mkdir()                   # kept out of the next killed export's reach (it would clean it up)
    for p in out.glob(".hf.old.*"): p.rename(hold / p.name)
    assert mint_killed(["export", ck, "--to", "hf", hf, "--overwrite"], "wrote", "model.safetensors").returncode == 137
    for p in hold.iterdir(): p.rename(out / p.name)
    left = sorted(p.name for p in out.iterdir() if p.name != "hf")
    assert len(left) == 2 and any(n.startswith(".hf.old.") for n in left), left            # a temp folder, an old export set aside
    mine = out / ".hf.abcd1234"; mine.mkdir(); (mine / "notes.txt").write_text("mine")      # the user's, of the same shape
    live = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom mint.checkpoint import temp_folder_beside\n"
                             "print(temp_folder_beside(sys.argv[1]), flush=True); time.sleep(120)", str(hf)],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        live_tmp = Path(live.stdout.readline().strip())
        code, stdout, err = run(["export", ck, "--to", "hf", hf, "--overwrite"], capsys)
        assert code == 0, err
        dead = next(n for n in left if not n.startswith(".hf.old."))
        assert live_tmp.exists() and not (out / dead).exists(), sorted(os.listdir(out))   # a live writer's folder stays, a dead one goes
        assert all((out / n).exists() for n in left if n.startswith(".hf.old.")), stdout  # the old export set aside: not while one writes
    finally:
        live.kill(); live.wait()
    code, stdout, err = run(["export", ck, "--to", "hf", hf, "--overwrite"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [".hf.abcd1234", "hf"], sorted(os.listdir(out))
    assert (mine / "notes.txt").read_text() == "mine" and f"rm -r {mine}" in err and "left alone" in err
    assert C.TEMP_MARKER not in os.listdir(hf) and C.export_marker(hf)["kind"] == "hf"
    assert "removed" in stdout and str(live_tmp) in stdout


def test_leftovers_of_a_killed_export_before_the_fix_are_named_not_removed(run_copy, tmp_path, capsys):
    "A temp folder without Mint's marker (an older Mint, or someone else's) is never removed: the line names it and gives the command."
    ck, hf = run_copy / "best.safetensors", tmp_path / "hf"
    old = tmp_path / ".hf.q1w2e3r4"; old.mkdir(); (old / "model.safetensors").write_bytes(b"half")
    gg_tmp = tmp_path / ".m.gguf.a1b2c3d4.tmp"; gg_tmp.write_bytes(b"GGUF")
    code, _, err = run(["export", ck, "--to", "hf", hf], capsys)
    assert code == 0 and old.exists() and f"rm -r {old}" in err, err
    code, _, err = run(["export", ck, "--to", "gguf", tmp_path / "m.gguf"], capsys)
    assert code == 0 and gg_tmp.exists() and f"rm {gg_tmp}" in err, err


def test_overwrite_through_a_symlink_replaces_the_target_and_keeps_the_link(run_copy, tmp_path, capsys):
    "An output given as a link is written through, for every command that uses check_output: export --to hf, --to gguf, train --out, report. The link stays a link to the new contents."
    ck = run_copy / "best.safetensors"
    real_hf, real_gg = tmp_path / "v1" / "hf", tmp_path / "v1" / "m.gguf"
    assert run(["export", ck, "--to", "hf", real_hf], capsys)[0] == 0 and run(["export", ck, "--to", "gguf", real_gg], capsys)[0] == 0
    link_hf, link_gg = tmp_path / "current", tmp_path / "current.gguf"
    link_hf.symlink_to(real_hf, target_is_directory=True); link_gg.symlink_to(real_gg)
    before_hf = (real_hf / "model.safetensors").stat().st_mtime_ns
    code, out, err = run(["export", ck, "--to", "hf", link_hf, "--overwrite"], capsys)
    assert code == 0 and f"through the link {link_hf}" in out, err
    assert link_hf.is_symlink() and Path(os.readlink(link_hf)) == real_hf and C.export_marker(real_hf)["kind"] == "hf"
    assert (real_hf / "model.safetensors").stat().st_mtime_ns >= before_hf and sorted(os.listdir(tmp_path / "v1")) == ["hf", "m.gguf"]
    code, out, err = run(["export", ck, "--to", "gguf", link_gg, "--overwrite"], capsys)
    assert code == 0 and link_gg.is_symlink() and Path(os.readlink(link_gg)) == real_gg and C.export_marker(real_gg), err
    link_run = tmp_path / "myrun"; link_run.symlink_to(run_copy, target_is_directory=True)
    code, _, err = run(["train", "--max", "300", "--steps", "3", "--arch", "llama", "--out", link_run, "--overwrite", *SMALL], capsys)
    assert code == 0 and link_run.is_symlink() and load_checkpoint(run_copy).meta["step"] <= 3, err
    report = run_copy / "report.html"
    (tmp_path / "r.html").write_bytes(report.read_bytes()); report.unlink(); report.symlink_to(tmp_path / "r.html")
    assert run(["report", link_run], capsys)[0] == 0 and report.is_symlink() and b"<title>Mint report:" in (tmp_path / "r.html").read_bytes()


@pytest.mark.parametrize("to,name", [("hf", "hf"), ("gguf", "m.gguf")])
@pytest.mark.parametrize("point", ["renamed", "dir_synced"])
def test_ctrl_c_after_the_export_is_complete_exits_0(run_copy, tmp_path, capsys, to, name, point):
    "A Ctrl-C that lands after the final rename: the export is whole, the command says so and exits 0; one before it exits 130 and leaves nothing."
    ck, out = run_copy / "best.safetensors", tmp_path / "o" / name
    if to == "hf" and point == "dir_synced": point = "renamed"          # a folder's swap has one point after the rename
    def ctrl_c(pt, path):
        if Path(path).name == name and pt == point: raise KeyboardInterrupt
    C.fault_hook = ctrl_c
    try: code, stdout, err = run(["export", ck, "--to", to, out], capsys)
    finally: C.fault_hook = None
    assert code == 0 and "interrupted after the export was complete" in err and "exported" in stdout, err
    assert C.export_marker(out)["kind"] == to and sorted(os.listdir(out.parent)) == [name]
    def early(pt, path):
        if pt == "wrote" and Path(path).name in ("model.safetensors", "m.gguf"): raise KeyboardInterrupt
    C.fault_hook = early
    try: code, _, err = run(["export", ck, "--to", to, tmp_path / "p" / name], capsys)
    finally: C.fault_hook = None
    assert code == 130 and err.strip().splitlines()[-1] == "mint: interrupted", err
    assert os.listdir(tmp_path / "p") == []
