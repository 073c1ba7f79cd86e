"""Bad input from Python ends in a clear exception or a plain result,
never a crash: non-UTF-8 bytes, `None` content, a tool with no
`description` or `parameters`, a missing template, values JSON cannot
hold, unknown options."""

from __future__ import annotations

import pytest

import chat_autoparser as ca
from conftest import ROOT

HERMES = ROOT / "templates" / "hermes-think.jinja"


@pytest.fixture(scope="module")
def template() -> ca.ChatTemplate:
    return ca.ChatTemplate.from_file(HERMES)


def test_non_utf8_bytes(template):
    parser = template.parser()
    with pytest.raises(UnicodeDecodeError):
        parser.parse(b"caf\xff")
    stream = parser.stream()
    with pytest.raises(UnicodeDecodeError):
        stream.push(b"a\xffb")
    # The failed push changed nothing; the stream goes on.
    assert stream.push("ok") + stream.finish() == [{"content": "ok"}]
    replacing = parser.stream(errors="replace")
    assert replacing.push(b"a\xffb") == [{"content": "a\ufffdb"}]


def test_bytes_split_inside_characters(template):
    stream = template.parser().stream()
    pieces = [b"caf\xc3", b"\xa9 \xe6\x9d", b"\xb1", b"\xe4\xba\xac"]
    assert [stream.push(p) for p in pieces] == [[{"content": "caf"}], [{"content": "é"}], [{"content": " 東"}], [{"content": "京"}]]
    assert stream.message() == {"role": "assistant", "content": "café 東京"}


def test_output_ending_inside_a_character(template):
    stream = template.parser().stream()
    stream.push(b"ok \xe6\x9d")
    with pytest.raises(UnicodeDecodeError):
        stream.finish()
    assert not stream.finished
    assert template.parser().stream(errors="replace").push(b"\xe6") == []


def test_none_content(template):
    assert template.render([{"role": "user", "content": None}]) == "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n"


def test_tool_without_description_or_parameters(template):
    tools = [{"type": "function", "function": {"name": "ping"}}]
    # Rendered with what the API leaves optional filled, as the CLI renders it.
    filled = '{"name": "ping", "description": "", "parameters": {"type": "object", "properties": {}}}'
    assert f'<tools>\n{{"type": "function", "function": {filled}}}\n</tools>' in template.render(
        [{"role": "user", "content": "x"}], tools=tools)
    parser = template.parser(tools=tools)
    assert parser.parse('<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>')["tool_calls"] == [
        {"id": None, "type": "function", "function": {"name": "ping", "arguments": "{}"}}]
    assert template.grammar(tools=tools)["gbnf"] != ""


def test_missing_template_path():
    with pytest.raises(ca.IoError) as caught:
        ca.ChatTemplate.from_file("/nonexistent/chat_template.jinja")
    assert caught.value.kind == "io"
    assert "No such file" in str(caught.value)
    with pytest.raises(ca.IoError):
        ca.ChatTemplate.from_pretrained("/nonexistent")


def test_template_errors_carry_kind_and_location():
    with pytest.raises(ca.TemplateSyntaxError) as caught:
        ca.ChatTemplate.from_str("hello {% if %}")
    assert (caught.value.kind, caught.value.line, caught.value.column) == ("syntax", 1, 13)
    with pytest.raises(ca.TemplateRaisedError) as raised:
        ca.ChatTemplate.from_str("{{ raise_exception('no system role') }}").render([])
    assert raised.value.kind == "raised" and raised.value.message == "no system role"
    assert issubclass(ca.TemplateRaisedError, ca.Error)


def test_values_json_cannot_hold(template):
    with pytest.raises(TypeError, match="set"):
        template.render([{"role": "user", "content": {1, 2}}])
    with pytest.raises(TypeError, match="messages must be a list"):
        template.render("hello")
    with pytest.raises(TypeError, match="str or bytes"):
        template.parser().parse(42)
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested too deeply"):
        template.render([{"role": "user", "content": loop}])


def test_unknown_options(template):
    with pytest.raises(ca.InputError, match="reasoning takes"):
        template.parser(reasoning="hide")
    with pytest.raises(ca.InputError, match="continue_final_message"):
        template.parser(continue_final_message="maybe")
    with pytest.raises(ValueError, match="errors takes"):
        template.parser().stream(errors="ignore")
    with pytest.raises(ca.InputError, match="no usable tool"):
        template.grammar(tool_choice="required")
