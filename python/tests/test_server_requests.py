"""Requests as an OpenAI-compatible server receives them: a tool without
`description` or `parameters` (the API allows both) renders, on every
template, exactly as the tool with `""` and an empty object schema (as
the CLI fills them); `call_ids` mints OpenAI-style ids that the first
delta of each call carries."""

from __future__ import annotations

import re

import pytest

import chat_autoparser as ca
from conftest import ROOT, template_sets

USER = {"role": "user", "content": "Weather in Paris?"}
BARE = {"type": "function", "function": {"name": "get_weather"}}
FILLED = {"type": "function", "function": {"name": "get_weather", "description": "",
                                          "parameters": {"type": "object", "properties": {}}}}
CASES = [(label, path) for label, paths in template_sets() for path in paths]


@pytest.mark.parametrize("label,path", CASES, ids=[f"{label}/{p.stem}" for label, p in CASES])
def test_a_bare_tool_renders_as_a_filled_one(label, path, report):
    template = ca.ChatTemplate.from_file(path)
    try:
        want = template.render([USER], tools=[FILLED])
    except ca.Error as e:
        pytest.skip(f"the template refuses a filled tool: {e}")
    assert template.render([USER], tools=[BARE]) == want
    report[f"{label} templates: a tool without description/parameters renders as the filled one"] += 1


HERMES = ROOT / "templates" / "hermes-think.jinja"
TOOLS = [{"type": "function", "function": {"name": "get_weather"}}]
TWO_CALLS = ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
             '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>')
CALL_ID = re.compile(r"call_[0-9A-Za-z]{24}")


def test_call_ids_are_minted_from_the_seed():
    template = ca.ChatTemplate.from_file(HERMES)
    message = template.parser(tools=TOOLS, call_ids=7).parse(TWO_CALLS)
    ids = [c["id"] for c in message["tool_calls"]]
    assert all(CALL_ID.fullmatch(i) for i in ids) and ids[0] != ids[1], ids
    # The same seed gives the same ids; another seed others; none gives None.
    assert [c["id"] for c in template.parser(tools=TOOLS, call_ids=7).parse(TWO_CALLS)["tool_calls"]] == ids
    assert [c["id"] for c in template.parser(tools=TOOLS, call_ids=8).parse(TWO_CALLS)["tool_calls"]] != ids
    assert [c["id"] for c in template.parser(tools=TOOLS).parse(TWO_CALLS)["tool_calls"]] == [None, None]


def test_the_first_delta_of_each_call_carries_its_id():
    template = ca.ChatTemplate.from_file(HERMES)
    want = template.parser(tools=TOOLS, call_ids=7).parse(TWO_CALLS)
    deltas = list(ca.deltas(template.parser(tools=TOOLS, call_ids=7), TWO_CALLS))
    pieces = [p for d in deltas for p in d.get("tool_calls", [])]
    firsts = [p for p in pieces if "name" in p["function"]]
    assert [(p["index"], p["id"], p["type"], p["function"]["name"]) for p in firsts] == \
        [(i, c["id"], "function", "get_weather") for i, c in enumerate(want["tool_calls"])]
    # Only the first piece of a call names its id.
    assert sum("id" in p for p in pieces) == 2


def test_call_ids_takes_an_unsigned_64_bit_seed():
    template = ca.ChatTemplate.from_file(HERMES)
    template.parser(tools=TOOLS, call_ids=2**64 - 1)
    with pytest.raises(OverflowError):
        template.parser(tools=TOOLS, call_ids=-1)
