"Data parallelism (mint.distributed) on the CPU: sharding, accumulation, two gloo ranks against one, the launcher's failure handling, and `mint train --ranks 2` end to end."
import importlib.util, itertools, json, subprocess, sys, textwrap, time
from pathlib import Path
import numpy as np
import pytest
from mint.core import ModelConfig, rel_error
from mint.data import Batch
from mint.model import init_params
from mint.train import TrainConfig, train
from mint.vocab import Vocab
from mint.cli import main
from mint import distributed as dist

HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="the CPU collective is torch.distributed's gloo: pip install torch")
SMALL = ["--preset", "tiny", "--batch-size", "4", "--seq-len", "16", "--eval-every", "5", "--no-progress", "--device", "cpu"]

VOC = Vocab.build(["中国人民银行今天宣布"], min_count=1)
CFG = ModelConfig(vocab_size=len(VOC), d_model=16, n_heads=2, n_layers=1, max_seq_len=8)
TC = TrainConfig(steps=10, batch_size=8, seq_len=8, lr=1e-2, eval_every=5)


def uneven_batches(seed=5, B=8, T=8):
    "Batches whose rows count 1..T tokens: shards of one batch count different numbers of tokens."
    rng = np.random.default_rng(seed)
    while True:
        n = rng.integers(1, T + 1, B)
        yield Batch(rng.integers(6, CFG.vocab_size, (B, T)).astype(np.int32), rng.integers(6, CFG.vocab_size, (B, T)).astype(np.int32),
                    (np.arange(T)[None, :] < n[:, None]).astype(np.float32), np.tile(np.arange(T, dtype=np.int32), (B, 1)))


VAL = list(itertools.islice(uneven_batches(9), 2))


def run(coll=None, grad_accum=1, plain=False):
    p = init_params(CFG, seed=0)
    if plain: r = train(p, CFG, TC, uneven_batches(), VAL, VOC, progress=False)
    else: r = dist.train_parallel(p, CFG, TC, uneven_batches(), VAL, VOC, progress=False, grad_accum=grad_accum, coll=coll)
    return r, p


@pytest.fixture(scope="module")
def plain():
    return run(plain=True)


def max_rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.abs(b)))


# ---- the split of a global batch ----

