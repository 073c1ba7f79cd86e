"""End to end with a real engine: llama.cpp's llama-server generates from a
tiny random-weight Llama built here (`tiny_model.py`: nothing downloaded),
constrained by our GBNF, behind `python/examples/llama_server_front.py`
(render, grammar, parse); the official `openai` client calls it, batch
and streamed, with `tool_choice: required` and with a named function; also
parallel calls, a call cut by `max_tokens` (`finish_reason: length`), and
the markers the model samples as special tokens (`preserved_tokens`).

Random weights follow no instruction, so whatever they say is what the
grammar lets through. The tools take one enum argument each, and every
`ws` of our grammar is bounded, so the grammar's language is finite and
each generation ends (EOS, which the grammar allows only once complete)
well within `max_tokens`: with `parallel_tool_calls: false` every seed
gives one whole call, and those tests do not depend on what the sampler
picks.

Needs llama-server and llama.cpp's `gguf` package (gguf-py) in the
directory CHAT_AUTOPARSER_LLAMA_BIN names: `bash tools/llama_gbnf.sh server`
builds both there (cached) and prints it, as `tools/test.sh` does unless
CHAT_AUTOPARSER_SERVERS=0, which skips this file as it skips the other
server tiers. Without them the file skips with a message.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import chat_autoparser as ca
from conftest import ROOT

LLAMA_BIN = Path(os.environ.get("CHAT_AUTOPARSER_LLAMA_BIN", "/nonexistent"))
LLAMA_SERVER, GGUF_PY = LLAMA_BIN / "llama-server", LLAMA_BIN / "gguf-py"
if os.environ.get("CHAT_AUTOPARSER_SERVERS") == "0":
    pytest.skip("the server tiers are skipped (CHAT_AUTOPARSER_SERVERS=0)", allow_module_level=True)
if not (LLAMA_SERVER.is_file() and GGUF_PY.is_dir()):
    pytest.skip("no llama-server and gguf-py in CHAT_AUTOPARSER_LLAMA_BIN: "
                "export CHAT_AUTOPARSER_LLAMA_BIN=$(bash tools/llama_gbnf.sh server | tail -n1)",
                allow_module_level=True)
openai = pytest.importorskip("openai")

sys.path.insert(0, str(ROOT / "python" / "examples"))
import llama_server_front  # noqa: E402
import tiny_model  # noqa: E402
from llama_server_front import post_json  # noqa: E402

TEMPLATE = ROOT / "templates" / "hermes-think.jinja"
# llama-server's flags besides the model and port, as docs/serving.md gives them.
LLAMA_FLAGS = ["-c", "2048", "-np", "1", "-t", "1", "--no-webui"]


def enum_tool(name: str, field: str, values: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": f"{name} by {field}.",
        "parameters": {"type": "object", "properties": {field: {"type": "string", "enum": values}},
                       "required": [field], "additionalProperties": False}}}


TOOLS = [enum_tool("get_weather", "unit", ["celsius", "fahrenheit"]), enum_tool("get_time", "zone", ["utc", "cet"])]
ALLOWED = {"get_weather": ("unit", {"celsius", "fahrenheit"}), "get_time": ("zone", {"utc", "cet"})}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
# Thinking off: the prompt closes the reasoning block, so the grammar starts at the calls.
THINKING_OFF = {"chat_template_kwargs": {"enable_thinking": False}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"llama-server not healthy after {seconds} s")


@pytest.fixture(scope="module")
def template() -> ca.ChatTemplate:
    return ca.ChatTemplate.from_file(TEMPLATE)


@pytest.fixture(scope="module")
def llama(template, tmp_path_factory):
    """llama-server on the tiny model; yields its base URL."""
    model_dir = tmp_path_factory.mktemp("tiny-llama")
    gguf = tiny_model.build(model_dir, template, GGUF_PY)
    port = free_port()
    log = open(model_dir / "llama-server.log", "w")
    process = subprocess.Popen([str(LLAMA_SERVER), "-m", str(gguf), "--port", str(port), *LLAMA_FLAGS],
                               stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    except Exception:
        log.flush()
        print((model_dir / "llama-server.log").read_text()[-3000:])
        raise
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def front(template, llama):
    """Our OpenAI-compatible front, in a thread; yields (Front, client)."""
    front = llama_server_front.Front(template, llama)
    http = llama_server_front.server(front)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{http.server_address[1]}/v1", api_key="unused",
                           max_retries=0, timeout=600)
    yield front, client
    http.shutdown()


def assert_valid_calls(calls, named: str | None = None) -> None:
    """Each call names a tool (the named one when given) and its arguments
    are JSON that the tool's schema accepts."""
    assert calls, "no tool call"
    for call in calls:
        assert call.function.name in ALLOWED, call
        assert named is None or call.function.name == named
        field, values = ALLOWED[call.function.name]
        arguments = json.loads(call.function.arguments)
        assert list(arguments) == [field] and arguments[field] in values, arguments


