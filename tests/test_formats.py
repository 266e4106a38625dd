"""Corpus readers (mint.text, mint.records, mint.wiki, mint.formats; nbs/31_text-34_formats): formats, bad records, errors, discovery,
streaming, wiki cache."""
import bz2, importlib.util, json, os, re, time
from pathlib import Path

import pytest

import mint.wiki as W
from mint.text import CHUNK_SIZE, CorpusError, TextStream
from mint.records import MAX_PROBLEMS, Corpus, JsonStream
from mint.wiki import clean_wikitext, wiki_cache_path, wiki_paragraphs
from mint.formats import BELLE_PATHS, CorpusNotFound, find_data, load_file, load_task, task_patterns

FIX = Path(__file__).resolve().parent.parent / "data" / "fixtures" / "formats"
BELLE0 = ("把下面的句子翻译成英文。\n今天天气很好。", "The weather is nice today.")


def no_junk(corpus: Corpus) -> bool:
    text = "".join(s if isinstance(s, str) else "".join(s) for s in corpus.samples)
    return not any(ch in text for ch in "\r\x00\ufeff")


# ---------------------------------------------------------------- fixtures

def test_fixtures_are_small_and_reproducible(tmp_path):
    spec = importlib.util.spec_from_file_location("make_fixtures", FIX / "make_fixtures.py")
    mk = importlib.util.module_from_spec(spec); spec.loader.exec_module(mk)
    mk.write(tmp_path)
    made = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    have = {p.relative_to(FIX) for p in FIX.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and p.name != "make_fixtures.py"}
    assert made == have
    for rel in made: assert (tmp_path / rel).read_bytes() == (FIX / rel).read_bytes(), rel
    assert sum((FIX / r).stat().st_size for r in have) < 200_000


# ---------------------------------------------------------------- formats

def test_belle_jsonl_and_array_agree():
    a, b = load_task(FIX / "belle" / "train.json"), load_task(FIX / "belle_array.json")
    assert (a.kind, a.fmt, len(a), a.skipped) == ("chat", "belle", 6, 0)
    assert a.samples == b.samples
    assert a.samples[0] == BELLE0                       # input appended to the instruction on a new line
    assert a.samples[2] == ("写一句关于春天的诗。", "春风又绿江南岸，明月何时照我还。")  # empty input: no newline added
    assert all(isinstance(p, str) and isinstance(r, str) for p, r in a.samples)


def test_belle_bad_records_skipped_and_summarised():
    c = load_task(FIX / "belle_bad.jsonl")
    assert (len(c), c.skipped) == (3, 5)
    assert [p.split(":")[0] for p in c.problems] == ["line 2", "line 3", "line 5", "line 7", "line 8"]
    assert c.problems[0] == "line 2: missing field 'output'"
    assert c.problems[1].startswith("line 3: bad JSON at column ")
    assert "'instruction' is int" in c.problems[2]
    assert "expected an object, got list" in c.problems[3]
    assert "empty output" in c.problems[4]
    s = c.summary()
    assert "kept 3 sample(s), skipped 5 record(s)" in s and "line 8: empty output" in s and "belle_bad.jsonl" in s


def test_belle_bad_array_labels_have_line_and_index():
    c = load_task(FIX / "belle_bad_array.json")
    assert (len(c), c.skipped) == (2, 2)
    assert c.problems == ["line 7 [1]: missing field 'output'", "line 15 [3]: missing field 'instruction'"]


def test_summary_counts_more_problems_than_it_lists(tmp_path):
    f = tmp_path / "many_bad.jsonl"
    f.write_text("\n".join(['{"text": "好的一行"}'] + ["{bad"] * 9), encoding="utf-8")
    c = load_task(f)
    assert (len(c), c.skipped, len(c.problems)) == (1, 9, MAX_PROBLEMS)
    assert "… and 4 more skipped" in c.summary()


