"""``ChatTemplate.check()``: the library's ``check`` from Python, the same
report as ``chat-autoparser check --json`` without the engines."""

from pathlib import Path

import chat_autoparser as ca

ROOT = Path(__file__).resolve().parents[2]

# Lists tools but renders no call: calls are read in the fallback dialects.
SILENT = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_shipped_template_works():
    report = ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja").check()
    assert report["verdict"] == "works"
    assert report["warnings"] == []
    assert report["detection"]["reasoning"] == {
        "mode": "tag", "start": "<think>", "end": "</think>", "source": "rendered",
    }
    shapes = [s["shape"]["name"] for s in report["shapes"]]
    assert shapes == ["default", "thinking-on", "thinking-off", "required", "named-function", "parallel-off"]
    one_call = next(p for p in report["shapes"][0]["probes"] if p["name"] == "one-call")
    assert one_call["output"] == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
    )


def test_a_template_that_renders_no_call_warns():
    report = ca.ChatTemplate.from_str(SILENT).check()
    assert report["verdict"] == "warnings"
    whats = [w["what"] for w in report["warnings"]]
    assert "the template renders no tool call; calls are read as the hermes dialect" in whats
    assert all(t["source"] == "instructions" for t in report["detection"]["tool_formats"])