def as_parsed(message) -> dict:
    """The client's message in our parser's dict shape."""
    out = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": c.type,
                              "function": {"name": c.function.name, "arguments": c.function.arguments}}
                             for c in message.tool_calls]
    return out


def ours(template: ca.ChatTemplate, output: str, tool_choice, parallel: bool = False) -> dict:
    """Our parse of the model's raw output, ids aside (the front mints fresh ones)."""
    prompt = template.render(MESSAGES, TOOLS, enable_thinking=False)
    message = template.parser(TOOLS, tool_choice, parallel, prompt=prompt).parse(output)
    for call in message.get("tool_calls", []):
        call["id"] = None
    return message


def without_ids(message: dict) -> dict:
    for call in message.get("tool_calls") or []:
        assert call["id"].startswith("call_"), call
        call["id"] = None
    return message


CHOICES = [("required", None), ({"type": "function", "function": {"name": "get_time"}}, "get_time")]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("tool_choice,named", CHOICES, ids=["required", "named"])
def test_openai_client_gets_the_calls_batch(front, template, tool_choice, named, seed):
    front, client = front
    response = client.chat.completions.create(
        model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False,
        seed=seed, temperature=1.0, max_tokens=1024, extra_body=THINKING_OFF)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls", front.outputs[-1]
    assert len(choice.message.tool_calls) == 1, front.outputs[-1]
    assert_valid_calls(choice.message.tool_calls, named)
    assert without_ids(as_parsed(choice.message)) == ours(template, front.outputs[-1], tool_choice)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("tool_choice,named", CHOICES, ids=["required", "named"])
def test_openai_client_gets_the_calls_streamed(front, template, tool_choice, named, seed):
    front, client = front
    with client.chat.completions.stream(
            model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False,
            seed=seed, temperature=1.0, max_tokens=1024, extra_body=THINKING_OFF) as stream:
        chunks = sum(1 for _ in stream)
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert chunks > 3
    assert choice.finish_reason == "tool_calls", front.outputs[-1]
    assert len(choice.message.tool_calls) == 1, front.outputs[-1]
    assert_valid_calls(choice.message.tool_calls, named)
    assert without_ids(as_parsed(choice.message)) == ours(template, front.outputs[-1], tool_choice)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_parallel_calls_batch(front, template, seed, report):
    """`parallel_tool_calls` on: the grammar repeats calls without bound, so
    how many come is the sampler's; the first always ends within
    `max_tokens` (a call is under 500 characters), and every whole call the
    client gets is valid."""
    front, client = front
    response = client.chat.completions.create(
        model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice="required", seed=seed, temperature=1.0,
        max_tokens=1024, extra_body=THINKING_OFF)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls", front.outputs[-1]
    assert_valid_calls(choice.message.tool_calls)
    assert without_ids(as_parsed(choice.message)) == ours(template, front.outputs[-1], "required", True)
    report[f"parallel_tool_calls on, seed {seed}: calls the openai client got"] += len(choice.message.tool_calls)


def test_the_engine_stops_at_the_end_of_the_grammar(front, template):
    """The model's raw text is one call in the template's format and stops
    at the grammar's end (EOS), not at the token limit."""
    front, client = front
    response = client.chat.completions.create(
        model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
        seed=4, max_tokens=1024, extra_body=THINKING_OFF)
    output = front.outputs[-1]
    assert output.strip().startswith("<tool_call>") and output.strip().endswith("</tool_call>"), output
    assert response.usage.completion_tokens < 1024


