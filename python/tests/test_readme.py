"""The README's "From Python" example runs as written: in a folder with a
model directory holding the shipped Hermes template, with a fake model
that writes a reasoning block and a call, its sent deltas add up to the
message it parsed."""

from __future__ import annotations

import re
import shutil

from conftest import ROOT
from roundtrip import accumulate

OUTPUT = ('<think>Paris?</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
          '</tool_call>')


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs(tmp_path, monkeypatch):
    model = tmp_path / "models" / "Qwen3-8B"
    model.mkdir(parents=True)
    shutil.copy(ROOT / "templates" / "hermes-think.jinja", model / "chat_template.jinja")
    monkeypatch.chdir(tmp_path)
    sent: list = []
    scope = {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}],
        "model_output": OUTPUT,
        "generate": lambda prompt: [OUTPUT.encode()[i:i + 3] for i in range(0, len(OUTPUT.encode()), 3)],
        "send": sent.append,
    }
    example = readme_example()
    assert len([line for line in example.splitlines() if line.strip()]) <= 10
    exec(compile(example, "README.md", "exec"), scope)
    assert scope["prompt"].endswith("<|im_start|>assistant\n")
    assert scope["message"]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert accumulate([chunk["choices"][0]["delta"] for chunk in sent]) == scope["message"]
