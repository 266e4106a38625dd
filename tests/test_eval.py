"mint eval on a real run folder: the run's own validation loss comes back, in three units, beside the two floors."
import json, math
import pytest
from mint.cli import main
from mint.checkpoint import load_checkpoint

LINES = ["中国人民银行今天宣布降低存款利率。", "经济建设取得了巨大成就，人民生活水平不断提高。", "新华社北京一月一日电。"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    f = d / "news.txt"
    f.write_text("\n".join(LINES[i % 3] + str(i) for i in range(300)), encoding="utf-8")
    out = d / "run"
    assert main(["train", "--data", str(f), "--preset", "tiny", "--steps", "3", "--eval-every", "3", "--batch-size", "4",
                 "--device", "cpu", "--no-progress", "--out", str(out)]) == 0
    return out, f


def test_eval_matches_the_run(run, capsys):
    out, f = run
    capsys.readouterr()
    assert main(["eval", str(out), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["nats_per_token"] == pytest.approx(load_checkpoint(out).meta["val_loss"], rel=1e-5)
    assert r["bits_per_char"] * r["n_chars"] == pytest.approx(r["nats_per_token"] * r["n_targets"] / math.log(2), rel=1e-9)
    assert r["n_bytes"] > 2.5 * r["n_chars"]                      # Chinese: 3 bytes per character, digits 1
    assert 0 < r["lzma_bits_per_byte"] < 8 and 0 < r["unigram_bits_per_byte"] < 8


def test_eval_on_other_data_and_errors(run, capsys):
    out, f = run
    assert main(["eval", str(out), "--data", str(f)]) == 0
    text = capsys.readouterr().out
    assert "bits/byte" in text and "lzma -9e" in text and "all of" in text
    assert main(["eval", str(out / "nothing")]) == 1
    assert "nothing" in capsys.readouterr().err
