"""The OpenAI-compatible server, tested with the official `openai` client against a real uvicorn server on a free
localhost port: models, chat and completions (streaming and not), a multi-turn conversation, bad requests (JSON 4xx
naming the field), and concurrent clients (no crash, no mixed outputs)."""
import importlib.util, json, socket, threading, time
from concurrent.futures import ThreadPoolExecutor
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("openai", "starlette", "uvicorn")),
                                reason='pip install -e ".[interop]"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


@pytest.fixture(scope="module", params=["char", "bpe"])
def server(request, trained):
    "A real uvicorn server on 127.0.0.1 serving a trained tiny model (char or BPE); yields (openai client, checkpoint)."
    import uvicorn
    from openai import OpenAI
    from mint.serve import create_app
    ck = trained("llama", request.param)
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(ck.params, ck.config, ck.vocab, "tiny"), host="127.0.0.1", port=port,
                                       log_level="warning"))
    th = threading.Thread(target=srv.run, daemon=True); th.start()
    deadline = time.time() + 30
    while not srv.started:
        assert time.time() < deadline and th.is_alive(), "server did not start"
        time.sleep(0.05)
    yield OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="not-needed", max_retries=0, timeout=120), ck
    srv.should_exit = True; th.join(10)


def greedy_reply(ck, messages, max_tokens):
    "What Mint itself answers (the chat prompt through the one engine), for comparison."
    from mint.serve import chat_prompt, run_generation, Sampling
    ids = chat_prompt(ck.vocab, messages, ck.config.max_seq_len)
    return run_generation(ck.params, ck.config, ck.vocab, ids, Sampling(temperature=0, max_tokens=max_tokens))


def test_models(server):
    client, _ = server
    assert [m.id for m in client.models.list().data] == ["tiny"]


def test_chat_non_streaming_and_streaming_agree(server):
    client, ck = server
    msgs = [{"role": "user", "content": "中国人民"}]
    r = client.chat.completions.create(model="tiny", messages=msgs, temperature=0, max_tokens=12)
    text, finish, n = greedy_reply(ck, msgs, 12)
    assert r.choices[0].message.role == "assistant" and r.choices[0].message.content == text
    assert r.choices[0].finish_reason == finish and r.usage.completion_tokens == n
    chunks = list(client.chat.completions.create(model="tiny", messages=msgs, temperature=0, max_tokens=12, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == text
    assert chunks[-1].choices[0].finish_reason == finish


def test_multi_turn_conversation(server):
    "Three rounds, each answer fed back as history: every reply equals ChatSession's for the same conversation."
    from mint.chat import ChatSession
    client, ck = server
    session = ChatSession(ck.params, ck.config, ck.vocab, temperature=0, max_reply=6)
    msgs = []
    for q in ["你好", "今天天气怎么样", "再见"]:
        msgs.append({"role": "user", "content": q})
        r = client.chat.completions.create(model="tiny", messages=msgs, temperature=0, max_tokens=6)
        answer = r.choices[0].message.content
        if not session.rounds or sum(session.rounds) + 2 + len(ck.vocab.encode(q)) <= session.keep:
            assert answer == session.ask(q)                     # same prompt tokens as the interactive chat
        msgs.append({"role": "assistant", "content": answer})
    assert len(msgs) == 6


def test_completions_streaming_and_not(server):
    client, ck = server
    from mint.generate import generate
    want = generate(ck.params, ck.config, ck.vocab, "中国", 10, temperature=0)
    r = client.completions.create(model="tiny", prompt="中国", max_tokens=10, temperature=0)
    assert r.choices[0].text == want and r.usage.prompt_tokens == 1 + len(ck.vocab.encode("中国"))
    parts = list(client.completions.create(model="tiny", prompt="中国", max_tokens=10, temperature=0, stream=True))
    assert "".join(p.choices[0].text for p in parts) == want
    assert parts[-1].choices[0].finish_reason in ("stop", "length")
    s1 = client.completions.create(model="tiny", prompt="中国", max_tokens=10, temperature=1.0, seed=7).choices[0].text
    s2 = client.completions.create(model="tiny", prompt="中国", max_tokens=10, temperature=1.0, seed=7).choices[0].text
    assert s1 == s2                                            # a seed makes sampling repeatable


@pytest.mark.parametrize("kwargs,status,param", [
    (dict(messages=[]), 400, "messages"),
    (dict(messages=[{"role": "system", "content": "be nice"}, {"role": "user", "content": "你好"}]), 400, "messages[0].role"),
    (dict(messages=[{"role": "user", "content": "你好"}], temperature=5), 400, "temperature"),
    (dict(messages=[{"role": "user", "content": "你好"}], max_tokens=0), 400, "max_tokens"),
    (dict(messages=[{"role": "user", "content": "你好"}], n=3), 400, "n"),
    (dict(messages=[{"role": "user", "content": "你好"}], model="gpt-4o"), 404, "model"),
])
def test_bad_requests_get_json_errors_naming_the_field(server, kwargs, status, param):
    import openai
    client, _ = server
    kwargs = {"model": "tiny", **kwargs}
    with pytest.raises(openai.APIStatusError) as e:
        client.chat.completions.create(**kwargs)
    assert e.value.status_code == status
    assert e.value.body["param"] == param and e.value.body["type"] == "invalid_request_error", e.value.body


def test_bad_body_and_unknown_route(server):
    import httpx
    client, _ = server
    base = str(client.base_url).rstrip("/")
    r = httpx.post(base + "/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = httpx.post(base + "/completions", json={"model": "tiny", "prompt": "你" * 200})
    assert r.status_code == 400 and r.json()["error"]["param"] == "prompt"
    assert httpx.get(base + "/engines").status_code == 404


def test_two_concurrent_clients(server):
    "Two clients, streaming and not, interleaved: every answer equals the one it gets alone; the server stays up."
    from openai import OpenAI
    client, ck = server
    prompts = ["中国", "人民", "经济", "今天"] * 2
    alone = {p: client.completions.create(model="tiny", prompt=p, max_tokens=16, temperature=0).choices[0].text for p in set(prompts)}
    def one(i, p):
        c = OpenAI(base_url=client.base_url, api_key="x", max_retries=0, timeout=120)
        if i % 2:
            return p, "".join(x.choices[0].text for x in c.completions.create(model="tiny", prompt=p, max_tokens=16,
                                                                             temperature=0, stream=True))
        return p, c.completions.create(model="tiny", prompt=p, max_tokens=16, temperature=0).choices[0].text
    with ThreadPoolExecutor(2) as ex:
        got = list(ex.map(lambda a: one(*a), enumerate(prompts)))
    assert all(text == alone[p] for p, text in got), got
    assert [m.id for m in client.models.list().data] == ["tiny"]
