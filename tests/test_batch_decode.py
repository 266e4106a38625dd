"""The batched decode step on the device (issue 18): one launch of `cache_write_rows` and one of `attention_rows` per
layer for all the tokens of a step, each reading its cache row and position from int32 device arrays (a row < 0 is
padding), and a `BatchDecoder` on the device that pads a step to a bucket and replays that bucket's CUDA graph. Runs in
numba's CUDA simulator here (the same code runs on a GPU: `bench/batch_decode_check.py --device cuda`)."""
import numpy as np
import pytest

from mint.core import ModelConfig
from mint.flash_attention import attention_cached, attention_rows, cache_write, cache_write_rows
from mint.generate import BatchDecoder, Decoder, allowed_logits, bucket, sample_next
from mint.model import init_params
from numba import cuda


def test_batched_kernels_equal_rows_one_at_a_time():
    "Tokens of three rows at different entries, two consecutive ones of one row and a padding token: the batched write and attention give exactly (bit for bit) what one launch per token gives."
    rng = np.random.default_rng(0)
    R, S, H, hd = 3, 9, 3, 5                               # head_dim 5 over tiles of 4 entries: crossing tile edges
    rows, pos = np.array([1, 0, 0, -1, 2, 1], np.int32), np.array([8, 3, 4, 0, 0, 2], np.int32)
    kc, vc = (rng.standard_normal((R, S, H, hd)).astype(np.float32) for _ in range(2))
    new, q = (rng.standard_normal((len(rows), 1, H, hd)).astype(np.float32) for _ in range(2))
    batched = cuda.to_device(kc)
    cache_write_rows(cuda.to_device(new), batched, cuda.to_device(rows), cuda.to_device(pos))
    one = cuda.to_device(kc)
    for i in np.flatnonzero(rows >= 0): cache_write(cuda.to_device(new[i][None]), one[rows[i]:rows[i] + 1], int(pos[i]))
    np.testing.assert_array_equal(batched.copy_to_host(), one.copy_to_host())
    np.testing.assert_array_equal(batched.copy_to_host(), cache_write_rows(new, kc.copy(), rows, pos))   # = NumPy's
    vd = cuda.to_device(vc)
    out = attention_rows(cuda.to_device(q), batched, vd, cuda.to_device(rows), cuda.to_device(pos), tile=4).copy_to_host()
    for i, (r, p) in enumerate(zip(rows, pos)):
        if r < 0: np.testing.assert_array_equal(out[i], 0); continue
        alone = attention_cached(cuda.to_device(q[i][None]), batched[r:r + 1], vd[r:r + 1], int(p), tile=4).copy_to_host()[0]
        np.testing.assert_array_equal(out[i], alone)
    ref = attention_rows(q, batched.copy_to_host(), vc, rows, pos)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_buckets():
    assert [bucket(n, 80) for n in (1, 2, 3, 4, 5, 16, 17, 64, 65, 80)] == [1, 2, 4, 4, 8, 16, 32, 64, 80, 80]


@pytest.mark.slow
def test_device_batch_equals_a_decoder_per_sequence():
    "Three sequences of different lengths join at different steps, read their prompts in chunks beside the others' tokens and leave; on the device (buckets padded, graphs replayed) each gets the tokens and logits of its own Decoder, greedy and seeded."
    cfg = ModelConfig(vocab_size=40, d_model=8, n_heads=2, n_layers=1, max_seq_len=24)
    P = init_params(cfg, seed=0)
    P += np.random.default_rng(1).standard_normal(P.shape).astype(np.float32) * 0.3
    prompts, join, n = [[3, 7, 8, 9, 10], [3, 9], [3, 11, 12]], [0, 0, 2], [3, 5, 2]
    for temp in (0.0, 0.8):
        bd = BatchDecoder(P, cfg, slots=3, device="cuda", prefill=3)
        live, toks, zs, rngs = {}, [[] for _ in prompts], [[] for _ in prompts], {}
        for step in range(40):
            for i in range(len(prompts)):
                if join[i] == step: live[i], rngs[i] = bd.add(prompts[i]), np.random.default_rng(i)
            feeds = {}
            for i in list(live):
                if len(zs[i]) == len(toks[i]): continue
                toks[i].append(sample_next(allowed_logits(zs[i][-1]), temp, 50, 0.9, rngs[i]))
                if len(toks[i]) == n[i]: bd.remove(live.pop(i))
                else: feeds[live[i]] = toks[i][-1]
            if not live and step > max(join): break
            out = bd.step(feeds)
            for i, s in live.items():
                if s in out: zs[i].append(out[s])
        for i, p in enumerate(prompts):
            dec, rng, want, wz = Decoder(P, cfg, "cuda"), np.random.default_rng(i), [], []
            z = dec.feed(p)
            for _ in range(n[i]):
                wz.append(z); want.append(sample_next(allowed_logits(z), temp, 50, 0.9, rng))
                if len(want) < n[i]: z = dec.feed([want[-1]])
            assert toks[i] == want, (temp, i, toks[i], want)
            np.testing.assert_allclose(np.array(zs[i]), np.array(wz), rtol=1e-5, atol=1e-5)