def test_lccc_pairs_and_cjk_spaces():
    c = load_task(FIX / "lccc" / "LCCC-base_train.json")
    assert (c.kind, c.fmt, len(c)) == ("chat", "lccc", 2 + 1 + 3)
    assert c.samples[0] == ("你好，很高兴认识你", "我也很高兴认识你！")
    assert c.samples[1] == ("我也很高兴认识你！", "你平时喜欢做什么？")   # adjacent pairs overlap
    assert ("好啊，看什么？", "听说那部 Star Wars 很好看") in c.samples        # Latin words keep their space
    bad = load_task(FIX / "lccc_bad.json")
    assert (len(bad), bad.skipped) == (1, 4) and bad.samples == [("正常的", "对话呢")]
    assert bad.problems[1] == "line 1 [1]: expected a list of utterances, got str"


def test_cmrc_nested_flat_and_bad():
    n = load_task(FIX / "cmrc2018" / "train.json")
    assert (n.kind, n.fmt, len(n)) == ("chat", "qa", 3)
    ctx = "长城是中国古代为抵御北方游牧民族而修筑的军事防御工程，东起山海关，西至嘉峪关，总长度超过两万公里。"
    assert n.samples[0] == (ctx + "\n长城是为了抵御谁而修筑的？", "北方游牧民族")
    f = load_task(FIX / "cmrc_flat.json")
    assert (f.fmt, len(f)) == ("qa", 3) and f.samples[0] == (ctx + "\n长城的西端在哪里？", "嘉峪关")
    b = load_task(FIX / "cmrc_bad.json")
    assert (len(b), b.skipped) == (1, 5)
    assert b.problems[0] == "line 4 data[0].paragraphs[0].qas[1]: no answer text"
    assert "paragraphs[1]: paragraph without a 'context'" in b.problems[3]


def test_squad_single_line_and_hf_answers(tmp_path):
    squad = {"data": [{"paragraphs": [{"context": "黄河是中国第二长河。", "qas": [
        {"question": "黄河是第几长河？", "answers": {"text": ["第二"], "answer_start": [4]}}]}]}], "version": "1.1"}
    p = tmp_path / "squad.json"; p.write_text(json.dumps(squad, ensure_ascii=False), encoding="utf-8")
    assert load_task(p).samples == [("黄河是中国第二长河。\n黄河是第几长河？", "第二")]


def test_json_object_without_data_is_an_error(tmp_path):
    p = tmp_path / "odd.json"; p.write_text('{\n "version": 1,\n "rows": []\n}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"odd\.json: a JSON object without a 'data' list \(keys: version, rows\)"):
        load_task(p)


def test_lm_text_and_jsonl():
    t = load_task(FIX / "lm.txt")
    assert (t.kind, t.fmt, len(t)) == ("lm", "text", 5)    # one document per non-empty line; the blank one is ignored
    assert t.samples[0] == "北京是中华人民共和国的首都，也是全国的政治和文化中心。"
    j = load_task(FIX / "lm.jsonl")
    assert j.samples == t.samples
    b = load_task(FIX / "lm_bad.jsonl")
    assert (len(b), b.skipped) == (2, 4)
    assert [p.split(":")[0] for p in b.problems] == ["line 2", "line 3", "line 4", "line 5"]


def test_unknown_extension_is_sniffed(tmp_path):
    p = tmp_path / "corpus.dat"
    p.write_bytes((FIX / "belle" / "train.json").read_bytes())
    assert load_task(p).fmt == "belle"
    q = tmp_path / "corpus.text"; q.write_text("第一行文字\n第二行文字\n", encoding="utf-8")
    assert load_task(q).samples == ["第一行文字", "第二行文字"]


def test_json_lines_with_bad_first_line_is_still_json_lines(tmp_path):
    p = tmp_path / "belle.json"
    p.write_text('{"instruction": "坏", "output": }\n' + (FIX / "belle" / "train.json").read_text(encoding="utf-8"),
                 encoding="utf-8")
    c = load_task(p)
    assert (len(c), c.skipped) == (6, 1) and c.problems[0].startswith("line 1: bad JSON")


# ---------------------------------------------------------------- real-world bytes

def test_bom_crlf_cr_nul_never_reach_samples():
    clean = load_task(FIX / "lm.txt").samples
    for f in ("lm_bom_crlf.txt", "lm_cr.txt", "lm_nul.txt"):
        c = load_task(FIX / f)
        assert c.samples == clean, f
        assert no_junk(c)
    assert "dropped a UTF-8 BOM" in load_task(FIX / "lm_bom_crlf.txt").notes
    assert "removed 4 NUL byte(s)" in load_task(FIX / "lm_nul.txt").notes
    b = load_task(FIX / "belle_bom_crlf.jsonl")
    assert b.samples[0] == BELLE0 and no_junk(b)
    assert b.samples[1] == ("换行测试\n第二行", "第一行\n第二行\n第三行")   # escaped \r\n and \r inside JSON strings too
    n = load_task(FIX / "belle_nul.jsonl")
    assert len(n) == 3 and no_junk(n) and n.samples[2][1] == "这里有一个"
    assert n.samples[1][1].startswith("光合作用是植物")


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64])
def test_text_stream_chunk_boundaries(tmp_path, chunk):
    data = "\ufeff中文，English；\r\n混合\r行\x00尾\r\n".encode()
    p = tmp_path / "x.txt"; p.write_bytes(data)
    s = TextStream(p, chunk_size=chunk)
    assert "".join(s) == "中文，English；\n混合\n行尾\n"
    assert s.bytes_read == len(data)