def test_markers_sampled_as_special_tokens_need_preserved_tokens(front, llama):
    """The model writes `<tool_call>` as its special token (the grammar takes
    the token or its spelling), and llama-server keeps that token's text only
    when the request lists it in `preserved_tokens`, as the front does:
    without it the marker is gone and no parser could find the call."""
    front, _ = front
    marker = post_json(f"{llama}/tokenize", {"content": "<tool_call>"})["tokens"]
    assert len(marker) == 1, marker
    sampled = 0
    for seed in (1, 2, 3):
        _, completion = front.prepare({"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required",
                                       "parallel_tool_calls": False, "seed": seed, **THINKING_OFF})
        kept = post_json(f"{llama}/completion", {**completion, "return_tokens": True})
        if marker[0] not in kept["tokens"]:
            continue
        sampled += 1
        assert "<tool_call>" in kept["content"]
        completion.pop("preserved_tokens")
        dropped = post_json(f"{llama}/completion", completion)["content"]
        assert "<tool_call>" not in dropped and '"name"' in dropped, dropped
    assert sampled, "no seed sampled <tool_call> as its special token"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_markers_named_as_tokens_are_always_sampled_as_tokens(template, llama, seed):
    """Given the model's special tokens, the grammar writes the markers as
    llama.cpp tokens (`<tool_call>`, not the string "<tool_call>"): llama-server
    loads it (a token text that is not one token of the vocabulary would fail
    to load), the model must sample each marker as its token, and our parser,
    told which pieces were special, reads the call."""
    front = llama_server_front.Front(template, llama, special_tokens=tiny_model.markers(template))
    parser, completion = front.prepare({"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required",
                                        "parallel_tool_calls": False, "seed": seed, **THINKING_OFF})
    assert " <tool_call> " in completion["grammar"] and '"<tool_call>"' not in completion["grammar"]
    marker = post_json(f"{llama}/tokenize", {"content": "<tool_call>"})["tokens"]
    kept = post_json(f"{llama}/completion", {**completion, "return_tokens": True})
    assert kept["tokens"].count(marker[0]) == kept["content"].count("<tool_call>") == 1, kept
    special = template.parser(TOOLS, "required", False, special_tokens=tiny_model.markers(template))
    pieces = [(p, True) if p in ("<tool_call>", "</tool_call>") else (p, False)
              for p in _split_markers(kept["content"], ("<tool_call>", "</tool_call>"))]
    calls = special.parse_tokens(pieces).get("tool_calls") or []
    assert len(calls) == 1 and calls[0]["function"]["name"] in ALLOWED, kept["content"]


def _split_markers(text: str, markers: tuple[str, ...]) -> list[str]:
    """`text` cut into pieces at each marker, the markers their own pieces."""
    pieces, at = [], 0
    while True:
        found = [(text.find(m, at), m) for m in markers if text.find(m, at) >= 0]
        if not found:
            return pieces + ([text[at:]] if text[at:] else [])
        start, m = min(found)
        pieces += ([text[at:start]] if start > at else []) + [m]
        at = start + len(m)


def cut_midway(front, client, seed: int) -> int:
    """A `max_tokens` that cuts seed `seed`'s call midway: half its tokens."""
    whole = client.chat.completions.create(
        model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
        seed=seed, max_tokens=1024, extra_body=THINKING_OFF)
    return whole.usage.completion_tokens // 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_cut_call_is_length_and_no_call(front, seed):
    """`max_tokens` cuts the call open: `finish_reason` is `length`, the
    message has no call (its arguments are not JSON) and keeps its text as
    content."""
    front, client = front
    response = client.chat.completions.create(
        model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
        seed=seed, max_tokens=cut_midway(front, client, seed), extra_body=THINKING_OFF)
    output = front.outputs[-1]
    assert "<tool_call>" in output and "</tool_call>" not in output, f"not cut inside the call: {output!r}"
    choice = response.choices[0]
    assert choice.finish_reason == "length", output
    assert not choice.message.tool_calls, choice.message
    # The call's text, whole; what came before it is the stray `</think>` the
    # grammar allows after a closed block, which the parser drops, and edge
    # whitespace, which content never keeps (docs/parser.md).
    assert choice.message.content == output[output.index("<tool_call>"):].rstrip()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_cut_call_streamed_ends_with_length(front, seed):
    """Streamed, the open call's deltas are already sent; the last chunk says
    `length`, which the client's stream helper refuses to parse as a result."""
    front, client = front
    chunks = list(client.chat.completions.create(
        model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
        seed=seed, max_tokens=cut_midway(front, client, seed), extra_body=THINKING_OFF, stream=True))
    output = front.outputs[-1]
    assert "<tool_call>" in output and "</tool_call>" not in output, f"not cut inside the call: {output!r}"
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["length"], output
    with pytest.raises(openai.LengthFinishReasonError):
        with client.chat.completions.stream(
                model="tiny", messages=MESSAGES, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
                seed=seed, max_tokens=cut_midway(front, client, seed), extra_body=THINKING_OFF) as stream:
            stream.get_final_completion()


def test_docs_give_the_commands_this_file_runs():
    doc = (ROOT / "docs" / "serving.md").read_text()
    assert f"llama-server -m MODEL_DIR/model.gguf --port 8080 {' '.join(LLAMA_FLAGS)}" in doc
    assert "python python/tests/tiny_model.py MODEL_DIR templates/hermes-think.jinja" in doc
    assert "python python/examples/llama_server_front.py --template templates/hermes-think.jinja" in doc
