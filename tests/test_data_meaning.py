"""Data that does not mean what it says (issue 10, item 9): each class of the problem, on hand-made fixtures.

Fixtures: data/fixtures/formats/meaning/ (written by data/fixtures/formats/make_fixtures.py).
"""
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mint.text import INVALID, CorpusError, drop_invalid
from mint.formats import load_task
from mint import data as D

FIX = Path(__file__).resolve().parent.parent / "data" / "fixtures" / "formats"
MEAN = FIX / "meaning"


def all_text(corpus) -> str:
    return "".join(s if isinstance(s, str) else "".join(s) for s in corpus.samples)


# ---------------------------------------------------------------- invalid Unicode, wherever text enters

INVALID_SAMPLES = [("写一句话", "好的。"), ("表情", "笑脸\U0001F600"), ("非字符", "结束"), ("转义的反斜杠", "\\ud800 不是转义")]


@pytest.mark.parametrize("name", ["invalid_unicode.jsonl", "invalid_unicode.json"])
def test_invalid_unicode_removed_and_counted_in_json(name):
    c = load_task(MEAN / name)                           # JSON Lines (stdlib json) and a JSON array (ijson)
    assert c.samples == INVALID_SAMPLES                   # the valid pair and the escaped backslash stay
    assert c.dropped[INVALID] == 5 and f"dropped 5 {INVALID}" in c.summary()
    assert drop_invalid(all_text(c))[1] == 0


def test_invalid_unicode_removed_and_counted_in_text_and_wiki(tmp_path):
    t = load_task(MEAN / "invalid_unicode.txt")
    assert t.samples == ["第一行文本", "第二行文本"] and t.dropped[INVALID] == 3
    w = load_task(MEAN / "zhwiki_invalid.xml", cache_dir=tmp_path)
    assert w.samples == ["这是一个用来测试非字符的段落，它的长度超过二十个字符。"] and w.dropped[INVALID] == 1


def test_invalid_unicode_removed_and_counted_in_yaml_and_peoples_daily(tmp_path):
    y = tmp_path / "c.yml"
    y.write_text('conversations:\n- - "你好\\ufdd0"\n  - "嗨\\U0010ffff"\n', encoding="utf-8")
    d = Counter()
    assert D.load_chat_yaml(y, d) == [("你好", "嗨")] and d[INVALID] == 2
    p = tmp_path / "pd.txt"
    p.write_text("迈向/v  充满\ufffe/v\n\n希望/n\n", encoding="utf-8")
    d = Counter()
    assert D.load_peoples_daily(path=p, dropped=d) == ["迈向充满", "希望"]
    assert d == {INVALID: 1, "blank lines": 1}


# ---------------------------------------------------------------- every filter counts what it drops

def test_filters_count_blank_lines_overlong_and_empty_pairs(tmp_path, monkeypatch):
    import mint.records as R
    monkeypatch.setattr(R, "MAX_RECORD_CHARS", 40)
    p = tmp_path / "lm.txt"
    p.write_text("第一行\n\n   \n" + "长" * 50 + "\n第二行\n", encoding="utf-8")
    c = load_task(p)
    assert c.samples == ["第一行", "第二行"] and c.dropped["blank lines"] == 2
    assert (c.skipped, dict(c.skipped_by)) == (1, {"over-long": 1}) and "line 4: line longer than 40" in c.problems[0]
    a = tmp_path / "big.json"
    a.write_text('[{"instruction": "短", "output": "好"},\n {"instruction":\n  "' + "长" * 50 + '",\n  "output": "好"}]',
                 encoding="utf-8")                       # a record longer than the limit while it is read, line by line
    c = load_task(a)
    assert len(c) == 1 and dict(c.skipped_by) == {"over-long": 1} and c.problems == ["line 2 [1]: longer than 40 characters"]
    l = tmp_path / "lccc.json"
    l.write_text('[["你 好", "", "再 见", "好"]]', encoding="utf-8")
    c = load_task(l)
    assert c.samples == [("再见", "好")] and c.dropped["utterance pairs with an empty side"] == 2


def test_wiki_build_counts_pages_and_paragraphs_it_drops(tmp_path):
    c = load_task(FIX / "zhwiki_sample.xml", cache_dir=tmp_path)
    assert (c.dropped["redirect pages"], c.dropped["non-article pages"]) == (1, 1)
    assert c.dropped["paragraphs shorter than 20 characters"] >= 3         # "see also" list, a link line, the stub
    again = load_task(FIX / "zhwiki_sample.xml", cache_dir=tmp_path)
    assert again.samples == c.samples and "counted in the summary of the run that built it" in again.notes[1]