@pytest.mark.parametrize("chunk", [3, 4, 1000, CHUNK_SIZE])
def test_non_utf8_offset_is_absolute(tmp_path, chunk):
    prefix = ("好" * 30000 + "\n").encode()              # ~90 KB: the bad byte is past the first 64 KiB chunk
    p = tmp_path / "late_gbk.txt"; p.write_bytes(prefix + "坏字节".encode("gbk") + b"\n")
    with pytest.raises(CorpusError, match=rf"late_gbk\.txt: not valid UTF-8 at byte offset {len(prefix)} "):
        list(TextStream(p, chunk_size=chunk))


def test_non_utf8_fixtures_name_file_and_offset():
    with pytest.raises(CorpusError, match=r"belle_gbk\.jsonl: not valid UTF-8 at byte offset 17 "):
        load_task(FIX / "belle_gbk.jsonl")
    off = len("北京是中华人民共和国的首都，也是全国的政治和文化中心。\n".encode())
    with pytest.raises(CorpusError, match=rf"lm_gbk\.txt: not valid UTF-8 at byte offset {off} "):
        load_task(FIX / "lm_gbk.txt")


def test_utf16_is_named(tmp_path):
    p = tmp_path / "u16.txt"; p.write_bytes("你好\n".encode("utf-16"))
    with pytest.raises(CorpusError, match=r"u16\.txt: starts with a UTF-16 byte-order mark"):
        load_task(p)


def test_empty_and_blank_files():
    for f in ("empty.json", "empty.txt"):
        with pytest.raises(CorpusError, match=rf"{re.escape(f)}: file is empty"):
            load_task(FIX / f)
    with pytest.raises(CorpusError, match=r"blank\.jsonl: contains no data"):
        load_task(FIX / "blank.jsonl")


