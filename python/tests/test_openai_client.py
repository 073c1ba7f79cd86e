"""A real client: the official `openai` package's own stream accumulation
(`ChatCompletionStreamState`) turns our deltas, sent as
`chat.completion.chunk` objects token by token, into the same message as
our batch parse, ids included (`call_ids` mints those the model does not
write), for every round-trip output with tool calls."""

from __future__ import annotations

import pytest

import chat_autoparser as ca
from conftest import template_sets
from roundtrip import TOOLS, byte_tokens, outputs

openai_streaming = pytest.importorskip("openai.lib.streaming.chat")
from openai.types.chat import ChatCompletionChunk  # noqa: E402

CASES = [(label, path) for label, paths in template_sets() for path in paths]


def chunk(delta: dict, finish_reason: str | None = None) -> ChatCompletionChunk:
    """One server-sent chunk carrying `delta`, as an OpenAI server sends it."""
    return ChatCompletionChunk.model_validate({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": "test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })


def client_message(parser: ca.Parser, output: str):
    """What the openai client accumulates from our stream of `output`."""
    state = openai_streaming.ChatCompletionStreamState(input_tools=TOOLS)
    state.handle_chunk(chunk({"role": "assistant"}))
    stream = parser.stream()
    for token in byte_tokens(output):
        for delta in stream.push(token):
            state.handle_chunk(chunk(delta))
    for delta in stream.finish():
        state.handle_chunk(chunk(delta))
    finish = "tool_calls" if stream.message().get("tool_calls") else "stop"
    state.handle_chunk(chunk({}, finish))
    return state.get_final_completion().choices[0].message


def as_ours(message) -> dict:
    """The client's message in our dict shape, to compare whole."""
    out = {"role": message.role, "content": message.content}
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning:
        out["reasoning_content"] = reasoning
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": c.type, "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls
        ]
    return out


@pytest.mark.parametrize("label,path", CASES, ids=[f"{label}/{p.stem}" for label, p in CASES])
def test_openai_accumulates_our_deltas(label, path, report):
    template = ca.ChatTemplate.from_file(path)
    try:
        template.analyze()
    except ca.Error as e:
        pytest.skip(f"analysis fails: {e}")
    for name, options, output in outputs(template):
        # Two parsers with one seed: each one's first output gets the same ids.
        parser = template.parser(**options, call_ids=7)
        want = template.parser(**options, call_ids=7).parse(output)
        if not want.get("tool_calls"):
            continue
        # Every call has an id, the model's own or one minted from the seed,
        # and the client rebuilds it from the first delta of the call.
        assert all(isinstance(c["id"], str) and c["id"] for c in want["tool_calls"]), name
        assert as_ours(client_message(parser, output)) == want, name
        report[f"{label} outputs with tool calls: openai's ChatCompletionStreamState accumulates our chunks, ids included, into our batch parse"] += 1