def test_split_counts_validation_duplicates():
    d = Counter()
    train, val = D.split_tail(["甲", "乙", "丙", "甲", "丁", "乙"], 0.5, d)
    assert (train, val) == (["甲", "乙", "丙"], ["丁"]) and d == {"validation samples left out because the same text is in the training part (they would test memory, not generalisation)": 2}


def test_skipped_records_are_counted_by_kind(tmp_path):
    c = load_task(FIX / "belle_bad.jsonl")
    assert dict(c.skipped_by) == {"wrong shape": 3, "bad JSON": 1, "empty": 1} and c.dropped["blank lines"] == 1
    assert "skipped by kind: 3 wrong shape, 1 bad JSON, 1 empty" in c.summary()
    p = tmp_path / "all_bad.jsonl"
    p.write_text('{"instruction": "只有指令"}\n{"instruction": "也没有输出"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"all_bad\.jsonl: no usable samples .*\n.*\n.*\n  skipped by kind: 2 wrong shape"):
        load_task(p)


# ---------------------------------------------------------------- QA answers that are not answers

def test_qa_sentinels_skipped_and_counted_by_kind():
    c = load_task(MEAN / "squad_v2.json")
    ctx = "黄河是中国第二长河，全长约五千四百六十四公里，发源于青海省巴颜喀拉山脉，注入渤海。"
    assert c.samples == [(ctx + "\n黄河发源于哪里？", "青海省巴颜喀拉山脉"), (ctx + "\n黄河全长多少？", "五千四百六十四公里")]
    assert dict(c.skipped_by) == {"unanswerable": 2, "placeholder answer": 3, "answer not in context": 1}
    assert "skipped by kind: 3 placeholder answer, 2 unanswerable, 1 answer not in context" in c.summary()
    assert all("plausible" not in a and "中国" != a for _, a in c.samples)      # SQuAD 2.0's plausible answers never train


def test_qa_file_without_a_usable_answer_is_an_error():
    with pytest.raises(CorpusError, match=r"qa_no_usable\.json: no usable samples \(format qa; skipped 2 record\(s\)\)"
                                          r"(.|\n)*skipped by kind: 2 placeholder answer"):
        load_task(MEAN / "qa_no_usable.json")


def test_qa_hugging_face_column_answers_checked_too():
    from mint.records import qa_samples, BadRecord
    ctx = "故宫位于北京市中心。"
    ok = {"question": "故宫在哪？", "answers": {"text": ["上海", "北京市中心"], "answer_start": [-1, 4]}}
    assert qa_samples((ctx, ok)) == [(ctx + "\n故宫在哪？", "北京市中心")]
    with pytest.raises(BadRecord) as e:
        qa_samples((ctx, {"question": "故宫在哪？", "answers": {"text": [""], "answer_start": [-1]}}))
    assert e.value.kind == "placeholder answer"


# ---------------------------------------------------------------- public schema variants: read, or rejected by name

def test_belle_conversation_variants_are_read():
    c = load_task(MEAN / "belle_conversations.jsonl")
    assert (c.fmt, c.kind) == ("turns", "chat")
    assert c.samples == [("你好", "你好！有什么可以帮你的吗？"), ("今天星期几？", "今天是星期三。"), ("讲个笑话", "好的，从前有座山……")]
    assert c.skipped == 1 and "turn 0 has role 'narrator'; expected 'from'/'role' human/user, gpt/assistant" in c.problems[0]
    m = load_task(MEAN / "messages.json")
    assert m.samples == [("一加一等于几？", "一加一等于二。")] and m.dropped["system turns"] == 1
    f = load_task(MEAN / "firefly.jsonl")
    assert f.samples == [("早上好", "早上好！"), ("吃了吗", "吃过了。")]


def test_lccc_variants_are_read():
    s = load_task(MEAN / "lccc_split.json")                       # {"train": [...], "valid": [...], "test": [...]}
    assert (s.fmt, s.samples) == ("lccc", [("你好呀", "你好"), ("吃了吗", "吃了")])
    assert "read the 'train' list; ignored valid, test" in s.notes
    d = load_task(MEAN / "lccc_dialog.jsonl")                     # {"dialog": [...]}, with and without spaces
    assert d.samples == [("火锅我在重庆吃了七八顿", "哈哈！那我的嘴巴要烂掉"), ("今天天气不错", "是啊，适合出去玩")]


def test_cmrc_flat_rows_are_read():
    c = load_task(MEAN / "cmrc_rows.jsonl")
    assert (c.fmt, c.samples[0][1]) == ("qa", "紫禁城") and c.samples[0][0].endswith("\n故宫旧称什么？")


@pytest.mark.parametrize("name", ["unknown_shape.jsonl", "numbers.json"])
def test_unknown_record_shapes_are_rejected_naming_the_shapes_expected(name):
    with pytest.raises(CorpusError) as e:
        load_task(MEAN / name)
    msg = str(e.value)
    assert f"{name}: no usable samples (format not recognised" in msg and "unrecognised record of type" in msg
    assert "expected records of one of these shapes" in msg and '{"instruction", "input"?, "output"} (Belle)' in msg
    assert "format lccc" not in msg                                # a list of numbers is not guessed to be LCCC


def test_json_object_without_a_known_list_is_rejected_naming_the_shape():
    with pytest.raises(CorpusError, match=r"object_rows\.json: a JSON object without a 'data' list \(keys: version, rows\); "
                                          r"expected a SQuAD/CMRC2018 object .* or an LCCC split"):
        load_task(MEAN / "object_rows.json")


def test_first_record_decides_and_later_other_shapes_are_named(tmp_path):
    p = tmp_path / "mixed.jsonl"
    p.write_text('{"instruction": "问", "output": "答"}\n{"text": "一段文字"}\n', encoding="utf-8")
    c = load_task(p)                                              # Belle; the text record is not silently read as Belle
    assert c.samples == [("问", "答")] and c.problems == ["line 2: missing field 'instruction' and 'output'"]


# ---------------------------------------------------------------- removing the spaces of a space-tokenized corpus

@pytest.mark.parametrize("tokenized, text", [
    ("你 好 ， 很 高兴 认识 你", "你好，很高兴认识你"),                   # CJK: no space
    ("2 0", "20"), ("C P U", "CPU"), ("2 0 1 8 年", "2018年"),            # digits and single letters join
    ("Star  Wars", "Star Wars"), ("I love you", "I love you"),            # Latin words keep one space
    ("听说 那部 Star Wars 很 好看 ！", "听说那部 Star Wars 很好看！"),
    ("ＤＡＸ ３０", "ＤＡＸ３０"), ("王× ， 原是", "王×，原是"),              # full-width forms are CJK; × is no letter
])
def test_untokenize_rule(tokenized, text):
    from mint.text import untokenize
    assert untokenize(tokenized) == text


def test_lccc_digits_and_single_letters_restored():
    c = load_task(MEAN / "lccc_tokens.json")
    assert c.samples == [("我的CPU是2018年买的", "那台 iPhone 6呢？还是 Windows 电脑？"),
                         ("那台 iPhone 6呢？还是 Windows 电脑？", "都是A股上市公司的产品，涨了3.5%")]


def test_peoples_daily_same_rule_and_text_unchanged(tmp_path):
    p = tmp_path / "pd.txt"
    p.write_text("在/p  Windows/nx  ９５/m  和/c  C/nx  P/nx  U/nx  上/f  ２/m  ０/m\n", encoding="utf-8")
    assert D.load_peoples_daily(path=p) == ["在 Windows ９５和CPU上２０"]
    # the 1998 text has no Latin word (its digits and letters are full-width), so the rule gives the old all-joined text
    raw = D.peoples_daily_path().read_text(encoding="utf-8-sig").splitlines()
    old = [s for s in ("".join(t.rpartition("/")[0] if "/" in t and t.rpartition("/")[0] else t for t in line.split())
                       for line in raw) if s]
    assert D.load_peoples_daily() == old


# ---------------------------------------------------------------- whitespace that carries structure

def test_whitespace_survives_encode_decode():
    from mint.vocab import Vocab, UNK
    c = load_task(MEAN / "whitespace.jsonl")
    texts = [p + r for p, r in c.samples]
    v = Vocab.build(texts)                                          # min_count 2: the whitespace tokens are frequent
    assert {"\n", "\t", "\u3000", " "} <= set(v.chars)
    ws = [ch for t in texts for ch in t if ch.isspace()]
    assert not (v.encode("".join(ws)) == UNK).any()                 # no whitespace character becomes <unk>
    v = Vocab.build(texts, min_count=1)                             # every character: the round trip is exact
    for t in texts:
        ids = v.encode(t)
        assert not (ids == UNK).any(), t
        back = v.decode(ids)
        assert back == t.replace("\xa0", " ").replace("\u2003", " ").replace("\u2028", "\n")   # the documented mapping only


def test_whitespace_the_vocabulary_lacks_becomes_a_space_not_unk():
    from mint.vocab import Vocab, UNK
    v = Vocab(list("北京 "))
    assert v.decode(v.encode("北\t京\n北\u3000京\xa0北")) == "北 京 北 京 北"
    assert Vocab(list("北京")).encode("北\n京").tolist() == [6, UNK, 7]          # no space at all: <unk>, and counted
    assert Vocab(list("北京")).count_unknown("北\n京") == 1


def test_old_vocabulary_dicts_still_load():
    from mint.vocab import Vocab, SPECIAL_TOKENS, PAD, UNK, BOS, EOS, HUMAN, ASSISTANT
    assert (PAD, UNK, BOS, EOS, HUMAN, ASSISTANT) == tuple(range(6))
    old = {"format": "mint-vocab", "version": 1, "min_count": 2,
           "token_to_id": {**{t: i for i, t in enumerate(SPECIAL_TOKENS)}, " ": 6, "中": 7, "文": 8}}
    v = Vocab.from_dict(old)
    assert v.to_dict() == old and v.encode("中 文").tolist() == [7, 6, 8]
    new = Vocab.build(["一\n二\t三\u3000四"] * 2)
    assert Vocab.from_dict(new.to_dict()) == new and "\n" in new.to_dict()["token_to_id"]


# ---------------------------------------------------------------- chat/QA samples longer than the window

def _rows(batches):
    "(batch, row, columns) of every sample in the batches (a padded row, or a packed segment); filler rows skipped."
    for b in batches:
        for r in range(b.shape[0]):
            if b.seg is None:
                if (b.input_ids[r] != 0).any(): yield b, r, b.input_ids[r] != 0
            else:
                for sid in range(1, int(b.seg[r].max()) + 1): yield b, r, b.seg[r] == sid


@pytest.mark.parametrize("pack", [False, True])
def test_long_samples_keep_their_reply_and_never_train_on_nothing(pack):
    from mint.vocab import Vocab, BOS, HUMAN, ASSISTANT, EOS
    qa = load_task(FIX / "cmrc2018" / "train.json").samples            # contexts of ~50 characters
    long_reply = ("写一篇长文。", "很长的回答。" * 10)                     # a reply of 60 characters
    pairs = qa + [long_reply]
    v = Vocab.build([p + r for p, r in pairs], min_count=1)
    T = 32
    d = Counter()
    ev = list(D.chat_eval_batches(pairs, v, 2, T, pack=pack, dropped=d))
    assert d == {f"prompts trimmed from the left to fit {T} tokens": 3, f"samples whose reply does not fit in {T} tokens": 1}
    seen = []
    for b, r, cols in _rows(ev):
        ids, tgt, m = b.input_ids[r, cols], b.targets[r, cols], b.loss_mask[r, cols]
        assert m.sum() > 0                                             # no sample trains on 0 target tokens
        assert ids[:2].tolist() == [BOS, HUMAN] and ASSISTANT in ids.tolist() and tgt[m > 0][-1] == EOS
        seen.append(v.decode(tgt[m > 0]))
    assert seen == [a for _, a in qa]                                  # each reply whole, in order; the long one skipped
    q = ev[0].input_ids[0]
    assert v.decode(q[:list(q).index(ASSISTANT)]).endswith("长城是为了抵御谁而修筑的？")   # the question survives the trim
    tb = D.chat_batches(pairs, v, 2, T, rng=0, pack=pack)
    for _ in range(4):
        b = next(tb)
        assert all(b.loss_mask[r][cols].sum() > 0 for _, r, cols in _rows([b]))


def test_all_replies_longer_than_the_window_is_an_error():
    from mint.vocab import Vocab
    v = Vocab(list("问答"))
    with pytest.raises(ValueError, match=r"none of the 1 pairs fits in seq_len=8 even with its prompt removed"):
        D.chat_eval_batches([("问", "答" * 10)], v, 2, 8)
