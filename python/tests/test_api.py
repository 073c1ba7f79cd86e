"""The Python API on the shipped Hermes template: exact results for
render, capabilities, parse (batch, partial, strict), streams, grammar,
cached analyses, model folders, and a parser shared between threads."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

import chat_autoparser as ca
from conftest import ROOT

HERMES = ROOT / "templates" / "hermes-think.jinja"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
OUTPUT = ("<think>Rain?</think>\n\nLet me check.\n<tool_call>\n"
          '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
MESSAGE = {
    "role": "assistant", "content": "Let me check.", "reasoning_content": "Rain?",
    "tool_calls": [{"id": None, "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
}


@pytest.fixture(scope="module")
def template() -> ca.ChatTemplate:
    return ca.ChatTemplate.from_file(HERMES)


def test_render(template):
    user = [{"role": "user", "content": "hi"}]
    assert template.render(user) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert template.render(user, add_generation_prompt=False) == "<|im_start|>user\nhi<|im_end|>\n"
    assert template.render(user, enable_thinking=False).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_capabilities(template):
    caps = template.capabilities()
    assert (caps["tools"], caps["tool_calls"], caps["parallel_calls"], caps["thinking_toggle"]) == \
        (True, True, True, "enable_thinking")


def test_parse(template):
    parser = template.parser(tools=TOOLS)
    assert parser.parse(OUTPUT) == MESSAGE
    assert parser.parse(OUTPUT.encode()) == MESSAGE
    assert parser.parse_partial("<think>Rain?</think>\n\nLet me") == \
        {"role": "assistant", "content": "Let me", "reasoning_content": "Rain?"}
    assert parser.parse("Hello.") == {"role": "assistant", "content": "Hello."}


def test_parse_strict_raises_with_offset(template):
    parser = template.parser(tools=TOOLS)
    assert parser.parse_strict(OUTPUT) == MESSAGE
    broken = '<tool_call>\n{"name": "get_weather", "arguments": {"city": '
    with pytest.raises(ca.ParseError) as caught:
        parser.parse_strict(broken)
    # The call breaks where the output ends, inside its arguments.
    assert (caught.value.kind, caught.value.offset) == ("broken_tool_call", len(broken))
    message, diagnostics = parser.parse_report(broken)
    # Lenient: arguments that never end as JSON make no call; the call's
    # text is content (trailing whitespace aside, as for any content).
    assert message == {"role": "assistant", "content": broken.rstrip()}
    assert diagnostics == [{"kind": "broken_tool_call", "offset": len(broken)},
                           {"kind": "withdrawn_tool_call", "offset": 0}]


def test_policy(template):
    output = OUTPUT + "\nDone."
    assert template.parser(tools=TOOLS).parse(output)["content"] == "Let me check.\n\nDone."
    compatible = template.parser(tools=TOOLS, policy="compatible")
    message, diagnostics = compatible.parse_report(output)
    assert message == MESSAGE
    start = output.index("Done.")
    assert diagnostics == [{"kind": "dropped", "offset": start, "end": start + 5}]
    unknown = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    flagged = template.parser(tools=TOOLS, policy={"unknown_tool": "call"})
    assert flagged.parse(unknown)["tool_calls"][0]["function"]["name"] == "get_time"
    with pytest.raises(ca.InputError, match="unknown_tool takes content or call"):
        template.parser(tools=TOOLS, policy={"unknown_tool": "maybe"})
    with pytest.raises(ca.InputError, match="policy takes"):
        template.parser(tools=TOOLS, policy="strict")


def test_stream_deltas(template):
    stream = template.parser(tools=TOOLS).stream()
    deltas = [stream.push(OUTPUT[i:i + 8]) for i in range(0, len(OUTPUT), 8)] + [stream.finish()]
    assert deltas[:6] == [[{"reasoning_content": "R"}], [{"reasoning_content": "ain?"}], [{"content": "Le"}],
                          [{"content": "t me che"}], [{"content": "ck."}], []]
    calls = [d["tool_calls"][0] for batch in deltas for d in batch if "tool_calls" in d]
    assert calls[0] == {"index": 0, "type": "function", "function": {"name": "get_weather"}}
    assert "".join(c["function"].get("arguments", "") for c in calls) == '{"city": "Paris"}'
    assert stream.message() == MESSAGE
    assert stream.finished
    with pytest.raises(RuntimeError):
        stream.push("more")


def test_deltas_helpers(template):
    parser = template.parser(tools=TOOLS)
    tokens = [OUTPUT.encode()[i:i + 3] for i in range(0, len(OUTPUT.encode()), 3)]
    sync = list(ca.deltas(parser, tokens))

    async def chunks():
        for token in tokens:
            yield token

    async def collect():
        return [d async for d in ca.adeltas(parser, chunks())]

    assert asyncio.run(collect()) == sync
    assert "".join(d.get("content", "") for d in sync) == "Let me check."


def test_allowed_tools(template):
    """``tool_choice`` ``allowed_tools``: the grammar calls only the listed tool, the
    parser reads another tool's call as content; a malformed one is an InputError."""
    time = {"type": "function", "function": {"name": "get_time"}}
    allowed = {"type": "allowed_tools",
               "allowed_tools": {"mode": "required", "tools": [{"type": "function", "function": {"name": "get_weather"}}]}}
    gbnf = template.grammar(tools=TOOLS + [time], tool_choice=allowed)["gbnf"]
    assert "get_weather" in gbnf and "get_time" not in gbnf
    call = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    parser = template.parser(tools=TOOLS + [time], tool_choice=allowed, enable_thinking=False)
    assert parser.parse(call)["content"] == call
    with pytest.raises(ca.InputError, match="allowed_tools: `mode` must be"):
        template.grammar(tools=TOOLS, tool_choice={"type": "allowed_tools", "mode": "any", "tools": []})


