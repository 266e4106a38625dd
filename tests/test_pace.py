"mint.train.Pace: the slow-run warning keeps its two durations distinguishable, and a --budget run's says what the budget does."
from mint.train import Pace, two_durations


def warnings(limit, steps, per_step, start=0, **kw):
    p, now, said = Pace(limit, start, steps, 0.0, **kw), 0.0, []
    for i in range(start + 1, steps + 1):
        now += per_step
        if (w := p.check(i, 256 * i, now)): said.append(w)
    return said


def test_durations_stay_apart():
    assert two_durations(18.4, 18.0) == ("18.4 s", "18.0 s")          # once "0.3 min ... 0.3 min"
    assert two_durations(100, 99.6) == ("100.0 s", "99.6 s") and two_durations(45.001, 45.0) == ("45.001 s", "45.000 s")
    assert two_durations(630, 540) == ("10.5 min", "9.0 min") and two_durations(9000, 7300) == ("2.5 h", "2.0 h")
    for a, b in [(18.44, 18.0), (125.0, 119.0), (61.0, 60.9)]:
        x, y = two_durations(a, b)
        assert x != y and x.split()[1] == y.split()[1], (x, y)


def test_short_limit_warning_in_seconds():
    (w,) = warnings(18.0, 1500, 0.0123)
    assert "about 18.5 s, more than the time limit of 18.0 s" in w and "min" not in w
    assert "Use fewer --steps or a longer --time-limit" in w


def test_budget_warning_names_the_replan_not_the_flags():
    (w,) = warnings(18.0, 1500, 0.0135, start=100, replanned=100)
    assert "re-planned at step 100" in w and "the time limit stops the run inside the budget" in w
    assert "about 19 s, more than its time limit of 18 s" in w and "Use fewer --steps" not in w and "--budget sets --steps and --time-limit itself" in w
