"""The training report end to end: `mint train` writes it next to the checkpoint (also when a run stops early),
`mint report RUN` rebuilds it, it references nothing outside itself; `mint.fit` returns a usable `Run`."""
import json
from pathlib import Path
import numpy as np
from mint.cli import main
from mint.report import external_references, write_report
from mint.pipeline import fit, Run

SMALL = ["--preset", "tiny", "--batch-size", "4", "--seq-len", "16", "--eval-every", "5", "--no-progress"]


def test_train_writes_a_self_contained_report_and_mint_report_rebuilds_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--max", "300", "--steps", "10", "--out", str(out), *SMALL]) == 0
    printed = capsys.readouterr().out
    report = out / "report.html"
    assert f"report: {report}" in printed
    page = report.read_text(encoding="utf-8")
    assert external_references(page) == []
    for s in ("best validation loss", "perplexity", "tokens/s", "<svg", "Parameters per component", "lm_head.weight",
              "Samples", "train_samples", "People's Daily", "<th>lr</th><td>0.003</td>", "<th>seq_len</th><td>16</td>",
              "<th>eval_batches</th><td>all</td>"):
        assert s in page, s
    assert "<td>None</td>" not in page
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["steps"] == 10 and summary["train_samples"] + summary["val_samples"] == 300
    b = summary["bits"]                               # the report shows the loss in comparable units beside its floors
    for v in (b["bits_per_byte"], b["unigram_bits_per_byte"], b["lzma_bits_per_byte"]):
        assert f"{v:,.4f}" in page, v
    assert "Validation in comparable units" in page and "bits/byte" in page
    report.unlink()
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(report) and report.exists()


def test_a_run_stopped_early_still_gets_its_report(tmp_path, capsys):
    out = tmp_path / "stopped"
    assert main(["train", "--max", "300", "--steps", "500", "--time-limit", "0.0001", "--out", str(out), *SMALL]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "time limit" in page and external_references(page) == []


def test_mint_report_on_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "not a finished mint run folder" in err and len(err.strip().splitlines()) == 1


def test_fit_returns_a_run_ready_for_the_next_cell(tmp_path):
    run = fit(data="peoples_daily", preset="tiny", steps=6, batch_size=4, seq_len=16, max_samples=200, eval_every=3,
              out=tmp_path / "fit", live=False, log=lambda s: None)
    assert isinstance(run, Run) and run.history["step"] == list(range(1, 7)) and len(run.history["val_loss"]) == 2
    assert run.params.dtype == np.float32 and run.config.vocab_size == len(run.vocab)
    assert isinstance(run.generate("中国", max_new_tokens=5, seed=0), str)
    assert isinstance(run.chat(seed=0).ask("中国"), str)
    fig = run.plot()
    assert len(fig.axes) == 2 and list(fig.axes[0].lines[0].get_ydata()) == run.history["loss"]
    assert Run.load(run.dir).meta == run.meta and run.report_path.exists()
