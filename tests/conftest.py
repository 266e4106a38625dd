"Shared fixtures: tiny checkpoints of each architecture and tokenizer, trained once per test session."
import pytest
from mint import data as D

ARCH_TOKENIZERS = [(a, t) for a in ("report", "llama", "qwen3") for t in ("char", "bpe")]


@pytest.fixture(scope="session")
def peoples_daily():
    "The first 500 lines of People's Daily: 400 to train on, the rest as unseen validation text."
    return D.load_peoples_daily(max_lines=500)


@pytest.fixture(scope="session")
def trained(tmp_path_factory, peoples_daily):
    "`trained(arch, tokenizer)` -> a loaded `Checkpoint`: the tiny preset trained 20 steps on 400 lines (made once per session)."
    from mint.pipeline import train_corpus
    from mint.train import TrainConfig
    from mint.checkpoint import load_checkpoint
    cache = {}
    def get(arch, tokenizer):
        if (arch, tokenizer) not in cache:
            out = tmp_path_factory.mktemp(f"{arch}-{tokenizer}")
            rep = train_corpus("peoples_daily", "tiny", TrainConfig(steps=20, batch_size=4, seq_len=32, eval_every=20, seed=0), out,
                               max_samples=400, device="cpu", progress=False, log=lambda *_: None, arch=arch,
                               tokenizer=tokenizer, vocab_size=800 if tokenizer == "bpe" else None)
            cache[arch, tokenizer] = load_checkpoint(rep["checkpoint"])
        return cache[arch, tokenizer]
    return get


def pytest_configure(config):
    """The signal tests press Ctrl-C as a terminal does, on a foreground job. Run as a background job of a script, pytest
    starts with SIGINT ignored, and every process it starts would inherit that (the real `mint` command takes SIGINT
    back at start; `python -c "...main()"` does not): put Python's own Ctrl-C handler back, as a foreground job has it."""
    import signal
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN: signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="also run the tests marked slow")


def pytest_collection_modifyitems(config, items):
    "Tests marked `slow` (pyproject's marker: long runs) are skipped unless --runslow."
    if config.getoption("--runslow"): return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords: item.add_marker(skip)