def test_zero_usable_samples_is_an_error(tmp_path):
    p = tmp_path / "all_bad.jsonl"
    p.write_text('{"instruction": "只有指令"}\n{"instruction": "也没有输出"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"all_bad\.jsonl: no usable samples \(format belle; skipped 2 record\(s\)\)\n  skipped line 1: missing field 'output'"):
        load_task(p)


def test_broken_json_array_names_line_and_column():
    with pytest.raises(CorpusError, match=r"belle_broken_array\.json: invalid JSON at line 3, column 26: Expecting ',' delimiter"):
        load_task(FIX / "belle_broken_array.json")


def test_json_stream_values_across_chunks(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('[1234567, "长字符串长字符串", {"k": [1, 2, {"x": "值"}]}, -0.5e3]', encoding="utf-8")
    js = JsonStream(TextStream(p, chunk_size=2))
    assert [v for _, _, v in js.items()] == [1234567, "长字符串长字符串", {"k": [1, 2, {"x": "值"}]}, -500.0]
    js.end()


def test_truncated_json_array_is_an_error(tmp_path):
    p = tmp_path / "cut.json"
    p.write_text('[{"text": "第一条"}, {"text": "第二', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"cut\.json: invalid JSON at line 1, column 28: Unterminated string"):
        load_task(p)


# ---------------------------------------------------------------- discovery

def _touch(root: Path, rel: str, text: str = '{"instruction": "问", "output": "答"}\n') -> Path:
    p = root / rel; p.parent.mkdir(parents=True, exist_ok=True); p.write_text(text, encoding="utf-8"); return p


def test_belle_fallback_chain_order(tmp_path):
    assert task_patterns("belle")[:3] == BELLE_PATHS
    third = _touch(tmp_path, "belle/train.json")
    assert find_data("belle", tmp_path) == third
    second = _touch(tmp_path, "BelleGroup--train_0.5M_CN/Belle_open_source_0.5M.json")
    assert find_data("belle", tmp_path) == second
    first = _touch(tmp_path, "BelleGroup--train_1M_CN/Belle_open_source_1M.json")
    assert find_data("belle", tmp_path) == first
    assert load_task("belle", root=tmp_path).source == first


def test_generic_fallback_and_ranking(tmp_path):
    _touch(tmp_path, "LCCC-base/LCCC-base_valid.json", "[]")
    train = _touch(tmp_path, "LCCC-base/LCCC-base_train.json", '[["你 好", "你 好 呀"]]')
    assert find_data("lccc", tmp_path) == train                      # sibling folder, train before valid
    own = _touch(tmp_path, "mytask/Data.JSONL", '{"text": "自己的任务"}\n')
    assert find_data("MyTask", tmp_path) == own                      # any folder name under root, case-insensitive
    assert load_task("mytask", root=tmp_path).samples == ["自己的任务"]


def test_not_found_lists_every_place(tmp_path):
    with pytest.raises(CorpusNotFound) as e:
        load_task("belle", root=tmp_path)
    msg, base = str(e.value), tmp_path.resolve()
    for pat in task_patterns("belle"):
        assert f"  {base / pat}\n" in msg
    assert msg.index(BELLE_PATHS[0]) < msg.index(BELLE_PATHS[1]) < msg.index(BELLE_PATHS[2])
    assert "BelleGroup--train_1M_CN/" in msg.split("To fix:")[1]
    with pytest.raises(CorpusNotFound, match=r"does not exist") as e2:
        find_data("mytask", tmp_path / "missing")
    assert str((tmp_path / "missing").resolve() / "mytask" / "train.json") in str(e2.value)
    assert "put a train.json" in str(e2.value)


def test_paths_and_folders(tmp_path):
    with pytest.raises(CorpusNotFound, match=r"nope\.json: no such file"):
        load_task(tmp_path / "nope.json")
    with pytest.raises(CorpusNotFound, match="no such file"):
        load_task("some/where/nope.jsonl")
    d = tmp_path / "folder"; _touch(d, "train.jsonl", '{"text": "文件夹里的数据"}\n')
    assert load_task(d).samples == ["文件夹里的数据"]
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(CorpusNotFound, match=r"no data file in the folder .*empty_dir") as e:
        load_task(tmp_path / "empty_dir")
    assert "it is empty" in str(e.value) and ".jsonl" in str(e.value)


def test_a_folder_is_all_its_data_files_in_name_order(tmp_path):
    "A folder is every data file in it (not just the first one found), sorted by name; other names are noted, never read."
    d = tmp_path / "corpus"
    _touch(d, "b.txt", "第二个文件的第一行\n第二个文件的第二行\n")
    _touch(d, "a.jsonl", '{"text": "第一个文件"}\n')
    _touch(d, "c.json", '[{"text": "第三个文件"}]')
    _touch(d, "README.md", "not data"); (d / "sub").mkdir(); _touch(d / "sub", "x.txt", "子文件夹不读\n")
    c = load_task(d)
    assert c.samples == ["第一个文件", "第二个文件的第一行", "第二个文件的第二行", "第三个文件"]
    assert c.source == d and c.kind == "lm"
    summary = c.summary()
    assert "read 3 of 3 file(s) in name order: a.jsonl (1), b.txt (2), c.json (1)" in summary
    assert "README.md" in summary and "sub/" in summary
    assert load_task(d, max_samples=2).samples == c.samples[:2]


def test_a_folder_of_mixed_kinds_or_a_bad_file_is_an_error_naming_it(tmp_path):
    d = tmp_path / "mixed"
    _touch(d, "chat.jsonl", json.dumps({"instruction": "你好", "output": "你好！"}, ensure_ascii=False) + "\n")
    _touch(d, "text.txt", "一行文字\n")
    with pytest.raises(CorpusError, match=r"mixes chat files \(chat.jsonl\) and plain-text \(lm\) files \(text.txt\)"):
        load_task(d)
    (d / "text.txt").unlink(); _touch(d, "zz_empty.json", "")
    with pytest.raises(CorpusError, match="zz_empty.json: file is empty"):
        load_task(d)


def test_squad_is_a_task_with_a_hint(tmp_path):
    qa = {"version": "v2.0", "data": [{"paragraphs": [{"context": "长城很长。", "qas": [{"question": "长城长吗？", "answers": [{"text": "很长", "answer_start": 2}]}]}]}]}
    _touch(tmp_path / "squad", "train-v2.0.json", json.dumps(qa, ensure_ascii=False))
    c = load_task("squad", root=tmp_path)
    assert (c.kind, c.fmt, len(c)) == ("chat", "qa", 1)
    with pytest.raises(CorpusNotFound, match="SQuAD's train-v2.0.json"):
        load_task("squad", root=tmp_path / "nowhere")


def test_tasks_by_name_on_fixture_root(tmp_path):
    assert load_task("belle", root=FIX).source == FIX / "belle" / "train.json"
    assert load_task("lccc", root=FIX).source == FIX / "lccc" / "LCCC-base_train.json"
    assert load_task("cmrc2018", root=FIX).source == FIX / "cmrc2018" / "train.json"
    z = load_task("zhwiki", root=FIX, cache_dir=tmp_path)
    assert z.source == FIX / "zhwiki" / "zhwiki-20240101-pages-articles.xml.bz2" and z.kind == "lm"


# ---------------------------------------------------------------- streaming

def _big(tmp_path, kind: str, n: int = 60_000) -> Path:
    rec = {"instruction": "请介绍一下北京的历史和文化。", "input": "", "output": "北京有三千多年的建城史。" * 4}
    if kind == "jsonl":
        p = tmp_path / "big.jsonl"; p.write_text((json.dumps(rec, ensure_ascii=False) + "\n") * n, encoding="utf-8")
    elif kind == "array":
        p = tmp_path / "big.json"; p.write_text("[\n" + ",\n".join([json.dumps(rec, ensure_ascii=False)] * n) + "\n]", encoding="utf-8")
    elif kind == "lccc":
        p = tmp_path / "big_lccc.json"; p.write_text(json.dumps([["你 好 啊", "你 好", "再 见"]] * n, ensure_ascii=False), encoding="utf-8")
    elif kind == "txt":
        p = tmp_path / "big.txt"; p.write_text("北京有三千多年的建城史，是中国的首都。\n" * n, encoding="utf-8")
    else:
        qa = {"context": "长城很长。" * 10, "qas": [{"question": "长城长吗？", "answers": ["很长"]}]}
        p = tmp_path / "big_squad.json"
        p.write_text(json.dumps({"version": "1", "data": [{"paragraphs": [qa]}] * (n // 4)}, ensure_ascii=False, indent=1), encoding="utf-8")
    return p


@pytest.mark.parametrize("kind", ["jsonl", "array", "lccc", "txt", "squad"])
def test_max_samples_stops_early(tmp_path, kind):
    p = _big(tmp_path, kind)
    size = p.stat().st_size
    assert size > 20 * CHUNK_SIZE
    t0 = time.perf_counter()
    c = load_task(p, max_samples=2)
    dt = time.perf_counter() - t0
    assert len(c) == 2 and c.bytes_read <= CHUNK_SIZE < size and dt < 0.5, (c.bytes_read, dt)
    assert "stopped at max_samples=2" in c.notes
    full = load_task(p)                                       # without a cap: the whole file
    assert full.bytes_read == size and len(full) > 1000


def test_lccc_cap_counts_pairs_not_dialogues(tmp_path):
    c = load_task(_big(tmp_path, "lccc", 10), max_samples=3)
    assert c.samples == [("你好啊", "你好"), ("你好", "再见"), ("你好啊", "你好")]


def test_max_samples_must_be_positive():
    with pytest.raises(ValueError, match="max_samples"):
        load_task(FIX / "lm.txt", max_samples=0)


# ---------------------------------------------------------------- wikipedia

EXPECTED_WIKI = [
    "北京市，简称京，是中华人民共和国的首都，也是全国的政治、文化中心。北京位于华北平原北部，背靠燕山，有三千多年的建城史。",
    "北京在元朝时称为大都，明朝和清朝两代在此建都，留下了故宫、天坛等大量古迹。 1949年，北京成为新中国的首都。",
    "北京属于暖温带半湿润大陆性季风气候，夏季炎热多雨，冬季寒冷干燥，春秋两季较短。",
    "长城又称万里长城，是中国古代为抵御北方游牧民族而修筑的大型军事防御工程，总长度超过两万公里。",
    "长城始建于春秋战国时期，秦始皇统一六国后将各国长城连接起来，此后历代都有修缮—现存的长城大多建于明朝。\n"
    "长城是世界遗产之一，每年吸引大量游客前来参观。",
]


def test_wiki_xml_and_bz2_give_the_same_paragraphs(tmp_path):
    x = load_task(FIX / "zhwiki_sample.xml", cache_dir=tmp_path)
    b = load_task(FIX / "zhwiki" / "zhwiki-20240101-pages-articles.xml.bz2", cache_dir=tmp_path)
    assert x.samples == b.samples == EXPECTED_WIKI          # redirect, template page and stub skipped
    assert (x.kind, x.fmt) == ("lm", "wiki")
    for s in x.samples:
        assert not re.search(r"\[\[|\]\]|\{\{|\}\}|\{\||'''|<ref|&nbsp;|&mdash;|==|Category|File:", s), s


def test_wiki_cache_is_written_once_and_reused(tmp_path, monkeypatch):
    dump = tmp_path / "zhwiki-test.xml.bz2"
    dump.write_bytes((FIX / "zhwiki" / "zhwiki-20240101-pages-articles.xml.bz2").read_bytes())
    cache_dir = tmp_path / "cache"
    first = load_task(dump, cache_dir=cache_dir)
    cache = wiki_cache_path(dump, cache_dir)
    assert first.notes[0] == f"built cache {cache}"
    lines = cache.read_text(encoding="utf-8").splitlines()
    assert [json.loads(l) for l in lines] == [{"text": t} for t in EXPECTED_WIKI]
    assert sorted(p.name for p in cache_dir.iterdir()) == [cache.name]        # no temp file left
    # second load: the dump is not parsed again (the parser is replaced by one that fails)
    with monkeypatch.context() as m:
        m.setattr(W, "iter_wiki_pages", lambda path: pytest.fail("the dump was parsed again"))
        second = load_task(dump, cache_dir=cache_dir)
        assert second.samples == first.samples and second.notes[0] == f"read cache {cache}"
        capped = load_task(dump, cache_dir=cache_dir, max_samples=2)
        assert capped.samples == EXPECTED_WIKI[:2] and capped.bytes_read == cache.stat().st_size
    # a different dump at the same path (re-downloaded: another size) gets its own cache
    dump.write_bytes(bz2.compress((FIX / "zhwiki_sample.xml").read_bytes().replace(b"</mediawiki>", b"") +
                                  b"<page><title>\xe6\xb0\xb4</title><ns>0</ns><revision><text>" +
                                  ("水是由氢和氧两种元素组成的无机物，在常温常压下为无色无味的透明液体。").encode() +
                                  b"</text></revision></page></mediawiki>"))
    third = load_task(dump, cache_dir=cache_dir)
    assert third.notes[0].startswith("built cache") and third.samples[-1].startswith("水是由氢和氧")
    assert len(list(cache_dir.iterdir())) == 2


def test_truncated_bz2_dump_leaves_no_cache(tmp_path):
    for _ in range(2):                                     # still an error the second time: nothing half-written was kept
        with pytest.raises(CorpusError, match=r"zhwiki_truncated\.xml\.bz2: truncated bz2 dump"):
            load_task(FIX / "zhwiki_truncated.xml.bz2", cache_dir=tmp_path)
        assert list(tmp_path.iterdir()) == []


def test_truncated_xml_and_non_bz2(tmp_path):
    with pytest.raises(CorpusError, match=r"zhwiki_truncated\.xml: malformed or truncated XML at line \d+, column \d+"):
        load_task(FIX / "zhwiki_truncated.xml", cache_dir=tmp_path)
    fake = tmp_path / "fake.xml.bz2"; fake.write_bytes(b"plain text, not bz2")
    with pytest.raises(CorpusError, match=r"fake\.xml\.bz2: cannot read the dump"):
        load_task(fake, cache_dir=tmp_path / "c")
    assert not (tmp_path / "c").exists() or list((tmp_path / "c").iterdir()) == []


def test_wiki_with_only_redirects_is_an_error(tmp_path):
    xml = ('<mediawiki><page><title>甲</title><ns>0</ns><redirect title="乙"/><revision><text>#REDIRECT [[乙]]</text>'
           '</revision></page><page><title>丙</title><ns>0</ns><revision><text>#重定向 [[丁]]</text></revision></page></mediawiki>')
    p = tmp_path / "redirects.xml.bz2"; p.write_bytes(bz2.compress(xml.encode()))
    with pytest.raises(CorpusError, match=r"redirects\.xml\.bz2: no article paragraph"):
        load_task(p, cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


@pytest.mark.parametrize("markup, text", [
    ("[[北京]]和[[上海市|上海]]", "北京和上海"),
    ("a{{模板|x={{嵌套|y}}}}b", "ab"),
    ("'''粗体'''与''斜体''", "粗体与斜体"),
    ("正文<ref name=\"r\">引用</ref>继续<ref name=\"r\" />。", "正文继续。"),
    ("甲&nbsp;乙&amp;丙&lt;丁&gt;", "甲 乙&丙<丁>"),
    ("<span style=\"x\">文字</span><br/>下一行", "文字\n下一行"),
    ("== 标题 ==\n正文", "\n正文"),
    ("前{| class=\"wikitable\"\n| 格 {{t}}\n|}后", "前后"),
    ("[[File:A.jpg|thumb|[[紫禁城]]的说明]]正文[[Category:首都]][[分类:城市]][[en:Beijing]]", "正文"),
    ("-{zh-hans:长城;zh-hant:長城;}-很长", "长城很长"),
    ("见[https://example.org 官网]和[https://example.org]", "见官网和"),
    ("<!-- 注释 -->文字<math>x^2</math>", "文字"),
])
def test_clean_wikitext(markup, text):
    assert clean_wikitext(markup) == text


def test_wiki_paragraphs_split_and_filter():
    t = "第一段足够长的正文内容，有二十多个汉字在这里。\n\n短段。\n\n第二段也足够长，同样有二十多个汉字在这里写着。"
    assert wiki_paragraphs(t) == ["第一段足够长的正文内容，有二十多个汉字在这里。", "第二段也足够长，同样有二十多个汉字在这里写着。"]
    assert wiki_paragraphs("#REDIRECT [[别处]]", min_chars=1) == []


# ---------------------------------------------------------------- what the libraries alone would get wrong (and we fix)

def test_ijson_alone_lacks_positions_floats_and_surrogates(tmp_path):
    """ijson gives no line/column, Decimal numbers, and mangles escaped lone surrogates; JsonStream fixes all three."""
    import io, ijson
    from decimal import Decimal
    doc = '[\n {"a": 1},\n {"a" 2}\n]'
    with pytest.raises(ijson.JSONError) as e:
        list(ijson.items(io.BytesIO(doc.encode()), "item"))
    assert "line" not in str(e.value)                                   # no position from ijson itself
    p = tmp_path / "b.json"; p.write_text(doc, encoding="utf-8")
    with pytest.raises(CorpusError, match=r"b\.json: invalid JSON at line 3, column 7: Expecting ':' delimiter"):
        list(JsonStream(TextStream(p)).items())
    assert list(ijson.items(io.BytesIO(b"[1.5]"), "item")) == [Decimal("1.5")]
    q = tmp_path / "f.json"; q.write_text("[1.5]", encoding="utf-8")
    assert [v for _, _, v in JsonStream(TextStream(q)).items()] == [1.5]
    assert list(ijson.items(io.BytesIO(b'["\\ud800x"]'), "item")) == ["?x"]          # a silent '?' ...
    with pytest.raises(UnicodeDecodeError):
        list(ijson.items(io.BytesIO(b'["\\udc00"]'), "item"))                          # ... or a crash
    s = tmp_path / "s.json"; s.write_text('["\\ud800x", "\\udc00", "\\ud83d\\ude00", "\\\\ud800"]', encoding="utf-8")
    assert [v for _, _, v in JsonStream(TextStream(s, chunk_size=3)).items()] == ["\uffffx", "\uffff", "\U0001F600", "\\ud800"]


def test_json_stream_line_of_each_item_and_oversize(tmp_path, monkeypatch):
    import mint.records as R
    p = tmp_path / "a.json"
    p.write_text('[{"a": 1}, {"a": 2},\n\n  {"a":\n 3}, "x"]', encoding="utf-8")
    assert [(i, line) for i, line, _ in JsonStream(TextStream(p, chunk_size=4)).items()] == [(0, 1), (1, 1), (2, 3), (3, 4)]
    monkeypatch.setattr(R, "MAX_RECORD_CHARS", 10)
    q = tmp_path / "big.json"; q.write_text('[\n{"a": "' + "长" * 50 + '"\n}]', encoding="utf-8")
    (i, line, v), = JsonStream(TextStream(q, chunk_size=8)).items()          # not kept: skipped as over-long
    assert (i, line, type(v).__name__, v.kind) == (0, 2, "BadRecord", "over-long")


def test_mwparserfromhell_strip_code_alone_keeps_what_we_drop():
    import mwparserfromhell
    cases = {"正文<ref>引用</ref>。": "正文。", "== 标题 ==\n正文": "\n正文", "[[File:A.jpg|thumb|说明]]正文": "正文",
             "[[Category:首都]]正文": "正文", "甲<br/>乙": "甲\n乙", "-{zh-hans:长城;zh-hant:長城}-": "长城",
             "前{| class=\"t\"\n| 格\n|}后": "前后", "__TOC__正文": "正文"}
    for markup, ours in cases.items():
        assert mwparserfromhell.parse(markup).strip_code() != ours, markup
        assert clean_wikitext(markup) == ours, markup


def test_wiki_cache_with_worker_processes_is_identical(tmp_path):
    dump = FIX / "zhwiki" / "zhwiki-20240101-pages-articles.xml.bz2"
    (n1, d1), (n2, d2) = (W.build_wiki_cache(dump, tmp_path / "one.jsonl", workers=1),
                          W.build_wiki_cache(dump, tmp_path / "two.jsonl", workers=2))
    assert n1 == n2 == len(EXPECTED_WIKI) and d1 == d2
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
