"""The plain functions under the notebooks' widgets, called directly; and each widget builds without a front end."""
import numpy as np
import pytest
from mint.core import ModelConfig, token_label, cjk_fonts
from mint.vocab import Vocab
from mint.model import init_params
from mint.matmul import gemm_playground, gemm_summary, gemm_widget
from mint.core import cdiv
from mint.loss import norm_playground, plot_norm_playground, norm_widget, softmax_naive, softmax_stable
from mint.generate import sampling_stages, sample_next, allowed_logits, sampling_playground, sampling_widget, NEVER_SAMPLED
from mint.model import attention_maps, plot_attention, attention_widget


@pytest.fixture(scope="module")
def model():
    voc = Vocab.build(["中国人民银行今天宣布新的利率"], min_count=1)
    cfg = ModelConfig(vocab_size=len(voc), d_model=16, n_heads=2, n_layers=2, max_seq_len=16)
    return init_params(cfg, seed=0), cfg, voc


def test_gemm_playground_checks_against_numpy():
    for tile in (4, 8, 16):
        r = gemm_playground(9, 21, 11, tile=tile)
        assert r["rel_error"] < 1e-5 and r["block"] == (tile, tile) and r["grid"] == (cdiv(11, tile), cdiv(9, tile))
        assert r["seconds"] > 0 and r["gflops"] == pytest.approx(2 * 9 * 11 * 21 / r["seconds"] / 1e9)
        assert f"tile {tile}" in gemm_summary(r)


def test_softmax_overflow_and_rmsnorm_scale():
    assert not norm_playground(1.0)["overflow"] and norm_playground(200.0)["overflow"]
    z = np.array([100.0, 0.0], np.float32)
    assert np.isnan(softmax_naive(z)).any() and softmax_stable(z) == pytest.approx([1.0, 0.0])
    np.testing.assert_allclose(norm_playground(0.5)["rmsnorm"], norm_playground(500.0)["rmsnorm"], rtol=1e-5, atol=1e-6)
    assert len(plot_norm_playground(norm_playground(200.0)).axes) == 3


def test_sampling_stages_are_what_the_stream_draws():
    "`stream` samples with `sample_next(allowed_logits(logits), ...)`: the last stage is that distribution."
    rng = np.random.default_rng(1)
    z = rng.standard_normal(40) * 2
    for settings in [(0.8, 10, 0.9), (1.5, 0, 0.6), (0.3, 5, 1.0)]:
        final = sampling_stages(z, *settings)[-1][1]
        draws = np.bincount([sample_next(allowed_logits(z), *settings, rng=rng) for _ in range(20000)], minlength=40) / 20000
        assert np.abs(draws - final).max() < 0.015
        assert final[list(NEVER_SAMPLED)].sum() == 0


def test_sampling_playground_on_a_model(model):
    fig, text = sampling_playground(*model, "中国", temperature=1.0, top_k=5, top_p=0.9, max_new_tokens=5)
    assert len(fig.axes) == 4 and isinstance(text, str) and len(text) <= 5


def test_attention_maps_are_causal_distributions(model):
    toks, maps = attention_maps(*model, "中国人民")
    assert toks == ["<eos>", "中", "国", "人", "民"] and maps.shape == (2, 2, 5, 5)
    np.testing.assert_allclose(maps.sum(-1), 1.0, rtol=1e-5)
    assert np.triu(maps, 1).max() == 0
    assert len(plot_attention(toks, maps, layer=1).axes) == 2 + 1          # two heads and the colour bar


def test_widgets_build_without_a_front_end(model, capsys):
    for w in (gemm_widget(max_size=16), norm_widget(), sampling_widget(*model), attention_widget(*model)):
        assert type(w).__name__ == "VBox" and w.children


def test_token_labels():
    assert token_label("<eos>") == "<eos>"
    assert token_label("中") == ("中" if cjk_fonts() else "U+4E2D")
