"Bad inputs to mint.vocab / mint.data: each must fail with a one-line error that says what is wrong and where."
import numpy as np
import pytest

from mint.vocab import Vocab
from mint.data import (encode_corpus, load_chat_yaml, load_chatterbot_chinese, load_peoples_daily, split_tail,
                       chat_batches, chat_eval_batches, lm_batches, lm_eval_batches)


def one_line_error(exc_type, fn, *must_contain):
    "Call `fn`, expect `exc_type`; check the message is one line and contains each of `must_contain`."
    with pytest.raises(exc_type) as ei:
        fn()
    msg = str(ei.value)
    assert "\n" not in msg, f"multi-line error: {msg!r}"
    for s in must_contain:
        assert s in msg, f"{s!r} not in error {msg!r}"
    return msg


@pytest.fixture
def vocab():
    return Vocab.build(["我爱中文。", "中文很美。我爱"])


# --- empty corpus -----------------------------------------------------------------------------------
def test_empty_corpus_lm(vocab):
    one_line_error(ValueError, lambda: encode_corpus([], vocab), "encode_corpus", "empty corpus")
    one_line_error(ValueError, lambda: encode_corpus(["", ""], vocab), "empty corpus", "2 texts")


def test_empty_corpus_chat(vocab):
    one_line_error(ValueError, lambda: chat_batches([], vocab, 2, 8, 0), "chat data", "empty corpus")
    one_line_error(ValueError, lambda: chat_eval_batches([], vocab, 2, 8), "empty corpus")


def test_empty_corpus_vocab():
    one_line_error(ValueError, lambda: Vocab.build([]), "Vocab.build", "empty")
    one_line_error(ValueError, lambda: Vocab.build(["  \n\t"]), "whitespace and control characters aside", "use more text")


def test_empty_chat_dir(tmp_path):
    one_line_error(FileNotFoundError, lambda: load_chatterbot_chinese(tmp_path), str(tmp_path), "*.yml")


def test_too_few_samples_for_split():
    one_line_error(ValueError, lambda: split_tail([]), "needs at least 2", "use more text")
    one_line_error(ValueError, lambda: split_tail(["a"]), "1 sample(s)")
    one_line_error(ValueError, lambda: split_tail(["a", "b"], 1.5), "val_frac", "1.5")


def test_stream_too_short():
    one_line_error(ValueError, lambda: next(lm_batches(np.arange(5), 2, 8, 0)), "5 tokens", "--seq-len")
    one_line_error(ValueError, lambda: next(lm_eval_batches(np.arange(1), 2, 8)), "lm_eval_batches")


# --- malformed YAML -----------------------------------------------------------------------------------
def test_malformed_yaml_names_file_and_line(tmp_path):
    bad = tmp_path / "broken.yml"
    bad.write_text("categories:\n- x\nconversations:\n- - 你好\n  - 嗨: [\n", encoding="utf-8")
    msg = one_line_error(ValueError, lambda: load_chat_yaml(bad), "broken.yml:", "malformed YAML")
    line = int(msg.split("broken.yml:")[1].split(":")[0])
    assert 5 <= line <= 6
    (tmp_path / "a_good.yml").write_text("conversations:\n- - 你好\n  - 嗨\n", encoding="utf-8")
    one_line_error(ValueError, lambda: load_chatterbot_chinese(tmp_path), "broken.yml:", "malformed YAML")


def test_yaml_bad_structure(tmp_path):
    p = tmp_path / "c.yml"
    p.write_text("- just\n- a list\n", encoding="utf-8")
    one_line_error(ValueError, lambda: load_chat_yaml(p), "c.yml", "'conversations'")
    p.write_text("conversations:\n- - 你好\n- - a\n  - b\n", encoding="utf-8")
    one_line_error(ValueError, lambda: load_chat_yaml(p), "c.yml", "conversation 0")
    p.write_text("conversations:\n- - a\n  - b\n- - 你好\n  -\n", encoding="utf-8")
    one_line_error(ValueError, lambda: load_chat_yaml(p), "c.yml", "conversation 1, utterance 1")
    p.write_bytes(b"conversations:\n- - \xff\xfe\n  - b\n")
    one_line_error(ValueError, lambda: load_chat_yaml(p), "c.yml", "UTF-8")


def test_yaml_numbers_become_text(tmp_path):
    p = tmp_path / "n.yml"
    p.write_text("conversations:\n- - 1 + 1 等于几\n  - 2\n  - 对\n", encoding="utf-8")
    assert load_chat_yaml(p) == [("1 + 1 等于几", "2"), ("2", "对")]


# --- text with no characters in the vocabulary --------------------------------------------------------
def test_no_known_characters_lm(vocab):
    one_line_error(ValueError, lambda: encode_corpus(["hello", "world"], vocab),
                   "encode_corpus", "none of the 10 characters", "text 0", "'hello'")


def test_no_known_characters_chat(vocab):
    one_line_error(ValueError, lambda: chat_batches([("hi", "there")], vocab, 2, 8, 0),
                   "chat data", "none of the characters", "pair 0")


def test_bad_pair_is_named(vocab):
    one_line_error(ValueError, lambda: chat_batches([("我", "爱"), ("中文", "")], vocab, 2, 8, 0),
                   "pair 1", "empty reply")
    one_line_error(ValueError, lambda: chat_eval_batches([("我", "爱"), ("中文",)], vocab, 2, 8), "pair 1")


def test_missing_peoples_daily_file(tmp_path):
    one_line_error(FileNotFoundError, lambda: load_peoples_daily(path=tmp_path / "nope.txt"), "nope.txt")
    one_line_error(ValueError, lambda: load_peoples_daily(max_lines=-1), "max_lines")
