"""Cross-engine parity: our parse beside vLLM's and SGLang's real parsers.

For a set of model families (a real template, the vLLM tool and reasoning
parser names, the SGLang detector and reasoning parser names), model
outputs written here from each template's own markers (plain content, one
and two calls, content around calls, an unknown tool, a call cut off at
the end, malformed arguments, a call inside the reasoning block,
whitespace variants...) are parsed by:
- vLLM 0.33's composed parser (`ParserManager.get_parser(...)`, then
  `Parser.parse`, as its chat serving does for a non-streamed response),
  in vLLM's virtualenv;
- SGLang 0.5.23's `ReasoningParser.parse_non_stream` then
  `OpenAIServingChat._process_tool_calls` (what `_build_chat_response`
  calls), in SGLang's virtualenv;
- ours, `ChatTemplate.parser(policy=...)` under `compatible` and `lossless`
  (the Python package in a venv, or `--cli BIN` for the CLI's `batch`);
- TensorRT-LLM's parsers, the third engine, where their sources are at
  `--trtllm-src` (tools/parity_trtllm.py; skipped when absent): for the
  families it has a text parser for, a table of how often each engine and
  ours equal the majority of the three.
Each engine runs in its own interpreter as `parity.py engine NAME
CASES.json OUT.json`; this process compares. No model is downloaded: each
family gets a byte-level BPE trained here with its markers as special
tokens (as python/tests/test_vllm.py builds one). Outputs are written
here; no engine's test fixtures are read.

Compared after normalising: content stripped (None = ""), calls as (name,
arguments parsed as JSON where they parse), reasoning separately.
`python3 tools/parity.py run` prints the table and writes docs/parity.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "llamacpp"
CACHE = Path.home() / ".cache" / "chat-autoparser"
VLLM_PY = CACHE / "vllm-0.33.0" / "venv" / "bin" / "python"
SGLANG_PY = CACHE / "sglang-0.5.23" / "venv" / "bin" / "python"
# TensorRT-LLM's parser sources, the third engine (tools/parity_trtllm.py says how to get them).
TRTLLM_SRC = CACHE / "trtllm" / "src"

USER = {"role": "user", "content": "What is the weather in Paris?"}
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "save_note", "description": "Saves a note.",
        "parameters": {"type": "object", "properties": {
            "text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object"}},
            "required": ["text"]}}},
]
WEATHER = ("get_weather", {"city": "Paris", "days": 3})
TOKYO = ("get_weather", {"city": "Tokyo", "days": 1})
NOTE = ("save_note", {"text": 'He said "hi" & left\nline two — café', "tags": ["a", "b"]})
UNKNOWN = ("get_stock_price", {"ticker": "ACME"})


# -- how each format writes calls ----------------------------------------------

def jdump(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def xml_value(value) -> str:
    return value if isinstance(value, str) else jdump(value)


class Format:
    """One family's call syntax. `section(calls)` writes the calls the model
    emits together; `tail` is the closer a stop string eats (the `cut` case);
    `value_closer` (tagged formats) is what `malformed` removes once."""
    tail = ""
    value_closer = ""

    def section(self, calls) -> str:
        raise NotImplementedError

    def spaced(self, call) -> str | None:
        """The call with the whitespace at its markers changed (None: no variant)."""
        return None

    def malformed(self, call) -> str:
        text = self.section([call])
        if self.value_closer:
            return text.replace(self.value_closer, "", 1)
        return text.replace('"days": 3', "days: 3", 1)


class Hermes(Format):
    tail = "\n</tool_call>"

    def spaced(self, call):
        return self.section([call]).replace("<tool_call>\n", "<tool_call>").replace("\n</tool_call>", " </tool_call>")

    def section(self, calls):
        return "\n".join(f'<tool_call>\n{{"name": "{n}", "arguments": {jdump(a)}}}\n</tool_call>' for n, a in calls)


class MistralNemo(Format):
    tail = "]"

    def spaced(self, call):
        return self.section([call]).replace("[TOOL_CALLS][", "[TOOL_CALLS] [ ")

    def section(self, calls):
        items = [{"name": n, "arguments": a, "id": f"a1b2c3d4{i}"} for i, (n, a) in enumerate(calls)]
        return "[TOOL_CALLS]" + jdump(items)


class Llama3(Format):
    def spaced(self, call):
        return "<|python_tag|>" + json.dumps({"name": call[0], "parameters": call[1]}, indent=2)

    def section(self, calls):
        return "; ".join(f'{{"name": "{n}", "parameters": {jdump(a)}}}' for n, a in calls)


class DeepSeekV31(Format):
    tail = "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"

    def section(self, calls):
        body = "".join(f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{jdump(a)}<｜tool▁call▁end｜>" for n, a in calls)
        return f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"


class KimiK2(Format):
    tail = "<|tool_call_end|><|tool_calls_section_end|>"

    def spaced(self, call):
        return self.section([call]).replace("<|tool_call_begin|>", "<|tool_call_begin|> ").replace(
            "<|tool_call_argument_begin|>", " <|tool_call_argument_begin|> ")

    def section(self, calls):
        body = "".join(f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{jdump(a)}<|tool_call_end|>"
                       for i, (n, a) in enumerate(calls))
        return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


class Glm45(Format):
    tail = "\n</tool_call>"
    value_closer = "</arg_value>"

    def spaced(self, call):
        return self.section([call]).replace("\n", "")

    def section(self, calls):
        return "\n".join(f"<tool_call>{n}\n" + "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{xml_value(v)}</arg_value>\n" for k, v in a.items()) + "</tool_call>"
            for n, a in calls)


class Qwen3Coder(Format):
    tail = "\n</function>\n</tool_call>"
    value_closer = "\n</parameter>"

    def spaced(self, call):
        return self.section([call]).replace(">\n", ">").replace("\n<", "<")

    def section(self, calls):
        return "\n".join(f"<tool_call>\n<function={n}>\n" + "".join(
            f"<parameter={k}>\n{xml_value(v)}\n</parameter>\n" for k, v in a.items()) + "</function>\n</tool_call>"
            for n, a in calls)


class MiniMaxM2(Format):
    tail = "\n</minimax:tool_call>"
    value_closer = "</parameter>"

    def spaced(self, call):
        return self.section([call]).replace("\n", "")

    def section(self, calls):
        body = "".join(f'<invoke name="{n}">\n' + "".join(
            f'<parameter name="{k}">{xml_value(v)}</parameter>\n' for k, v in a.items()) + "</invoke>\n"
            for n, a in calls)
        return f"<minimax:tool_call>\n{body}</minimax:tool_call>"


class Harmony(Format):
    tail = "<|call|>"

    def spaced(self, call):
        return self.section([call]).replace(" <|constrain|>", "<|constrain|>")

    def section(self, calls):
        return "".join(f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>"
                       f"{jdump(a)}<|call|>" for n, a in calls)


class Glm47(Glm45):
    tail = "</tool_call>"

    def section(self, calls):
        return "".join(f"<tool_call>{n}" + "".join(
            f"<arg_key>{k}</arg_key><arg_value>{xml_value(v)}</arg_value>" for k, v in a.items()) + "</tool_call>"
            for n, a in calls)

    def spaced(self, call):
        return super().section([call])


class Step35(Qwen3Coder):
    def section(self, calls):
        return super().section(calls).replace("</tool_call>\n<tool_call>", "</tool_call><tool_call>")


class MistralCompact(Format):
    """Mistral Small 3.2: `[TOOL_CALLS]name[ARGS]{...}` per call."""

    def section(self, calls):
        return "".join(f"[TOOL_CALLS]{n}[ARGS]{jdump(a)}" for n, a in calls)

    def spaced(self, call):  # the template's own rendering, with the call id
        return f"[TOOL_CALLS]{call[0]}[CALL_ID]abcdefgh1[ARGS]{jdump(call[1])}"


def pyval(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {pyval(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(pyval(v) for v in value) + "]"
    return repr(value)


class Lfm2(Format):
    tail = "<|tool_call_end|>"

    def section(self, calls):
        body = ", ".join(f"{n}(" + ", ".join(f"{k}={pyval(v)}" for k, v in a.items()) + ")" for n, a in calls)
        return f"<|tool_call_start|>[{body}]<|tool_call_end|>"

    def malformed(self, call):
        return self.section([call]).replace("days=3", "days=")

    def spaced(self, call):
        return self.section([call]).replace("[", "[ ").replace("]", " ]")


def gemma_value(value) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma_value(v) for v in value) + "]"
    return jdump(value)


class Gemma4(Format):
    tail = "<tool_call|>"

    def section(self, calls):
        return "".join(f"<|tool_call>call:{n}{gemma_value(a)}<tool_call|>" for n, a in calls)

    def malformed(self, call):
        return self.section([call]).replace('Paris<|"|>', "Paris", 1)


class Dsml(Format):
    tail = "\n</｜DSML｜function_calls>"
    value_closer = "</｜DSML｜parameter>"

    def section(self, calls):
        body = "".join(f'<｜DSML｜invoke name="{n}">\n' + "".join(
            f'<｜DSML｜parameter name="{k}" string="{str(isinstance(v, str)).lower()}">{xml_value(v)}'
            f"</｜DSML｜parameter>\n" for k, v in a.items()) + "</｜DSML｜invoke>\n" for n, a in calls)
        return f"<｜DSML｜function_calls>\n{body}</｜DSML｜function_calls>"


class Apertus(Format):
    tail = "<|tools_suffix|>"

    def section(self, calls):
        return "<|tools_prefix|>" + jdump([{n: a} for n, a in calls]) + "<|tools_suffix|>"


def xtml_type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def xtml_attr(value) -> str:
    return str(value).replace("&", "&amp;").replace('"', "&quot;")


class KimiK3(Format):
    """Kimi K3 XTML: the response channel closed, then a `tools` channel of
    `call` elements with typed `argument`s (strings raw, the rest JSON), then
    the message closed, as the template renders an assistant turn."""
    tail = "<|close|>tools<|sep|><|close|>message<|sep|>"
    value_closer = "<|close|>argument<|sep|>"

    def section(self, calls):
        body = "".join(f'<|open|>call tool="{xtml_attr(n)}" index="{i}"<|sep|>' + "".join(
            f'<|open|>argument key="{xtml_attr(k)}" type="{xtml_type(v)}"<|sep|>{xml_value(v)}'
            f"<|close|>argument<|sep|>" for k, v in a.items()) + "<|close|>call<|sep|>"
            for i, (n, a) in enumerate(calls, 1))
        return f"<|close|>response<|sep|><|open|>tools<|sep|>{body}<|close|>tools<|sep|><|close|>message<|sep|>"

    def spaced(self, call):
        return self.section([call]).replace("<|open|>call", "\n<|open|>call").replace(
            "<|close|>tools", "\n<|close|>tools")


class DsmlV4(Dsml):
    """DeepSeek V4: the DSML block is `tool_calls`, after a blank line."""
    tail = "\n</｜DSML｜tool_calls>"

    def section(self, calls):
        body = "".join(f'<｜DSML｜invoke name="{n}">\n' + ("".join(
            f'<｜DSML｜parameter name="{k}" string="{str(isinstance(v, str)).lower()}">{xml_value(v)}'
            f"</｜DSML｜parameter>\n" for k, v in a.items()) or "\n") + "</｜DSML｜invoke>\n" for n, a in calls)
        return f"\n\n<｜DSML｜tool_calls>\n{body}</｜DSML｜tool_calls>"


MINIMAX_NS = "]<]minimax[>["


def minimax_xml(value) -> str:
    """MiniMax M3's `to_xml`: mappings and lists as nested namespaced tags
    (None skipped), booleans as JSON, the rest as written."""
    if isinstance(value, dict):
        return "".join(f"{MINIMAX_NS}<{k}>{minimax_xml(v)}{MINIMAX_NS}</{k}>" for k, v in value.items()
                       if v is not None)
    if isinstance(value, list):
        return "".join(f"{MINIMAX_NS}<item>{minimax_xml(v)}{MINIMAX_NS}</item>" for v in value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return jdump(value)
    return str(value)


class MiniMaxM3(Format):
    tail = f"{MINIMAX_NS}</tool_call>"
    value_closer = f"{MINIMAX_NS}</city>"

    def section(self, calls):
        body = "".join(f'{MINIMAX_NS}<invoke name="{n}">' + "".join(
            f"{MINIMAX_NS}<{k}>{minimax_xml(v)}{MINIMAX_NS}</{k}>" for k, v in a.items() if v is not None)
            + f"{MINIMAX_NS}</invoke>\n" for n, a in calls)
        return f"{MINIMAX_NS}<tool_call>\n{body}{MINIMAX_NS}</tool_call>"

    def spaced(self, call):
        return self.section([call]).replace(f"{MINIMAX_NS}<", f"{MINIMAX_NS}\n<")


class Poolside(Glm45):
    """Poolside Laguna: GLM-4.5 tags, each call closed with a newline."""
    tail = "</tool_call>\n"

    def section(self, calls):
        return "".join(f"<tool_call>{n}\n" + "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{xml_value(v)}</arg_value>\n" for k, v in a.items())
            + "</tool_call>\n" for n, a in calls)


def minicpm_value(value) -> str:
    """MiniCPM5's template: a string with `<`, `&` or a newline in CDATA, other
    values as Jinja prints them (Python's repr)."""
    if isinstance(value, str):
        return f"<![CDATA[{value}]]>" if any(c in value for c in "<&\n") else value
    return pyval(value)


class MiniCPM5(Format):
    tail = "</function>"
    value_closer = "</param>"

    def section(self, calls):
        return "\n".join(f'<function name="{n}">' + "".join(
            f'<param name="{k}">{minicpm_value(v)}</param>' for k, v in a.items()) + "</function>"
            for n, a in calls)


class GigaChat3(Format):
    """GigaChat 3: the call is its own `function call` message, a JSON object."""

    def section(self, calls):
        return "".join("<|message_sep|>\n\nfunction call<|role_sep|>\n" + jdump({"name": n, "arguments": a})
                       for n, a in calls)


class Ling3(Glm45):
    """Ling 3: GLM-4.5 tags, a newline before each value and none after it."""

    def section(self, calls):
        return "\n".join(f"<tool_call>{n}\n" + "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{xml_value(v)}</arg_value>" for k, v in a.items())
            + "\n</tool_call>" for n, a in calls)


