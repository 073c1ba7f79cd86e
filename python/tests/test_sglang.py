"""`chat_autoparser.sglang` inside SGLang: the round-trip outputs of every
shipped template and every corpus template whose analysis finds tools,
driven through SGLang's own `ReasoningParser` and `FunctionCallParser` the
way its chat serving drives them, equal our own parse.

The serving steps are SGLang's own methods of `OpenAIServingChat`, called
on an instance that holds only what they read (parser names, the
tokenizer, the template probe): batch as its non-streaming handler does
(`ReasoningParser.parse_non_stream`, then `_process_tool_calls`), streamed
as `_generate_stream_content` does (`_process_reasoning_stream`, then
`_process_tool_call_stream` and `_check_for_unstreamed_tool_args`, the last
delta flushing both), the SSE chunks accumulated as the OpenAI client
accumulates them. The stream is the output tokenized by a byte-level BPE
trained here (the template's markers are special tokens) and detokenized
one token per delta and three tokens per delta, holding back a cut UTF-8
character as SGLang's detokenizer does.

Runs in SGLang's virtualenv (`tools/sglang_env.sh`); elsewhere it skips.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

sglang = pytest.importorskip(
    "sglang", reason="SGLang is not installed here: run it in tools/sglang_env.sh's venv"
)

import chat_autoparser as ca  # noqa: E402
from chat_autoparser import sglang as adapter  # noqa: E402
from conftest import template_sets  # noqa: E402
from roundtrip import TOOLS, USER, outputs
from roundtrip import accumulate as accumulate_ours  # noqa: E402
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, Tool  # noqa: E402
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat  # noqa: E402
from sglang.srt.function_call.function_call_parser import FunctionCallParser  # noqa: E402
from sglang.srt.parser.reasoning_parser import ReasoningParser  # noqa: E402
from sglang.srt.parser.response_template import grammar_holds_calls  # noqa: E402
from sglang.srt.parser.template_detection import detect_reasoning_pattern  # noqa: E402

NAME = adapter.NAME
CASES = [(label, path) for label, paths in template_sets() for path in paths]


# -- a tokenizer for the template -------------------------------------------

def markers(template: ca.ChatTemplate) -> list[str]:
    """The template's markers (what a model's vocabulary holds as special tokens)."""
    found = set()
    try:
        found.update(template.grammar(tools=TOOLS, format="structural-tag")["preserved_tokens"])
    except ca.Error:
        pass
    analysis = template.analyze()
    for text in (analysis["reasoning"].get("start"), analysis["reasoning"].get("end"),
                 template.bos_token, template.eos_token):
        if text and text.strip():
            found.add(text.strip())
    return sorted(found)


def tokenizer_for(template: ca.ChatTemplate, texts: list[str]):
    """A byte-level BPE trained on `texts`, the template's markers as special
    tokens, wrapped as a transformers fast tokenizer with chat_template set."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=markers(template),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=template.bos_token, eos_token=template.eos_token,
    )
    fast.chat_template = template.source
    return fast


