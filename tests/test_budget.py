"mint train --budget: the schedule is fitted to the budget and the run ends inside it."
import json, math, time
import pytest
from mint.budget import parse_budget, plan_steps
from mint.cli import main
from mint.train import load_train_state


def test_parse_and_plan():
    assert [parse_budget(x) for x in ("5m", "90s", "1.5h", "2")] == [300, 90, 5400, 120]
    for bad in ("0m", "-1m", "5 minutes", "m"):
        with pytest.raises(ValueError, match="--budget"): parse_budget(bad)
    cost = lambda S, e, b, V, ts, tv: S * ts + (max(math.ceil(S / e) - 1, 0) * b + V) * tv
    for args in [(300, 0.5, 0.1, 50, 16, 80), (60, 0.01, 0.2, 7, 3, 40), (10, 2.0, 1.0, 5, 2, 20)]:
        left, ts, tv, e, b, V = args
        S = plan_steps(*args)
        assert S == 0 or cost(S, e, b, V, ts, tv) <= 0.9 * left
        assert cost(S + 1, e, b, V, ts, tv) > 0.9 * left


def test_cli_rejects_conflicts(capsys):
    assert main(["train", "--budget", "5m", "--steps", "10"]) == 1
    assert "leave out --steps" in capsys.readouterr().err
    assert main(["train", "--budget", "soon"]) == 2
    assert "--budget 'soon'" in capsys.readouterr().err


def test_budget_run_fits(tmp_path, capsys):
    f = tmp_path / "news.txt"
    f.write_text("\n".join(f"中国人民银行今天宣布第{i}号通知。" for i in range(300)), encoding="utf-8")
    out = tmp_path / "run"
    t = time.perf_counter()
    assert main(["train", "--data", str(f), "--preset", "tiny", "--budget", "40s", "--batch-size", "4",
                 "--device", "cpu", "--no-progress", "--out", str(out)]) == 0
    err = capsys.readouterr()
    st = load_train_state(out)
    assert st.step == st.tcfg.steps >= 1                  # the schedule it planned, all done
    assert "steps fit" in err.out + err.err and "bits/byte" in err.out + err.err
    assert time.perf_counter() - t < 40 + 30             # training inside the budget (+ data loading and the report)
