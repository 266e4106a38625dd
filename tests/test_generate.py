"""Generation from the command line, as a user runs it: `mint generate` and `mint chat` in subprocesses on a tiny trained
checkpoint — every temperature > 0 well defined (tiny ones are greedy, not a crash or random text), and a chat read
from a pipe ends its transcript with a newline."""
import os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]


def mint(*args, stdin=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", "import sys; from mint.cli import main; sys.exit(main(sys.argv[1:]))", *map(str, args)],
                          cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def ckpt(trained):
    return trained("llama", "char").path


def test_generate_tiny_temperatures_are_greedy(ckpt, capsys):
    "`mint generate --temperature T` for T from 1e-300 down to the smallest double prints the greedy text (1e-320 and 5e-324 once crashed with a zero-size reduction, 1e-310 printed random text). One real process for the greedy text, the rest in this one (`main`), to keep the test line short."
    from mint.cli import main
    args = lambda t, seed: ["generate", "--ckpt", str(ckpt), "--prompt", "中国", "--max-new-tokens", "20", "--temperature", t,
                            "--seed", str(seed), "--device", "cpu"]
    greedy = mint(*args("0", 0))
    assert greedy.returncode == 0, greedy.stderr
    capsys.readouterr()
    for t in ("1e-300", "1e-308", "1e-310", "1e-320", "5e-324"):
        for seed in (0, 1):
            code = main(args(t, seed))
            out = capsys.readouterr()
            assert (code, out.out) == (0, greedy.stdout), (t, seed, out.out, out.err)


def test_chat_tiny_temperature_and_piped_stdin(ckpt):
    "`mint chat --temperature 1e-320` answers (once: '(skipped: zero-size array…)'); read from a pipe, each line read follows its prompt and the output ends with a newline, also after 'quit'."
    for tail in ("quit\n", ""):                                        # 'quit', or the end of the input
        r = mint("chat", "--ckpt", ckpt, "--temperature", "1e-320", "--device", "cpu", stdin="你好\n今天\n" + tail)
        assert r.returncode == 0, r.stderr
        assert "skipped" not in r.stdout and r.stdout.count("Mint: ") == 2, r.stdout
        assert "你: 你好\nMint: " in r.stdout and r.stdout.endswith("\n"), repr(r.stdout[-40:])
        if tail: assert r.stdout.endswith("你: quit\n"), repr(r.stdout[-40:])