def detokenized(tokenizer, text: str, per_delta: int) -> Iterator[str]:
    """`text` as a server streams it: tokenized, then decoded `per_delta`
    tokens at a time, a cut UTF-8 character held back until complete."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    sent = ""
    for end in range(per_delta, len(ids) + per_delta, per_delta):
        decoded = tokenizer.decode(ids[:end], skip_special_tokens=False)
        if decoded.endswith("\ufffd") and end < len(ids):
            continue
        yield decoded[len(sent):]
        sent = decoded
    assert sent == text, "the tokenizer does not round-trip the output"


# -- SGLang's serving, as its handler calls it ------------------------------

def serving(tokenizer) -> OpenAIServingChat:
    """An OpenAIServingChat holding what its parsing methods read."""
    server = object.__new__(OpenAIServingChat)
    force, config = detect_reasoning_pattern(tokenizer.chat_template)
    server.tool_call_parser = NAME
    server.reasoning_parser = NAME
    server.tokenizer_manager = SimpleNamespace(tokenizer=tokenizer)
    server.template_manager = SimpleNamespace(force_reasoning=force, reasoning_config=config)
    server._reasoning_detector = ReasoningParser(NAME, True, tokenizer=tokenizer).detector
    server._encoding_output = lambda: None
    return server


def request(options: dict, **fields: Any) -> ChatCompletionRequest:
    kwargs = {"enable_thinking": True, "reasoning_effort": "high"} if options.get("enable_thinking") else None
    fields.setdefault("tools", TOOLS)
    return ChatCompletionRequest(model="m", messages=[USER], chat_template_kwargs=kwargs, **fields)


def force_reasoning(server: OpenAIServingChat, req: ChatCompletionRequest) -> bool:
    return server.template_manager.force_reasoning or server._get_reasoning_from_request(req)


def batch(server: OpenAIServingChat, req: ChatCompletionRequest, text: str) -> dict:
    """The non-streaming handler's parse (serving_chat's `_build_chat_response`)."""
    reasoning, calls = None, None
    if req.separate_reasoning:
        parser = ReasoningParser(
            model_type=NAME, stream_reasoning=False, force_reasoning=force_reasoning(server, req),
            request=req, tokenizer=server.tokenizer_manager.tokenizer,
            tool_call_parser_active=server._tool_call_parsing_active(req),
        )
        reasoning, text = parser.parse_non_stream(text)
    if not server._tool_call_parsing_active(req):
        return message(text, reasoning, [])
    calls, text, _ = server._process_tool_calls(
        text, server._effective_tools(req), {"type": "stop", "matched": None}, req.tool_choice, 0,
        req._response_parser_prefix,
        grammar_holds_calls(req._response_parser_tool_grammar, req._response_parser_grammar_start),
    )
    return message(text, reasoning, [
        {"name": c.function.name, "arguments": c.function.arguments, "id": c.id} for c in calls or []
    ])


def streamed(server: OpenAIServingChat, req: ChatCompletionRequest, pieces: list[str]) -> dict:
    """The streaming handler's parse (`_generate_stream_content`), its SSE
    chunks accumulated as the OpenAI client does."""
    reasoning_parsers: dict = {}
    tool_parsers: dict = {}
    has_calls: dict = {}
    chunks: list[str] = []

    async def run() -> None:
        for n, delta in enumerate(pieces):
            finish = "stop" if n == len(pieces) - 1 else None
            content = {"meta_info": {"id": "chatcmpl-1"}, "text": delta}
            if req.separate_reasoning:
                reasoning, delta = server._process_reasoning_stream(0, delta, reasoning_parsers, content, req, finish)
                if reasoning:
                    chunks.append(json.dumps({"choices": [{"delta": {"reasoning_content": reasoning}}]}))
            if not server._tool_call_parsing_active(req):
                if delta:
                    chunks.append(json.dumps({"choices": [{"delta": {"content": delta}}]}))
                continue
            async for chunk in server._process_tool_call_stream(
                0, delta, tool_parsers, content, req, has_calls, created=0, flush=finish is not None,
            ):
                chunks.append(chunk.removeprefix("data: ").strip())
            if finish and 0 in tool_parsers:
                rest = server._check_for_unstreamed_tool_args(tool_parsers[0], content, req, 0, created=0)
                if rest:
                    chunks.append(rest.removeprefix("data: ").strip())

    asyncio.run(run())
    return accumulate([json.loads(c)["choices"][0]["delta"] for c in chunks])


def accumulate(deltas: list[dict]) -> dict:
    content, reasoning, calls = "", "", []
    for d in deltas:
        content += d.get("content") or ""
        reasoning += d.get("reasoning_content") or ""
        for piece in d.get("tool_calls") or []:
            while len(calls) <= piece["index"]:
                calls.append({"name": "", "arguments": "", "id": None})
            call = calls[piece["index"]]
            call["id"] = call["id"] or piece.get("id")
            call["name"] += (piece.get("function") or {}).get("name") or ""
            call["arguments"] += (piece.get("function") or {}).get("arguments") or ""
    return message(content, reasoning, calls)


def message(content: str | None, reasoning: str | None, calls: list[dict]) -> dict:
    """SGLang's message in our shape; its call ids are its own (minted)."""
    assert all(c["id"] and c["id"].startswith("call_") for c in calls), calls
    return ours({
        "content": content, "reasoning_content": reasoning,
        "tool_calls": [{"function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls],
    })


def ours(m: dict) -> dict:
    """A message as compared: empty fields as absent, call ids aside."""
    return {
        "content": m.get("content") or "",
        "reasoning_content": m.get("reasoning_content") or "",
        "tool_calls": [(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []],
    }


# -- the comparison ----------------------------------------------------------

def tool_templates() -> list[tuple[str, Any]]:
    found = []
    for label, path in CASES:
        template = ca.ChatTemplate.from_file(path)
        try:
            if template.analyze().get("tools"):
                found.append((label, path))
        except ca.Error:
            continue
    return found


TOOL_CASES = tool_templates()
MISSES: list[str] = []


@pytest.mark.parametrize("label,path", TOOL_CASES, ids=[f"{label}/{p.stem}" for label, p in TOOL_CASES])
def test_sglang_parse_equals_ours(label, path, report):
    template = ca.ChatTemplate.from_file(path)
    cases = [(n, o, t) for n, o, t in outputs(template) if n not in ("content", "reasoning+content")]
    if not cases:
        pytest.skip("no round-trip output with calls renders")
    tokenizer = tokenizer_for(template, [t for _, _, t in cases])
    server = serving(tokenizer)
    misses = []
    for name, options, text in cases:
        want = ours(template.parser(**options).parse(text))
        req = request(options)
        for how, result in through_sglang(server, req, tokenizer, text).items():
            report[f"{label} SGLang round-trip tool outputs ({how})"] += 1
            if result == want:
                report[f"{label} SGLang round-trip tool outputs ({how}) equal to ours"] += 1
            else:
                misses.append(f"{path.stem}/{name} ({how}): SGLang {result} != ours {want}")
    MISSES.extend(misses)
    for miss in misses:  # every one in the run's summary
        report[f"MISS {miss[:300]}"] += 1
    if label == "shipped":
        assert not misses, "\n".join(misses)


def through_sglang(server, req, tokenizer, text: str) -> dict:
    """The output's message through SGLang: batch, 1 and 3 tokens per delta."""
    return {
        "batch": batch(server, req, text),
        "1 token per delta": streamed(server, req, list(detokenized(tokenizer, text, 1))),
        "3 tokens per delta": streamed(server, req, list(detokenized(tokenizer, text, 3))),
    }


@pytest.mark.parametrize("label,path", TOOL_CASES, ids=[f"{label}/{p.stem}" for label, p in TOOL_CASES])
def test_other_request_shapes_equal_ours(label, path, report):
    """The paths besides reasoning + tools: a request with no tools (no
    tool parser runs, the reasoning detector's content is final), and
    `separate_reasoning: false` (no reasoning parser runs; the tool
    detector keeps reasoning inline, as ours with reasoning="inline")."""
    template = ca.ChatTemplate.from_file(path)
    cases = list(outputs(template))
    tokenizer = tokenizer_for(template, [t for _, _, t in cases])
    server = serving(tokenizer)
    misses = []
    for name, options, text in cases:
        shapes = {"no tools": (request(options, tools=None), {"tools": None})}
        if name not in ("content", "reasoning+content"):
            shapes["cut at 60%"] = (request(options), {})
            shapes["stream_reasoning false"] = (request(options, stream_reasoning=False), {})
            # No reasoning parser runs: the tool detector keeps reasoning
            # in the content as written, assuming no prompt.
            shapes["separate_reasoning false"] = (
                request(options, separate_reasoning=False), {"reasoning": "inline", "prompt": ""}
            )
        for shape, (req, change) in shapes.items():
            # Cut: max_tokens ended the output, maybe inside a call.
            output = text[: len(text) * 3 // 5] if shape == "cut at 60%" else text
            want = ours(template.parser(**{**options, **change}).parse(output))
            if shape == "no tools" and want["tool_calls"]:
                continue  # without tools SGLang runs no tool parser: calls stay text
            for how, result in through_sglang(server, req, tokenizer, output).items():
                if how != "batch" and shape == "cut at 60%":
                    # A call the cut leaves open was streamed before it was
                    # withdrawn: the reference is our own stream of the pieces.
                    pieces = detokenized(tokenizer, output, 1 if how.startswith("1") else 3)
                    want = ours(accumulate_ours(list(ca.deltas(template.parser(**options), pieces))))
                report[f"{label} SGLang outputs, {shape} ({how})"] += 1
                if result == want:
                    report[f"{label} SGLang outputs, {shape} ({how}) equal to ours"] += 1
                else:
                    misses.append(f"{path.stem}/{name} {shape} ({how}): SGLang {result} != ours {want}")
    assert not misses, "\n".join(misses)


def test_sglang_corpus_rate(report):
    """The corpus target: at least 99% of tool outputs equal ours, each way."""
    corpus = [k for k in report if k.startswith("corpus SGLang") and not k.endswith("equal to ours")]
    if not corpus:
        pytest.skip("the corpus tier did not run (../shared absent)")
    for key in corpus:
        rate = report[key + " equal to ours"] / report[key]
        assert rate >= 0.99, f"{key}: {rate:.1%}\n" + "\n".join(MISSES)


def test_a_tokenizer_without_template_is_refused_clearly():
    tokenizer = SimpleNamespace(chat_template=None, bos_token=None, eos_token=None)
    for make in (lambda: FunctionCallParser([], NAME, tokenizer=tokenizer),
                 lambda: ReasoningParser(NAME, tokenizer=tokenizer)):
        with pytest.raises(ValueError, match="need a tokenizer with a chat_template"):
            make()


def test_registered_in_sglang_tables():
    assert FunctionCallParser.ToolCallParserEnum[NAME] is adapter.ChatAutoparserToolDetector
    assert ReasoningParser.DetectorMap[NAME] is adapter.ChatAutoparserReasoningDetector


def test_required_structural_tag_loads_in_xgrammar_and_accepts_calls(report):
    """For `tool_choice: required`, SGLang's `get_structure_constraint` takes
    our structural tag; it compiles in SGLang's xgrammar and accepts the
    call-only outputs after the reasoning (SGLang's reasoner backend owns
    the reasoning, so the tag starts after it)."""
    import xgrammar as xgr

    compiled = accepted = total = 0
    failures = []
    for label, path in TOOL_CASES:
        template = ca.ChatTemplate.from_file(path)
        cases = [(n, o, t) for n, o, t in outputs(template) if n in ("call", "parallel", "tricky-args")]
        if not cases:
            continue
        tokenizer = tokenizer_for(template, [t for _, _, t in cases])
        parser = FunctionCallParser([Tool.model_validate(t) for t in TOOLS], NAME, tokenizer=tokenizer)
        kind, tag = parser.get_structure_constraint("required", parallel_tool_calls=True, thinking_mode=False)
        assert kind == "structural_tag"
        info = xgr.TokenizerInfo.from_huggingface(tokenizer)
        grammar = xgr.GrammarCompiler(info).compile_structural_tag(json.dumps(tag.model_dump(by_alias=True)))
        compiled += 1
        end = (template.analyze()["reasoning"].get("end") or "").strip()
        for name, _, text in cases:
            body = text.split(end, 1)[1] if end and end in text else text
            matcher = xgr.GrammarMatcher(grammar)
            total += 1
            if matcher.accept_string(body):
                accepted += 1
            else:
                failures.append(f"{label}/{path.stem}/{name}")
    report["SGLang required structural tags compiled in xgrammar"] += compiled
    report[f"SGLang required structural tag accepted call-only outputs (of {total})"] += accepted
    for failure in failures:
        report[f"REJECTED by the required structural tag: {failure}"] += 1
    assert compiled > 0
    assert accepted >= 0.9 * total, failures


def test_sglang_launcher_offers_our_parsers():
    """`python -m sglang.launch_server` loads the package's
    `sglang.srt.plugins` entry point before parsing its flags: both
    `--tool-call-parser` and `--reasoning-parser` accept `chat_autoparser`."""
    from importlib.metadata import entry_points

    assert [ep.value for ep in entry_points(group="sglang.srt.plugins") if ep.name == NAME] == [
        "chat_autoparser.sglang:register"
    ]
    done = subprocess.run(
        [sys.executable, "-m", "sglang.launch_server", "--help"], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for flag in ("--tool-call-parser", "--reasoning-parser"):
        choices = re.search(re.escape(flag) + r" \{([^}]*)\}", done.stdout)
        assert choices and NAME in choices.group(1).split(","), flag


POLICY_OUTPUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\nDone.'


@pytest.mark.parametrize("env,template_kwargs,content", [
    (None, None, "Done."),  # the default, lossless: text after a call is kept
    ("compatible", None, ""),  # the server's policy drops it
    ('{"text_after_calls": "drop"}', None, ""),  # a JSON object, as policy= takes
    (None, {"chat_autoparser_policy": "compatible"}, ""),  # the request's
    ("compatible", {"chat_autoparser_policy": "lossless"}, "Done."),  # the request's wins
    ("compatible", {"chat_autoparser_policy": {"preset": "compatible", "text_after_calls": "keep"}}, "Done."),
])
def test_policy_per_server_and_per_request(monkeypatch, env, template_kwargs, content):
    from conftest import ROOT

    if env is None:
        monkeypatch.delenv("CHAT_AUTOPARSER_POLICY", raising=False)
    else:
        monkeypatch.setenv("CHAT_AUTOPARSER_POLICY", env)
    template = ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja")
    tokenizer = tokenizer_for(template, [template.source, POLICY_OUTPUT])
    req = request({})
    req.chat_template_kwargs = template_kwargs
    got = through_sglang(serving(tokenizer), req, tokenizer, POLICY_OUTPUT)
    for how, m in got.items():
        assert m == {"content": content, "reasoning_content": "",
                     "tool_calls": [("get_weather", '{"city": "Paris"}')]}, how


@pytest.mark.parametrize("env,message", [
    ("bogus", r"CHAT_AUTOPARSER_POLICY: .*not \"bogus\""),
    ("{not json", "CHAT_AUTOPARSER_POLICY: not a preset name nor a JSON object"),
])
def test_a_bad_server_policy_is_an_error_naming_the_variable(monkeypatch, env, message):
    from conftest import ROOT

    monkeypatch.setenv("CHAT_AUTOPARSER_POLICY", env)
    tokenizer = tokenizer_for(ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja"), ["x"])
    with pytest.raises(ValueError, match=message):
        ReasoningParser(NAME, tokenizer=tokenizer)


def test_a_bad_request_policy_is_an_error_naming_the_field(monkeypatch):
    from conftest import ROOT

    monkeypatch.delenv("CHAT_AUTOPARSER_POLICY", raising=False)
    tokenizer = tokenizer_for(ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja"), ["x"])
    req = request({})
    req.chat_template_kwargs = {"chat_autoparser_policy": {"text_after_calls": "x"}}
    with pytest.raises(ValueError, match="chat_template_kwargs.chat_autoparser_policy: .*text_after_calls"):
        ReasoningParser(NAME, request=req, tokenizer=tokenizer)