def test_shards_cover_the_batch_in_order():
    b = next(uneven_batches())
    for W, K in [(1, 1), (2, 1), (2, 2), (4, 2), (8, 1)]:
        pieces = [p for r in range(W) for p in dist.shard(b, W, r, K)]
        assert len(pieces) == W * K and all(p.input_ids.shape == (8 // (W * K), 8) for p in pieces)
        np.testing.assert_array_equal(np.concatenate([p.input_ids for p in pieces]), b.input_ids)
        assert abs(sum(s for r in range(W) for s in dist.token_shares(b, dist.shard(b, W, r, K))) - 1) < 1e-12


@pytest.mark.parametrize("B,W,K,msg", [(30, 4, 2, "--batch-size 30 does not split into --gpus 4 × --grad-accum 2 = 8"),
                                       (6, 4, 1, "use a multiple of 4 (e.g. 4 or 8)"), (8, 0, 1, "--gpus must be a positive integer"),
                                       (8, 2, 0, "--grad-accum must be a positive integer")])
def test_bad_split_is_a_clear_error(B, W, K, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        dist.micro_batch_size(B, W, K)


def test_cli_bad_split_fails_before_starting_ranks(tmp_path, capsys):
    t0 = time.perf_counter()
    code = main(["train", "--max", "50", "--steps", "2", "--out", str(tmp_path / "r"), *SMALL[:2], "--batch-size", "6",
                 "--ranks", "4", "--device", "cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "--batch-size 6 does not split into --gpus 4" in err[0]
    assert time.perf_counter() - t0 < 5 and not (tmp_path / "r").exists()
    code = main(["train", "--gpus", "2", "--device", "cpu", "--out", str(tmp_path / "r")])
    assert code == 1 and "use --ranks N for CPU processes" in capsys.readouterr().err


# ---- one process: the data-parallel path is the plain path; micro-batches sum to the batch ----

def test_one_rank_is_the_plain_run_bit_for_bit(plain):
    (r_plain, p_plain), (r_one, p_one) = plain, run()
    np.testing.assert_array_equal(p_one, p_plain)
    assert r_one.history["loss"] == [float(np.float32(l)) for l in r_plain.history["loss"]]   # logged through float32
    assert r_one.history["val_loss"] == r_plain.history["val_loss"]


@pytest.mark.parametrize("K", [2, 4])
def test_gradient_accumulation_equals_one_batch(plain, K):
    (r_plain, p_plain), (r_acc, p_acc) = plain, run(grad_accum=K)
    assert max_rel(r_acc.history["loss"], r_plain.history["loss"]) < 1e-5
    assert rel_error(p_acc, p_plain) < 1e-4      # Adam divides by sqrt(v): tiny gradients' rounding moves weights most (1.3e-5 at K=4, numpy 2.4.6)
    assert abs(r_acc.last_val - r_plain.last_val) < 1e-5 * r_plain.last_val


# ---- two gloo ranks (threads of this process, a real TCP collective) ----

@needs_torch
@pytest.mark.parametrize("K", [1, 2])
def test_two_ranks_equal_one_rank(plain, K):
    r_plain, p_plain = plain
    (r0, p0), (r1, p1) = dist.run_ranks(lambda r, W, port: run(dist.GlooCollective(r, W, "127.0.0.1", port, timeout=30), K), 2)
    assert max_rel(r0.history["loss"], r_plain.history["loss"]) < 1e-5, (r0.history["loss"], r_plain.history["loss"])
    assert rel_error(p0, p_plain) < 1e-4       # as above
    assert abs(r0.last_val - r_plain.last_val) < 1e-5 * r_plain.last_val
    np.testing.assert_array_equal(p0, p1)                                  # the ranks hold the same weights, exactly
    assert r0.history["loss"] == r1.history["loss"] and len(r0.history["allreduce_ms"]) == TC.steps


@needs_torch
def test_time_limit_stops_every_rank_at_the_same_step():
    "Rank 1 alone is past its time limit: the vote stops both ranks after the same step (no rank left waiting)."
    def body(r, W, port):
        c = dist.GlooCollective(r, W, "127.0.0.1", port, timeout=30)
        eng = dist.ParallelCpuEngine(init_params(CFG, seed=0), CFG, TC, c)
        return [eng.agree(r == 1 and s >= 2) for s in range(4)]
    assert dist.run_ranks(body, 2) == [[False, False, True, True]] * 2


@needs_torch
def test_a_silent_rank_ends_in_a_timeout_naming_the_waiting_rank():
    def body(r, W, port):
        c = dist.GlooCollective(r, W, "127.0.0.1", port, timeout=1)
        c.barrier()
        if r == 1: time.sleep(3); return None                             # stops answering, connection still open
        t0 = time.perf_counter()
        with pytest.raises(dist.CollectiveError) as e: c.all_reduce(np.ones(4, np.float32))
        return str(e.value), time.perf_counter() - t0
    (msg, secs), _ = dist.run_ranks(body, 2)
    assert msg.startswith("rank 0: all-reduce failed (Timed out") and secs < 2.5


# ---- the launcher: processes, failures, output ----

HELPERS = '''
import os, sys, time
from mint.distributed import CollectiveError
def rank_fails(marker):
    "Rank 1 fails; rank 0 then loses its peer (as in an all-reduce) and stops with a CollectiveError."
    r = int(os.environ["RANK"])
    if r == 1: open(marker, "w").close(); raise ValueError("injected failure")
    for _ in range(3000):
        if os.path.exists(marker): break
        time.sleep(0.01)
    time.sleep(0.05)
    raise CollectiveError(f"rank {r}: all-reduce failed (connection closed by peer)")
def rank_hangs():
    r = int(os.environ["RANK"])
    if r == 0: time.sleep(0.5); raise CollectiveError("rank 0: all-reduce failed (not done after 1 s)")
    time.sleep(600)
def ranks_report(x):
    return dict(x=x, rank=int(os.environ["RANK"]), world=int(os.environ["WORLD_SIZE"]), nvls=os.environ["NCCL_NVLS_ENABLE"])
'''


@pytest.fixture
def helpers(tmp_path, monkeypatch):
    (tmp_path / "mint_launch_helpers.py").write_text(textwrap.dedent(HELPERS))
    monkeypatch.syspath_prepend(str(tmp_path))                            # the launcher hands sys.path to the ranks
    import importlib
    return importlib.import_module("mint_launch_helpers")


def test_launch_returns_rank0_result(helpers):
    assert dist.launch(helpers.ranks_report, dict(x=3), 2) == dict(x=3, rank=0, world=2, nvls="0")


def test_a_failing_rank_is_named_not_the_rank_that_lost_it(helpers, tmp_path):
    with pytest.raises(dist.RankFailed) as e:
        dist.launch(helpers.rank_fails, dict(marker=str(tmp_path / "failed")), 2)
    assert str(e.value) == "rank 1 failed (exit code 1); rank(s) 0 stopped with it"


def test_a_hanging_rank_is_stopped_after_the_others_timeout(helpers):
    t0 = time.perf_counter()
    with pytest.raises(dist.RankFailed, match=r"rank 0 failed \(exit code 75: a collective failed\); stopped the other rank\(s\) 1"):
        dist.launch(helpers.rank_hangs, {}, 2)
    assert time.perf_counter() - t0 < 60                                # rank 1 sleeps 600 s: it was stopped


def test_no_nccl_is_a_clear_error(monkeypatch):
    for m in ("nccl", "nccl.core", "cupy", "cupy.cuda"): monkeypatch.setitem(sys.modules, m, None)
    with pytest.raises(RuntimeError, match=r"neither works here .*pip install nccl4py==0\.6\.0"):
        dist.nccl_binding()
    with pytest.raises(ValueError, match="MINT_NCCL must be one of"):
        dist.nccl_binding("mpi")


def test_launch_refuses_functions_ranks_cannot_import():
    with pytest.raises(ValueError, match="importable module"):
        dist.launch(lambda: 0, {}, 2)


def test_import_mint_needs_no_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import mint, mint.distributed, mint.pipeline, mint.cli\n"
            "try: mint.distributed.GlooCollective(0, 2)\n"
            "except RuntimeError as e: print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "pip install torch" in out.stdout, out.stderr


# ---- mint train --ranks 2 --device cpu, end to end ----

@needs_torch
def test_cli_two_cpu_ranks_equal_one_and_only_rank0_writes(tmp_path, capsys):
    args = ["train", "--max", "400", "--steps", "8", *SMALL]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    work = tmp_path / "two_cwd"; work.mkdir()
    cli = "import sys; from mint.cli import main; sys.exit(main(sys.argv[1:]))"
    p = subprocess.run([sys.executable, "-c", cli, *args, "--ranks", "2", "--out", str(tmp_path / "two")], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "data parallel: 2 rank(s) × 1 micro-batch(es) per step; all-reduce" in p.stdout
    assert p.stdout.count("validation loss") == 1                       # rank 0 speaks for the run
    one, two = (json.loads((tmp_path / d / "history.json").read_text()) for d in ("one", "two"))
    assert max_rel(two["loss"], one["loss"]) < 1e-5 and max_rel(two["val_loss"], one["val_loss"]) < 1e-5
    assert sorted(f.name for f in (tmp_path / "two").iterdir()) == sorted(f.name for f in (tmp_path / "one").iterdir())
    assert list(work.iterdir()) == []                                   # nothing written anywhere else


@needs_torch
def test_resume_on_another_number_of_ranks(tmp_path):
    "A 1-rank run stopped (SIGINT) after step 4 and resumed with --ranks 2 ends with the losses of a 1-rank run that never stopped."
    args = ["train", "--max", "400", "--steps", "8", *SMALL]
    assert main([*args, "--out", str(tmp_path / "full")]) == 0
    stop = ("import os, signal, mint.train as T\n_s = T.Engine.step\n"
            "def step(self, b, lr, i):\n    loss = _s(self, b, lr, i)\n    if i == 4: signal.raise_signal(signal.SIGINT)\n    return loss\n"
            "T.Engine.step = step\n")
    cli = "import sys\n{}from mint.cli import main\nsys.exit(main(sys.argv[1:]))"
    p = subprocess.run([sys.executable, "-c", cli.format(stop), *args, "--out", str(tmp_path / "cut")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 130, p.stderr
    p = subprocess.run([sys.executable, "-c", cli.format(""), "train", "--resume", str(tmp_path / "cut"), "--ranks", "2",
                        "--no-progress"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "data parallel: 2" in p.stdout and "resuming" in p.stdout
    full, cut = (json.loads((tmp_path / d / "history.json").read_text()) for d in ("full", "cut"))
    assert cut["step"] == full["step"] == list(range(1, 9))
    val = dict(zip(cut["val_step"], cut["val_loss"]))                   # the stop validated at step 4 too
    assert max_rel(cut["loss"], full["loss"]) < 1e-5 and max_rel([val[s] for s in full["val_step"]], full["val_loss"]) < 1e-5