# Not covered (templates in the corpus, parsers in the engines): MiMo-VL (its
# template writes Hermes JSON calls, the `mimo` parsers read MiMo-V2's
# `<function=...><parameter=...>`); tencent-Hy3 (vLLM `hy_v3` takes the
# `:opensource` token suffix from the tokenizer config's `token_suffix`, which
# a tokenizer trained here lacks); Spark2.5 (no vLLM parser); muse-glimmer and
# Cohere2MoE (content sits in channel headers / `<|START_TEXT|>` wrappers that
# the plain content cases below do not write).
# Each family: template, (vLLM tool parser, vLLM reasoning parser), (SGLang
# detector, SGLang reasoning parser), template kwargs, reasoning markers
# (None: no reasoning; "prefilled": the prompt opens the block), and the
# markers a real vocabulary holds as special tokens.
FAMILIES = {
    "qwen3": dict(template="Qwen-Qwen3-0.6B.jinja", vllm=("hermes", "qwen3"), sglang=("qwen25", "qwen3"),
                  kwargs={"enable_thinking": True}, think=("<think>\n", "\n</think>\n\n", False), fmt=Hermes(),
                  think_off={"enable_thinking": False},
                  specials=["<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_start|>", "<|im_end|>"]),
    "qwen2.5": dict(template="Qwen-Qwen2.5-7B-Instruct.jinja", vllm=("hermes", None), sglang=("qwen25", None),
                    kwargs={}, think=None, fmt=Hermes(),
                    specials=["<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>"]),
    "mistral-nemo": dict(template="mistralai-Mistral-Nemo-Instruct-2407.jinja", vllm=("mistral", None),
                         sglang=("mistral", None), kwargs={}, think=None, fmt=MistralNemo(),
                         specials=["[TOOL_CALLS]", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]",
                                   "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "<s>", "</s>"]),
    "llama3.1": dict(template="meta-llama-Llama-3.1-8B-Instruct.jinja", vllm=("llama3_json", None),
                     sglang=("llama3", None), kwargs={}, think=None, fmt=Llama3(),
                     specials=["<|python_tag|>", "<|eot_id|>", "<|eom_id|>", "<|start_header_id|>",
                               "<|end_header_id|>", "<|begin_of_text|>"]),
    "deepseek-v3.1": dict(template="deepseek-ai-DeepSeek-V3.1.jinja", vllm=("deepseek_v31", "deepseek_v3"),
                          sglang=("deepseekv31", "deepseek-v3"), kwargs={"thinking": True},
                          think_off={"thinking": False},
                          think=("", "</think>", True), fmt=DeepSeekV31(),
                          specials=["<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                                    "<｜tool▁call▁end｜>", "<｜tool▁sep｜>", "<think>", "</think>",
                                    "<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>",
                                    "<｜begin▁of▁sentence｜>"]),
    "kimi-k2": dict(template="Kimi-K2-Thinking.jinja", vllm=("kimi_k2", "kimi_k2"), sglang=("kimi_k2", "kimi_k2"),
                    kwargs={}, think=("<think>", "</think>", False), fmt=KimiK2(),
                    specials=["<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                              "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<think>", "</think>",
                              "<|im_end|>", "<|im_assistant|>", "<|im_user|>", "<|im_middle|>", "<|im_system|>"]),
    "glm-4.6": dict(template="GLM-4.6.jinja", vllm=("glm45", "glm45"), sglang=("glm45", "glm45"),
                    kwargs={}, think=("<think>", "</think>\n", False), fmt=Glm45(),
                    think_off={"enable_thinking": False},
                    specials=["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                              "</arg_value>", "<think>", "</think>", "<|assistant|>", "<|user|>",
                              "<|observation|>", "<|system|>", "[gMASK]", "<sop>", "<|endoftext|>"]),
    "qwen3-coder": dict(template="Qwen3-Coder.jinja", vllm=("qwen3_coder", None), sglang=("qwen3_coder", None),
                        kwargs={}, think=None, fmt=Qwen3Coder(),
                        specials=["<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>"]),
    "minimax-m2": dict(template="MiniMax-M2.jinja", vllm=("minimax_m2", "minimax_m2"),
                       sglang=("minimax-m2", "minimax"), kwargs={}, think=("", "\n</think>\n\n", True),
                       fmt=MiniMaxM2(),
                       specials=["<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>",
                                 "]~b]", "[e~["]),
    "gpt-oss": dict(template="openai-gpt-oss-120b.jinja", vllm=("openai", "openai_gptoss"),
                    sglang=("gpt-oss", "gpt-oss"), kwargs={}, fmt=Harmony(), harmony=True,
                    think=("<|channel|>analysis<|message|>", "", False),
                    specials=["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>",
                              "<|return|>", "<|call|>"]),
    "qwen3.5": dict(template="Qwen3.5-4B.jinja", vllm=("qwen3_coder", "qwen3"), sglang=("qwen3_coder", "qwen3"),
                    kwargs={"enable_thinking": True}, think_off={"enable_thinking": False},
                    think=("", "\n</think>\n\n", True), fmt=Qwen3Coder(),
                    specials=["<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_start|>", "<|im_end|>"]),
    "step3.5": dict(template="StepFun3.5-Flash.jinja", vllm=("step3p5", "step3p5"), sglang=("step3p5", "step3p5"),
                    kwargs={}, think=("", "\n</think>\n", True), fmt=Step35(),
                    specials=["<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_start|>", "<|im_end|>"]),
    "glm-4.7": dict(template="GLM-4.7-Flash.jinja", vllm=("glm47", "glm47"), sglang=("glm47", "glm45"),
                    kwargs={}, think_off={"enable_thinking": False}, think=("", "</think>", True), fmt=Glm47(),
                    specials=["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                              "</arg_value>", "<think>", "</think>", "<|assistant|>", "<|user|>",
                              "<|observation|>", "<|system|>", "[gMASK]", "<sop>", "<|endoftext|>"]),
    "mistral-small-3.2": dict(template="Mistral-Small-3.2-24B-Instruct-2506.jinja", vllm=("mistral", None),
                              sglang=("mistral", None), kwargs={}, think=None, fmt=MistralCompact(),
                              specials=["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[INST]", "[/INST]",
                                        "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
                                        "[/TOOL_RESULTS]", "[TOOL_CONTENT]", "[SYSTEM_PROMPT]",
                                        "[/SYSTEM_PROMPT]", "<s>", "</s>"]),
    "hermes-3": dict(template="NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", vllm=("hermes", None),
                     sglang=("hermes", None), kwargs={}, think=None, fmt=Hermes(),
                     specials=["<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>"]),
    "lfm2.5": dict(template="LFM2.5-8B-A1B.jinja", vllm=("lfm2", None), sglang=("lfm2", None), kwargs={},
                   think=None, fmt=Lfm2(),
                   specials=["<|tool_call_start|>", "<|tool_call_end|>", "<|im_start|>", "<|im_end|>"]),
    "gemma-4": dict(template="google-gemma-4-31B-it.jinja", vllm=("gemma4", "gemma4"), sglang=("gemma4", "gemma4"),
                    kwargs={"enable_thinking": True}, think_off={"enable_thinking": False},
                    think=("<|channel>thought\n", "<channel|>", False), fmt=Gemma4(),
                    specials=["<|tool_call>", "<tool_call|>", '<|"|>', "<|channel>", "<channel|>", "<|turn>",
                              "<turn|>", "<|tool_response>", "<tool_response|>", "<bos>", "<eos>"]),
    "deepseek-v3.2": dict(template="deepseek-ai-DeepSeek-V3.2.jinja", vllm=("deepseek_v32", "deepseek_v3"),
                          sglang=("deepseekv32", "deepseek-v3"), kwargs={"thinking": True},
                          think_off={"thinking": False}, think=("", "</think>", True), fmt=Dsml(),
                          specials=["<think>", "</think>", "<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>",
                                    "<｜begin▁of▁sentence｜>"]),
    "kimi-k2-instruct": dict(template="moonshotai-Kimi-K2.jinja", vllm=("kimi_k2", None), sglang=("kimi_k2", None),
                             kwargs={}, think=None, fmt=KimiK2(),
                             specials=["<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                                       "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>",
                                       "<|im_end|>", "<|im_assistant|>", "<|im_user|>", "<|im_middle|>",
                                       "<|im_system|>"]),
    "apertus": dict(template="Apertus-8B-Instruct.jinja", vllm=("apertus", None), sglang=("apertus2509", None),
                    kwargs={}, think=None, fmt=Apertus(),
                    specials=["<|tools_prefix|>", "<|tools_suffix|>", "<|assistant_start|>", "<|assistant_end|>",
                              "<|user_start|>", "<|user_end|>", "<|system_start|>", "<|system_end|>"]),
    "kimi-k3": dict(template="Kimi-K3.jinja", vllm=("kimi_k3", "kimi_k3"), sglang=("kimi_k3", "kimi_k3"),
                    kwargs={"thinking": True}, think_off={"thinking": False},
                    think=("<|open|>think<|sep|>", "<|close|>think<|sep|><|open|>response<|sep|>", True),
                    fmt=KimiK3(), specials=["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>",
                                            "<|kimi_image_placeholder|>"]),
    "deepseek-v4": dict(template="deepseek-ai-DeepSeek-V4.jinja", vllm=("deepseek_v4", "deepseek_v4"),
                        sglang=("deepseekv4", "deepseek-v4"), kwargs={"thinking": True},
                        think_off={"thinking": False}, think=("", "</think>", True), fmt=DsmlV4(),
                        specials=["<think>", "</think>", "<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>",
                                  "<｜begin▁of▁sentence｜>"]),
    "minimax-m3": dict(template="MiniMax-M3.jinja", vllm=("minimax_m3", "minimax_m3"),
                       sglang=("minimax-m3", "minimax-m3"), kwargs={"thinking_mode": "enabled"},
                       think_off={"thinking_mode": "disabled"}, think=("<mm:think>", "</mm:think>", True),
                       fmt=MiniMaxM3(),  # the namespace marker is an added token, not a special one
                       specials=["<mm:think>", "</mm:think>", "]~b]", "[e~[", "]~!b["]),
    "ling-3": dict(template="inclusionai-ling-3.0-flash.jinja", vllm=("ling3", "ling3"), sglang=("ling3", "ling3"),
                   kwargs={"enable_thinking": True}, think_off={"enable_thinking": False},
                   think=("<think>", "</think>", True), fmt=Ling3(),
                   specials=["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                             "</arg_value>", "<think>", "</think>", "<role>", "</role>", "<|role_end|>"]),
    "laguna-xs-2.1": dict(template="poolside-Laguna-XS-2.1.jinja", vllm=("poolside_v1", "poolside_v1"),
                          sglang=("poolside_v1", "poolside_v1"), kwargs={"enable_thinking": True},
                          think_off={"enable_thinking": False}, think=("<think>", "\n</think>\n", True),
                          fmt=Poolside(),
                          specials=["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                                    "</arg_value>", "<think>", "</think>", "<assistant>", "</assistant>", "<user>",
                                    "</user>", "<system>", "</system>", "<tool_response>", "</tool_response>"]),
    "minicpm5": dict(template="openbmb-MiniCPM5-1B.jinja", vllm=("minicpm5", None), sglang=("minicpm5", None),
                     kwargs={"enable_thinking": False}, think=None, fmt=MiniCPM5(),
                     specials=["<|im_start|>", "<|im_end|>", "<think>", "</think>"]),
    "gigachat3": dict(template="GigaChat3-10B-A1.8B.jinja", vllm=("gigachat3", None), sglang=("gigachat3", None),
                      kwargs={}, think=None, fmt=GigaChat3(),
                      specials=["<|message_sep|>", "<|role_sep|>", "<|function_call|>", "<s>", "</s>"]),
}


def family_cases(name: str, spec: dict) -> list[dict]:
    """(case id, output) for one family: the shapes the brief names."""
    fmt: Format = spec["fmt"]
    harmony = spec.get("harmony", False)
    think = spec.get("think")

    def content(text):  # a final answer
        return f"<|channel|>final<|message|>{text}" if harmony else text

    def join(*pieces, sep="\n"):
        """Pieces the model writes one after the other: on harmony each is a
        message, the next opened with its role header."""
        if not harmony:
            return sep.join(pieces)
        out = pieces[0]
        for piece in pieces[1:]:
            out += ("" if out.endswith("<|call|>") else "<|end|>") + "<|start|>assistant" + piece
        return out

    def section(calls):
        text = fmt.section(calls)
        return text.removeprefix("<|start|>assistant") if harmony else text

    def malformed(call):
        text = fmt.malformed(call)
        return text.removeprefix("<|start|>assistant") if harmony else text

    out = [("content", content("Hello! How can I help you today?")),
           ("spaced-call", fmt.spaced(WEATHER) and fmt.spaced(WEATHER).removeprefix("<|start|>assistant")),
           ("call", section([WEATHER])),
           ("two-calls", section([WEATHER, TOKYO])),
           ("tricky-args", section([NOTE])),
           ("content+call", join(content("Let me check the weather."), section([WEATHER]))),
           ("call+trailing-text", join(section([WEATHER]), content("I asked for the weather."))),
           ("unknown-tool", section([UNKNOWN])),
           ("call-cut-at-end", section([WEATHER]).removesuffix(fmt.tail) if fmt.tail else None),
           ("call-cut-in-args", section([WEATHER]).split("Par")[0] + "Par"),
           ("malformed-args", malformed(WEATHER)),
           ("first-ok-second-malformed", join(section([TOKYO]), malformed(WEATHER))
            if isinstance(fmt, (Hermes, Glm45, Qwen3Coder, Harmony)) else None),
           ("ws-around-call", "\n\n" + section([WEATHER]) + "\n\n"),
           ("content+two-calls", join(content("Checking both."), section([WEATHER, TOKYO]), sep="\n\n")),
           ("empty-args", section([("get_weather", {})])),
           ("unicode-args", section([("get_weather", {"city": "東京 🌧", "days": 2})])),
           ("glued-content+call", join(content("Sure."), section([WEATHER]), sep="")),
           ("content+call+trailing", join(content("Let me check."), section([WEATHER]), content("One moment."))),
           ("stray-closer", None if harmony or not fmt.tail.strip() else "Hello there" + fmt.tail.strip()),
           ("numeric-text-in-string-param", section([("get_weather", {"city": "42"})])),
           ("non-integer-in-integer-param", section([("get_weather", {"city": "Paris", "days": "soon"})])),
           ("param-not-in-schema", section([("get_weather", {"city": "Paris", "unit": "celsius"})])),
           ("nested-object-arg", section([("save_note", {"text": "x", "meta": {"a": [1, {"b": None}], "ok": True}})])),
           ("value-with-edge-newlines", section([("save_note", {"text": "\nindented\n"})])),
           ("closer-text-in-value", section([("save_note", {"text": f"see {fmt.tail.strip() or '}]'} here"})])),
           ("prefixed-name", section([("functions.get_weather", {"city": "Paris"})])
            if not isinstance(fmt, (KimiK2, Harmony)) else None),
           ("fenced-json-call", None if harmony else
            "```json\n" + jdump({"name": "get_weather", "arguments": {"city": "Paris"}}) + "\n```"),
           ("bare-json-call", None if harmony or isinstance(fmt, Llama3) else
            jdump({"name": "get_weather", "arguments": {"city": "Paris"}})),
           ("content-call-content-call", join(content("First Paris."), section([WEATHER]),
                                              content("Then Tokyo."), section([TOKYO]))
            if isinstance(fmt, (Hermes, Glm45, Qwen3Coder, Harmony)) else None),
           ]
    plain_kwargs = spec["kwargs"]
    if think and not harmony:
        # A thinking family's plain cases: with thinking off where the template
        # has a switch, else after an empty block (the model always writes one).
        opener, closer, prefilled = think
        if "think_off" in spec:
            plain_kwargs = spec["think_off"]
        else:
            empty = closer if prefilled else opener + closer
            out = [(c, o if o is None else empty + o) for c, o in out]
    cases = [{"family": name, "case": c, "output": o, "kwargs": plain_kwargs} for c, o in out if o is not None]
    out = []
    if think:
        opener, closer, prefilled = think
        block = (lambda text: text + closer) if prefilled else (lambda text: opener + text + closer)
        out += [
            ("reasoning-unclosed+call", None if harmony else
             (opener if not prefilled else "") + "Let me look it up.\n" + section([WEATHER])),
            ("reasoning+content", join(block("The user wants the weather."), content("It is sunny in Paris."), sep="")),
            ("reasoning+call", join(block("I should call the tool."), section([WEATHER]), sep="")),
            ("reasoning+content+call", join(block("I should call the tool."), content("Let me check."),
                                            section([WEATHER]), sep="")),
            ("call-in-reasoning", None if harmony else
             block("I will call it. " + section([WEATHER]) + " ok") + content("Done.")),
            ("reasoning-unclosed", (opener if not prefilled else "") + "Still thinking about it"),
            ("reasoning-only", block("Just thinking.")),
            ("two-reasoning-blocks", None if prefilled or harmony else
             block("first") + "middle  " + block("second") + "done"),
            ("reasoning-ws", join(block("\n\n  spaced  \n\n"), content("\n\nanswer\n\n"), sep="")),
        ]
    return cases + [{"family": name, "case": c, "output": o, "kwargs": spec["kwargs"]} for c, o in out if o is not None]


def all_cases(families: list[str]) -> list[dict]:
    cases = []
    for name in families:
        cases += family_cases(name, FAMILIES[name])
    for i, case in enumerate(cases):
        case["id"] = i
    return cases


# -- engines (each runs in its own interpreter) --------------------------------

def tokenizer_for(spec: dict, texts: list[str]):
    """A byte-level BPE trained on `texts`, the family's markers as special
    tokens, as a transformers fast tokenizer with the chat template set."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=800, special_tokens=spec["specials"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(texts, trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, clean_up_tokenization_spaces=False)
    tok.add_special_tokens({"additional_special_tokens": spec["specials"]})
    tok.chat_template = template_source(spec)
    return tok


def template_source(spec: dict) -> str:
    return (CORPUS / spec["template"]).read_text()


def prompt_for(spec: dict, kwargs: dict) -> str:
    """The prompt the output continues, rendered with the case's template kwargs."""
    import chat_autoparser as ca

    template = ca.ChatTemplate.from_file(str(CORPUS / spec["template"]))
    return template.render([USER], tools=TOOLS, add_generation_prompt=True, **kwargs)


def message(content, reasoning, calls) -> dict:
    return {"content": content, "reasoning": reasoning, "calls": [[n, a] for n, a in calls]}


def run_vllm(cases: list[dict]) -> dict:
    import logging

    logging.disable(logging.WARNING)
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager

    results = {}
    for family, group in grouped(cases).items():
        spec = FAMILIES[family]
        tool_name, reasoning_name = spec["vllm"]
        prompts = {json.dumps(c["kwargs"]): prompt_for(spec, c["kwargs"]) for c in group}
        try:
            tok = tokenizer_for(spec, [template_source(spec), *prompts.values()] + [c["output"] for c in group])
            cls = ParserManager.get_parser(tool_parser_name=tool_name, reasoning_parser_name=reasoning_name,
                                           enable_auto_tools=True, model_name="m",
                                           is_harmony=spec.get("harmony", False))
        except Exception as e:  # noqa: BLE001 - reported per case
            for c in group:
                results[c["id"]] = {"error": f"setup: {type(e).__name__}: {e}"}
            continue
        harmony = None
        if spec.get("harmony"):  # vLLM parses harmony from the real encoding's token ids
            from openai_harmony import HarmonyEncodingName, load_harmony_encoding

            harmony = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
        for c in group:
            try:
                request = ChatCompletionRequest(model="m", messages=[USER], tools=TOOLS,
                                                chat_template_kwargs=c["kwargs"] or None)
                prompt = prompts[json.dumps(c["kwargs"])]
                prompt_ids = harmony.encode(prompt, allowed_special="all") if harmony else \
                    tok.encode(prompt, add_special_tokens=False)
                parser = cls(tok, request.tools, chat_template_kwargs=request.chat_template_kwargs, model_config=None)
                parser.set_prompt_token_ids(prompt_ids)
                ids = harmony.encode(c["output"], allowed_special="all") if harmony else \
                    tok.encode(c["output"], add_special_tokens=False)
                reasoning, content, calls = parser.parse(c["output"], request, enable_auto_tools=True,
                                                         model_output_token_ids=ids)
                results[c["id"]] = message(content, reasoning, [(f.name, f.arguments) for f in calls or []])
            except Exception as e:  # noqa: BLE001
                results[c["id"]] = {"error": f"{type(e).__name__}: {e}"}
    return results


def run_sglang(cases: list[dict]) -> dict:
    import logging
    from types import SimpleNamespace

    logging.disable(logging.WARNING)
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    from sglang.srt.parser.template_detection import detect_reasoning_pattern

    results = {}
    for family, group in grouped(cases).items():
        spec = FAMILIES[family]
        tool_name, reasoning_name = spec["sglang"]
        try:
            tok = tokenizer_for(spec, [template_source(spec)] + [c["output"] for c in group])
            server = object.__new__(OpenAIServingChat)
            force, config = detect_reasoning_pattern(tok.chat_template)
            server.tool_call_parser = tool_name
            server.reasoning_parser = reasoning_name
            server.tokenizer_manager = SimpleNamespace(tokenizer=tok)
            server.template_manager = SimpleNamespace(force_reasoning=force, reasoning_config=config)
            server._reasoning_detector = ReasoningParser(reasoning_name, True, tokenizer=tok).detector \
                if reasoning_name else None
            server._encoding_output = lambda: None
        except Exception as e:  # noqa: BLE001
            for c in group:
                results[c["id"]] = {"error": f"setup: {type(e).__name__}: {e}"}
            continue
        for c in group:
            try:
                req = ChatCompletionRequest(model="m", messages=[USER], tools=TOOLS,
                                            chat_template_kwargs=c["kwargs"] or None)
                text, reasoning = c["output"], None
                if reasoning_name and req.separate_reasoning:
                    parser = ReasoningParser(
                        model_type=reasoning_name, stream_reasoning=False,
                        force_reasoning=server.template_manager.force_reasoning
                        or server._get_reasoning_from_request(req),
                        request=req, tokenizer=tok, tool_call_parser_active=server._tool_call_parsing_active(req))
                    reasoning, text = parser.parse_non_stream(text)
                calls = []
                if server._tool_call_parsing_active(req):
                    got, text, _ = server._process_tool_calls(
                        text, server._effective_tools(req), {"type": "stop", "matched": None}, req.tool_choice, 0,
                        req._response_parser_prefix, False)
                    calls = [(t.function.name, t.function.arguments) for t in got or []]
                results[c["id"]] = message(text, reasoning, calls)
            except Exception as e:  # noqa: BLE001
                results[c["id"]] = {"error": f"{type(e).__name__}: {e}"}
    return results


# Our policies compared: the two presets, and `compatible` with
# `foreign_markers: drop` (fences, other formats' wrappers and lone closers
# read as markup and left out: the preset's reading before it took `text`).
POLICIES = {
    "compatible": "compatible",
    "lossless": "lossless",
    "compatible+drop": {"preset": "compatible", "foreign_markers": "drop"},
}


def run_ours(cases: list[dict]) -> dict:
    """Ours under each of POLICIES, with the Python package: {policy: {id: message}}."""
    import chat_autoparser as ca

    out = {name: {} for name in POLICIES}
    for family, group in grouped(cases).items():
        spec = FAMILIES[family]
        template = ca.ChatTemplate.from_file(str(CORPUS / spec["template"]))
        for policy in out:
            for c in group:
                try:
                    parser = template.parser(tools=TOOLS, prompt=prompt_for(spec, c["kwargs"]),
                                             policy=POLICIES[policy])
                    m = parser.parse(c["output"])
                    out[policy][c["id"]] = message(m.get("content"), m.get("reasoning_content"), [
                        (t["function"]["name"], t["function"]["arguments"]) for t in m.get("tool_calls") or []])
                except Exception as e:  # noqa: BLE001
                    out[policy][c["id"]] = {"error": f"{type(e).__name__}: {e}"}
    return out


def run_ours_cli(cli: str, cases: list[dict]) -> dict:
    """Ours under each of POLICIES, with the CLI's `batch` (reflects src/ as built)."""
    lines, keys = [], []
    for policy in POLICIES:
        for c in cases:
            spec = FAMILIES[c["family"]]
            lines.append(json.dumps({"op": "parse", "template": str(CORPUS / spec["template"]), "tools": TOOLS,
                                     "kwargs": c["kwargs"] or None, "input": c["output"],
                                     "policy": POLICIES[policy],
                                     "enable_thinking": c["kwargs"].get("enable_thinking")}))
            keys.append((policy, c["id"]))
    done = subprocess.run([cli, "batch"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    out = {name: {} for name in POLICIES}
    for (policy, cid), line in zip(keys, done.stdout.splitlines()):
        r = json.loads(line)
        if not r["ok"]:
            out[policy][cid] = {"error": r["error"]["message"]}
            continue
        m = r["result"]
        out[policy][cid] = message(m.get("content"), m.get("reasoning_content"), [
            (t["function"]["name"], t["function"]["arguments"]) for t in m.get("tool_calls") or []])
    return out


def grouped(cases: list[dict]) -> dict[str, list[dict]]:
    groups = defaultdict(list)
    for c in cases:
        groups[c["family"]].append(c)
    return groups


# -- comparison ---------------------------------------------------------------

def norm_args(text):
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return f"RAW:{text}"


def key(m: dict):
    """(content, calls) as compared; None for an engine error."""
    if m is None or "error" in m:
        return None
    return ((m["content"] or "").strip(), tuple((n, norm_args(a)) for n, a in m["calls"]))


def reasoning_key(m: dict):
    if m is None or "error" in m:
        return None
    return (m["reasoning"] or "").strip()


def cause(case: str, want, got) -> str:
    """A short label for how `got` differs from the engines' `want`."""
    if got is None:
        return f"{case}: ours errors"
    (wc, wcalls), (gc, gcalls) = want, got
    parts = []
    if len(wcalls) != len(gcalls):
        parts.append(f"calls {len(wcalls)} vs ours {len(gcalls)}")
    elif [n for n, _ in wcalls] != [n for n, _ in gcalls]:
        parts.append("call names differ")
    elif wcalls != gcalls:
        raw_w = any(a.startswith("RAW:") for _, a in wcalls)
        raw_g = any(a.startswith("RAW:") for _, a in gcalls)
        parts.append("arguments differ" + (" (engines raw)" if raw_w else "") + (" (ours raw)" if raw_g else ""))
    if wc != gc:
        if not wc:
            parts.append("ours has content, engines none")
        elif not gc:
            parts.append("ours no content, engines some")
        elif wc in gc:
            parts.append("ours keeps extra content")
        elif gc in wc:
            parts.append("ours drops content")
        else:
            parts.append("content differs")
    return f"{case}: " + "; ".join(parts)


def compare(cases, vllm, sglang, ours) -> dict:
    rows = defaultdict(Counter)
    groups = defaultdict(list)      # engines agree, compatible differs
    splits = defaultdict(list)      # engines disagree
    reasoning_groups = defaultdict(list)
    for c in cases:
        cid, fam = str(c["id"]), c["family"]
        v, s = key(vllm.get(cid)), key(sglang.get(cid))
        o, lossless = key(ours["compatible"].get(cid)), key(ours["lossless"].get(cid))
        as_drop = key(ours["compatible+drop"].get(cid))
        row = rows[fam]
        row["cases"] += 1
        row["vllm errors"] += v is None
        row["sglang errors"] += s is None
        if v is not None and v == s:
            row["agree"] += 1
            row["ours = agreement"] += o == v
            row["lossless = agreement"] += lossless == v
            row["drop = agreement"] += as_drop == v
            if o != v:
                groups[cause(c["case"], v, o)].append((c, vllm[cid], ours["compatible"].get(cid)))
        elif v is not None or s is not None:
            row["disagree"] += 1
            row["ours = one"] += o is not None and (o == v or o == s)
            row["drop = one"] += as_drop is not None and (as_drop == v or as_drop == s)
            row["ours = vLLM"] += o is not None and o == v
            row["ours = SGLang"] += o is not None and o == s
            splits[c["case"]].append((c, vllm.get(cid), sglang.get(cid), ours["compatible"].get(cid)))
        rv, rs, ro = reasoning_key(vllm.get(cid)), reasoning_key(sglang.get(cid)), \
            reasoning_key(ours["compatible"].get(cid))
        if rv is not None and rv == rs:
            row["reasoning agree"] += 1
            row["ours reasoning = agreement"] += ro == rv
            if ro != rv:
                reasoning_groups[c["case"]].append((c, vllm[cid], ours["compatible"].get(cid)))
    return {"rows": rows, "groups": groups, "splits": splits, "reasoning": reasoning_groups}


def short(m) -> str:
    if m is None:
        return "(missing)"
    if "error" in m:
        return f"error: {m['error'][:160]}"
    parts = []
    if m.get("reasoning"):
        parts.append(f"reasoning={m['reasoning']!r}")
    parts.append(f"content={m['content']!r}")
    if m["calls"]:
        parts.append("calls=" + ", ".join(f"{n}({a})" for n, a in m["calls"]))
    return " ".join(parts)


def three_engines(cases, vllm, sglang, trtllm, ours) -> dict:
    """Where TensorRT-LLM has a parser for the family and at least two of the three engines
    agree: how often each engine, and ours under each policy, equals that majority; and
    where all three agree, how often ours does."""
    stats = Counter()
    misses = defaultdict(list)  # compatible differs from the majority
    for c in cases:
        cid = str(c["id"])
        third = trtllm.get(cid)
        if not third:
            continue
        keys = {"vLLM": key(vllm.get(cid)), "SGLang": key(sglang.get(cid)), "TensorRT-LLM": key(third)}
        top, votes = Counter(k for k in keys.values() if k is not None).most_common(1)[0]
        stats["cases"] += 1
        if votes < 2:
            continue
        stats["majority"] += 1
        stats["all three"] += votes == 3
        for name, k in keys.items():
            stats[name] += k == top
        for policy, got in ours.items():
            hit = key(got.get(cid)) == top
            stats[policy] += hit
            stats[policy + " all three"] += hit and votes == 3
        mine = ours["compatible"].get(cid)
        if key(mine) != top:
            for name, k in keys.items():
                stats["= " + name + " where ours differs"] += k == top
            label = f"{cause(c['case'], top, key(mine))} ({votes} engines)"
            misses[label].append((c, [n for n, k in keys.items() if k == top], mine))
    stats["misses"] = misses
    return stats


def three_engine_lines(s: Counter) -> list[str]:
    pct = lambda a, b: f"{100 * a / b:.1f}%" if b else "-"  # noqa: E731
    m, a = s["majority"], s["all three"]
    rows = [f"| {name} | {s[name]}/{m} ({pct(s[name], m)}) | |" for name in ("vLLM", "SGLang", "TensorRT-LLM")]
    rows += [f"| ours, `{p}` | {s[p]}/{m} ({pct(s[p], m)}) | {s[p + ' all three']}/{a} ({pct(s[p + ' all three'], a)}) |"
             for p in POLICIES]
    return ["## Three engines: vLLM, SGLang and TensorRT-LLM", "",
            "TensorRT-LLM's own parsers (`tools/parity_trtllm.py`: its tool and reasoning parser sources, "
            "the rest of its package stood in for) on the families it has a text parser for: "
            f"{s['cases']} cases, of which {m} have a majority (at least two engines agree) and {a} have "
            "all three agreeing.", "",
            "| | equals the majority | equals all three, where they agree |", "|---|---|---|", *rows, "",
            "### Where `compatible` differs from the majority", "",
            "By how ours differs, with the engines in the majority; one example each.", "",
            *three_engine_misses(s["misses"]), ""]


def three_engine_misses(misses: dict) -> list[str]:
    out = []
    for label, items in sorted(misses.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        c, majority, mine = items[0]
        fams = ", ".join(sorted({i[0]["family"] for i in items}))
        out.append(f"- **{label}** — {len(items)} ({fams}); e.g. {c['family']} "
                   f"`{json.dumps(c['output'], ensure_ascii=False)[:160]}`: majority ({', '.join(majority)}); "
                   f"ours {short(mine)[:200]}")
    return out


def report(result: dict, command: str, ours_from: str, engine_errors: dict) -> str:
    rows = result["rows"]
    out = ["# Cross-engine parity (generated)", "",
           "Generated by `tools/parity.py` (do not edit by hand): model outputs written by the harness "
           "from each family's template markers, parsed by vLLM 0.33's and SGLang 0.5.23's own parsers "
           "(tool + reasoning, as their non-streaming chat serving composes them) and by ours "
           "(`compatible`, and `lossless` for reference). Compared: content stripped (None = \"\"), "
           "calls as (name, arguments as parsed JSON); reasoning separately. No engine test fixture "
           "is read.", "", f"Command: `{command}` (about a minute; engines in their pinned venvs, "
           "`~/.cache/chat-autoparser/{vllm-0.33.0,sglang-0.5.23}/venv`).", "", f"Ours: {ours_from}.", "",
           "| family | cases | vLLM = SGLang | compatible = both | lossless = both | engines split | "
           "compatible = one (= vLLM / = SGLang) | reasoning: engines agree | ours = them | engine errors (vLLM/SGLang) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    total = Counter()
    for fam in sorted(rows):
        r = rows[fam]
        total.update(r)
        out.append(f"| {fam} | {r['cases']} | {r['agree']} | {r['ours = agreement']} | {r['lossless = agreement']} | "
                   f"{r['disagree']} | {r['ours = one']} ({r['ours = vLLM']} / {r['ours = SGLang']}) | {r['reasoning agree']} | {r['ours reasoning = agreement']} | "
                   f"{r['vllm errors']}/{r['sglang errors']} |")
    t = total
    out.append(f"| **all** | {t['cases']} | {t['agree']} | {t['ours = agreement']} | {t['lossless = agreement']} | "
               f"{t['disagree']} | {t['ours = one']} ({t['ours = vLLM']} / {t['ours = SGLang']}) | {t['reasoning agree']} | {t['ours reasoning = agreement']} | "
               f"{t['vllm errors']}/{t['sglang errors']} |")
    out += ["", "Limits: the non-streaming path only; one request shape (two tools, `tool_choice: auto`); "
            "tokenizers are BPEs trained here with each family's markers as special tokens (vLLM's harmony "
            "path gets the real `openai_harmony` encoding's ids); plain cases of a thinking family run with "
            "thinking off where the template has a switch (`think_off`), else after an empty reasoning block. "
            "\"Agree\" compares (content, calls); reasoning is its own column."]
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "-"  # noqa: E731
    out += ["", f"compatible equals the engines where they agree: {t['ours = agreement']}/{t['agree']} "
            f"({pct(t['ours = agreement'], t['agree'])}); equals one of them where they split: "
            f"{t['ours = one']}/{t['disagree']} ({pct(t['ours = one'], t['disagree'])}). "
            f"With `foreign_markers: drop` over `compatible` (fences, other formats' wrappers and lone "
            f"closers read and left out): {t['drop = agreement']}/{t['agree']} "
            f"({pct(t['drop = agreement'], t['agree'])}) where they agree, {t['drop = one']}/{t['disagree']} "
            f"({pct(t['drop = one'], t['disagree'])}) where they split.", ""]

    if result.get("three"):
        out += three_engine_lines(result["three"])
    out += ["## Where vLLM and SGLang agree and `compatible` differs", "",
            "Grouped by case shape and how ours differs; one example each (families listed).", ""]
    for label, items in sorted(result["groups"].items(), key=lambda kv: (-len(kv[1]), kv[0])):
        c, theirs, ours = items[0]
        fams = ", ".join(sorted({i[0]["family"] for i in items}))
        out += [f"### {label} — {len(items)} ({fams})", "",
                f"- output ({c['family']}): `{json.dumps(c['output'], ensure_ascii=False)}`",
                f"- engines: {short(theirs)}", f"- ours: {short(ours)}", ""]
    out += ["## Reasoning: engines agree, ours differs", ""]
    for label, items in sorted(result["reasoning"].items(), key=lambda kv: (-len(kv[1]), kv[0])):
        c, theirs, ours = items[0]
        fams = ", ".join(sorted({i[0]["family"] for i in items}))
        out += [f"- **{label}** — {len(items)} ({fams}): output `{json.dumps(c['output'], ensure_ascii=False)}`; "
                f"engines reasoning {(theirs['reasoning'] or '')!r}; ours "
                f"{((ours or {}).get('reasoning') or '')!r}"]
    out += ["", "## Where the engines split", ""]
    for label, items in sorted(result["splits"].items(), key=lambda kv: (-len(kv[1]), kv[0])):
        fams = ", ".join(sorted({i[0]["family"] for i in items}))
        c, v, s, o = items[0]
        like_v = sum(key(i[3]) == key(i[1]) for i in items)
        like_s = sum(key(i[3]) == key(i[2]) for i in items)
        out += [f"- **{label}** — {len(items)}, ours = vLLM {like_v}, = SGLang {like_s} ({fams}); e.g. {c['family']} "
                f"`{json.dumps(c['output'], ensure_ascii=False)[:200]}`: vLLM {short(v)}; SGLang {short(s)}; "
                f"ours {short(o)}"]
    out += ["", "## Where the engines split and `compatible` equals neither", ""]
    neither = defaultdict(list)
    for items in result["splits"].values():
        for c, v, s, o in items:
            if key(o) not in (key(v), key(s)):
                neither[c["case"]].append((c, v, s, o))
    for label, items in sorted(neither.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        fams = ", ".join(sorted({i[0]["family"] for i in items}))
        c, v, s, o = items[0]
        out += [f"- **{label}** — {len(items)} ({fams}); e.g. {c['family']} "
                f"`{json.dumps(c['output'], ensure_ascii=False)[:200]}`: vLLM {short(v)}; SGLang {short(s)}; "
                f"ours {short(o)}"]
    if engine_errors:
        out += ["", "## Engine errors (first per family)", ""]
        for (engine, fam), msg in sorted(engine_errors.items()):
            out.append(f"- {engine} / {fam}: `{msg[:200]}`")
    return "\n".join(out) + "\n"


# -- driver -------------------------------------------------------------------

def engine_main(engine: str, cases_path: str, out_path: str, cli: str | None) -> None:
    cases = json.loads(Path(cases_path).read_text())
    run = {"vllm": run_vllm, "sglang": run_sglang, "ours": run_ours}[engine]
    Path(out_path).write_text(json.dumps(run(cases), ensure_ascii=False))


def run_main(args) -> int:
    families = args.families.split(",") if args.families else list(FAMILIES)
    cases = all_cases(families)
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c["case"] in wanted]
    work = Path(tempfile.mkdtemp(prefix="parity."))
    (work / "cases.json").write_text(json.dumps(cases, ensure_ascii=False))
    me = str(Path(__file__).resolve())
    jobs = {"vllm": args.vllm_python, "sglang": args.sglang_python}
    if not args.cli:
        jobs["ours"] = args.ours_python
    started = time.time()
    procs = {}
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "ERROR", "TOKENIZERS_PARALLELISM": "false"}
    for name, python in jobs.items():
        procs[name] = subprocess.Popen([python, me, "engine", name, str(work / "cases.json"),
                                        str(work / f"{name}.json")], env=env, stderr=subprocess.PIPE, text=True)
    for name, p in procs.items():
        _, err = p.communicate()
        if p.returncode:
            sys.stderr.write(err[-4000:])
            raise SystemExit(f"{name} step failed ({p.returncode})")
    got = {name: json.loads((work / f"{name}.json").read_text()) for name in procs}
    if args.cli:
        got["ours"] = {p: {str(k): v for k, v in m.items()} for p, m in run_ours_cli(args.cli, cases).items()}
    engine_errors = {}
    for engine in ("vllm", "sglang"):
        for c in cases:
            m = got[engine].get(str(c["id"]))
            if m and "error" in m:
                engine_errors.setdefault((engine, c["family"]), m["error"])
    result = compare(cases, got["vllm"], got["sglang"], got["ours"])
    if Path(args.trtllm_src).is_dir():
        out = work / "trtllm.json"
        subprocess.run([args.sglang_python, str(Path(me).with_name("parity_trtllm.py")), str(work / "cases.json"),
                        str(out), "--src", args.trtllm_src], check=True)
        got["trtllm"] = json.loads(out.read_text())
        result["three"] = three_engines(cases, got["vllm"], got["sglang"], got["trtllm"], got["ours"])
    command = "python3 tools/parity.py run" + (f" --families {args.families}" if args.families else "") + \
        (f" --cases {args.cases}" if args.cases else "") + \
        (f" --cli {args.cli}" if args.cli else "") + (f" --out {args.out}" if args.out else "")
    if args.cli:
        ours_from = f"the CLI's `batch` ({args.cli})"
    else:
        version = subprocess.run([args.ours_python, "-c", "import chat_autoparser as ca; print(ca.__version__)"],
                                 capture_output=True, text=True).stdout.strip() or "?"
        ours_from = f"the Python package `chat_autoparser` {version} installed in the venv named by `--ours-python`"
    text = report(result, command, ours_from, engine_errors)
    if args.out:
        Path(args.out).write_text(text)
    if args.dump:
        Path(args.dump).write_text(json.dumps({"cases": cases, **got}, ensure_ascii=False, indent=1))
    print(text)
    print(f"({len(cases)} cases, {time.time() - started:.0f}s; raw results in {work})", file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run every engine and compare")
    r.add_argument("--families", help=f"comma-separated, of: {','.join(FAMILIES)}")
    r.add_argument("--cases", help="comma-separated case names to keep (e.g. stray-closer,malformed-args)")
    r.add_argument("--out", help="write the Markdown report here (docs/parity.md)")
    r.add_argument("--dump", help="write cases and every parse as JSON here")
    r.add_argument("--vllm-python", default=str(VLLM_PY))
    r.add_argument("--sglang-python", default=str(SGLANG_PY))
    r.add_argument("--trtllm-src", default=str(TRTLLM_SRC),
                   help="TensorRT-LLM's parser sources, the third engine (skipped when absent)")
    r.add_argument("--ours-python", default=str(VLLM_PY), help="a python with chat_autoparser installed")
    r.add_argument("--cli", help="parse ours with this chat-autoparser binary's `batch` instead")
    e = sub.add_parser("engine", help="(internal) parse CASES with one engine")
    e.add_argument("engine", choices=["vllm", "sglang", "ours"])
    e.add_argument("cases")
    e.add_argument("out")
    c = sub.add_parser("cases", help="print the cases as JSON")
    c.add_argument("--families")
    args = ap.parse_args()
    if args.cmd == "engine":
        engine_main(args.engine, args.cases, args.out, None)
        return 0
    if args.cmd == "cases":
        print(json.dumps(all_cases(args.families.split(",") if args.families else list(FAMILIES)),
                         ensure_ascii=False, indent=1))
        return 0
    return run_main(args)


if __name__ == "__main__":
    sys.exit(main())