def test_grammar(template):
    grammar = template.grammar(tools=TOOLS)
    assert grammar["lazy"] is True
    assert grammar["preserved_tokens"] == ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"]
    assert grammar["gbnf"].startswith("root ::= tool-call ( ws tool-call )* ws\n")
    assert {t["kind"] for t in grammar["triggers"]} == {"pattern_full"}
    # No tools: nothing to constrain, but the markers are still named for llama-server.
    assert template.grammar() == {"gbnf": "", "lazy": False, "triggers": [],
                                  "preserved_tokens": ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"]}
    assert template.grammar(tools=TOOLS, format="lark")["lark"].startswith("start:")
    assert template.grammar(tools=TOOLS, format="structural-tag")["structural_tag"]["type"] == "structural_tag"
    assert template.grammar(tools=TOOLS, format="response-template")["response_template"]["version"] == 1
    with pytest.raises(ca.InputError):
        template.grammar(tools=TOOLS, format="ebnf")


def test_cached_analysis(template):
    cached = template.analysis_json()
    assert json.loads(cached) == template.analyze()
    again = ca.ChatTemplate.from_file(HERMES, analysis=cached)
    assert again.analysis_json() == cached
    assert again.parser(tools=TOOLS).parse(OUTPUT) == MESSAGE
    with pytest.raises(ca.InputError, match="format_version 99"):
        ca.ChatTemplate.from_file(HERMES, analysis='{"format_version": 99}')


def test_from_pretrained(tmp_path: Path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": {"content": "<s>"}, "eos_token": "</s>",
        "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}",
    }))
    folder = ca.ChatTemplate.from_pretrained(tmp_path)
    assert (folder.bos_token, folder.eos_token) == ("<s>", "</s>")
    assert folder.render([{"role": "user", "content": "hi"}]) == "<s>hi</s>"
    (tmp_path / "chat_template.jinja").write_text("[{{ messages[0].content }}]")
    assert ca.ChatTemplate.from_file(tmp_path).render([{"role": "user", "content": "hi"}]) == "[hi]"


def test_parser_shared_between_threads(template):
    parser = template.parser(tools=TOOLS)
    results: list = []

    def work():
        for _ in range(200):
            results.append(parser.parse(OUTPUT))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 800 and all(r == MESSAGE for r in results)


def test_parser_warns_when_the_prompt_does_not_render():
    alternating = ca.ChatTemplate.from_str(
        "{% for m in messages %}{% if not loop.first and m.role == loop.previtem.role %}"
        "{{ raise_exception('roles must alternate') }}{% endif %}"
        "<|{{ m.role }}|>{{ m.content }}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    users = [{"role": "user", "content": "U"}, {"role": "user", "content": "U"}]
    with pytest.warns(UserWarning) as caught:
        parser = alternating.parser(messages=users)
    assert [str(w.message) for w in caught] == [
        "the prompt does not render (raised error at line 1, column 83: roles must alternate); "
        "parsed without it"]
    assert parser.parse("Hello.") == {"role": "assistant", "content": "Hello."}


def test_parser_start_says_where_reasoning_stands(template):
    user = [{"role": "user", "content": "hi"}]
    prompt = template.render(user)
    assert template.parser(prompt=prompt).start == "free"
    assert template.parser(prompt=prompt + "<think>\n").start == "in_reasoning"
    assert template.parser(enable_thinking=False).start == "after_reasoning"
    assert template.parser(prompt=prompt + "<think>\n").parse("Hm.</think>\n\nHi.") == \
        {"role": "assistant", "content": "Hi.", "reasoning_content": "Hm."}
