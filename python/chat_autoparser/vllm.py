"""chat_autoparser inside vLLM (0.33): one parser for reasoning and tool
calls, derived from the model's chat template, with no per-model code.

Importing this module registers a tool parser and a reasoning parser, both
named ``chat_autoparser``, with vLLM's managers, and teaches vLLM's
``ParserManager`` to compose them into :class:`ChatAutoparserParser`: one
``vllm.parser.Parser`` whose reasoning, content and tool calls all come from
one ``chat_autoparser`` stream (vLLM's ``DelegatingParser`` would run a
reasoning parser and then a tool parser on what it left). Loaded by
``--tool-parser-plugin chat_autoparser.vllm`` or, with the package
installed, by the ``vllm.general_plugins`` entry point (:func:`register`)::

    vllm serve MODEL --enable-auto-tool-choice \\
        --tool-call-parser chat_autoparser --reasoning-parser chat_autoparser

Per request the parser reads the template (the request's ``chat_template``,
else ``tokenizer.chat_template``; analysed once per template text), the
request's ``tools``, ``tool_choice``, ``parallel_tool_calls`` and the
thinking switch and output policy (``chat_autoparser_policy``, else the
server's ``CHAT_AUTOPARSER_POLICY``; docs/serving.md) of
``chat_template_kwargs``, and the prompt (decoded from
the prompt token ids, special tokens kept) to know where reasoning stands.
``adjust_request`` keeps special tokens in the output text (markers are
often special tokens) and, for ``tool_choice`` ``required`` or a named
function, a ``strict`` tool or ``parallel_tool_calls: false``, attaches the
template's xgrammar structural tag, which covers the whole output
(reasoning included), so the guarantee holds for any template. The tag
holds markers that are the tokenizer's added tokens to those tokens
(named by id, :func:`token_ids`).

Token ids: vLLM hands ``parse`` and ``parse_delta`` the output's token ids.
The tokenizer's added tokens (:func:`single_tokens`) are given to the parser
as special tokens, and each output is pushed as pieces that say which text
came from such a token (:func:`token_pieces`): a marker is a marker only
where the model sampled its token, and a ``<tool_call>`` the model wrote
with ordinary tokens (quoting the user, say) is content.

Invariants: ``parse`` of an output equals ``chat_autoparser``'s own parse
of it for the same request; the deltas of ``parse_delta`` add up to it
whatever the chunking; a call's id is the model's own, else minted
(``call_`` + 24 letters and digits) and sent once. The two registered
classes exist for vLLM's registries and its engine-side reasoning gate
(``is_reasoning_end``); they are composed only with each other, and a mix
with another family's parser is refused at startup.
"""

from __future__ import annotations

import functools
import json
import random
import weakref
from collections.abc import Sequence
from typing import Any, Optional

import chat_autoparser as ca
from chat_autoparser import _policy
from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser.abstract_parser import Parser
from vllm.parser.parser_manager import ParserManager
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.sampling_params import StructuredOutputsParams
from vllm.tool_parsers import ToolParser, ToolParserManager

NAME = "chat_autoparser"

__all__ = ["NAME", "ChatAutoparserParser", "ChatAutoparserReasoningParser", "ChatAutoparserToolParser", "register"]


@functools.lru_cache(maxsize=64)
def _template(source: str, bos: Optional[str], eos: Optional[str]) -> ca.ChatTemplate:
    """One compiled, analysed template per template text (and BOS/EOS)."""
    template = ca.ChatTemplate.from_str(source, bos_token=bos, eos_token=eos)
    template.analyze()
    return template


def _json(value: Any) -> Any:
    """A request field (pydantic model or plain value) as plain JSON, Nones left out."""
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    return value


class _Request:
    """What one request tells the parser: template, tools, choice, switches, prompt."""

    def __init__(self, tokenizer: Any, tools: Any, chat_template_kwargs: Optional[dict]):
        self.tokenizer = tokenizer
        self.tools = [_json(t) for t in tools] if tools else None
        self.kwargs = dict(chat_template_kwargs or {})
        self.prompt: Optional[str] = None
        # A fresh seed per request: ids unique across requests, repeatable within one.
        self.seed = random.getrandbits(64)
        self.single, self.single_texts = _singles(tokenizer)
        # The lowest id of each text (a vocabulary may add one text twice).
        self.single_ids = {text: i for i, text in sorted(self.single.items(), reverse=True)}

    def pieces(self, text: str, ids: Optional[Sequence[int]]) -> list[tuple[str, bool]]:
        """``text`` as token pieces (:func:`token_pieces`)."""
        return token_pieces(text, list(ids or ()), self.single,
                            lambda run: self.tokenizer.decode(run, skip_special_tokens=False))

    def template(self, request: Any = None) -> ca.ChatTemplate:
        source = getattr(request, "chat_template", None) or self.tokenizer.chat_template
        if isinstance(source, dict):  # named templates: transformers' pick
            source = source.get("tool_use") if self.tools and "tool_use" in source else source.get("default")
        if not source:
            raise ValueError(f"{NAME} needs a chat template: the tokenizer has none and the request gives none")
        return _template(source, _token(self.tokenizer, "bos_token"), _token(self.tokenizer, "eos_token"))

    def set_prompt(self, prompt_token_ids: Optional[Sequence[int]]) -> None:
        if prompt_token_ids is not None and self.prompt is None:
            self.prompt = self.tokenizer.decode(list(prompt_token_ids), skip_special_tokens=False)

    def thinking(self) -> Optional[bool]:
        for key in ("enable_thinking", "thinking"):
            if isinstance(self.kwargs.get(key), bool):
                return self.kwargs[key]
        return None

    def options(self, request: Any, parse_tools: bool = True) -> dict:
        """The keyword arguments of ``ChatTemplate.parser`` / ``grammar`` for ``request``."""
        tools = [_json(t) for t in request.tools] if getattr(request, "tools", None) else self.tools
        choice = _json(getattr(request, "tool_choice", None)) or "auto"
        return {
            "tools": tools,
            "tool_choice": choice if parse_tools else "none",
            "parallel_tool_calls": getattr(request, "parallel_tool_calls", True) is not False,
            "enable_thinking": self.thinking(),
            "prompt": self.prompt,
        }

    def policy(self, template: ca.ChatTemplate, request: Any) -> _policy.Policy:
        """The request's ``chat_template_kwargs.chat_autoparser_policy``, else the server's."""
        kwargs = getattr(request, "chat_template_kwargs", None)
        return _policy.checked(template, *_policy.policy_for(kwargs if kwargs is not None else self.kwargs))

    def parser(self, request: Any, parse_tools: bool, reasoning: bool) -> ca.Parser:
        template = self.template(request)
        return template.parser(
            **self.options(request, parse_tools),
            reasoning="extract" if reasoning else "inline",
            call_ids=self.seed,
            policy=self.policy(template, request),
            special_tokens=self.single_texts,
        )


_SINGLE: "weakref.WeakKeyDictionary[Any, tuple[dict[int, str], list[str]]]" = weakref.WeakKeyDictionary()


def single_tokens(tokenizer: Any) -> dict[int, str]:
    """The tokenizer's added tokens without whitespace, by id: texts it
    never splits, which a model writes as one token. Special or not: Qwen's
    ``<tool_call>`` and DeepSeek-R1's ``<think>`` are added tokens marked not
    special, yet the template's markers all the same. Tokens with whitespace
    are left out (some vocabularies add runs of spaces, which are text).
    The same rule as ``TemplateSource::special_tokens`` in Rust."""
    return _singles(tokenizer)[0]


def _singles(tokenizer: Any) -> tuple[dict[int, str], list[str]]:
    """:func:`single_tokens` and their texts, once per tokenizer (a server
    builds a parser per request; a vocabulary adds up to thousands)."""
    try:
        return _SINGLE[tokenizer]
    except (KeyError, TypeError):
        pass
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    by_id = {int(i): str(t) for i, t in added.items() if str(t) and not any(c.isspace() for c in str(t))}
    singles = (by_id, sorted(set(by_id.values())))
    try:
        _SINGLE[tokenizer] = singles
    except TypeError:  # a tokenizer that takes no weak reference: computed per request
        pass
    return singles


def token_pieces(text: str, ids: Sequence[int], single: dict[int, str],
                 decode: Any) -> list[tuple[str, bool]]:
    """``text`` (the detokenized ``ids``) as ``(text, special)`` pieces for
    ``Stream.push_tokens``: each token of ``single`` its own piece, the text
    between them ordinary. A token's place is found after the ordinary
    tokens before it (``decode`` of them, when the text holds it there),
    else at its text's next occurrence; one the text does not hold (the
    detokenizer dropped it) is left out."""
    pieces: list[tuple[str, bool]] = []
    cursor, run = 0, []
    for token_id in ids:
        token = single.get(token_id)
        if token is None:
            run.append(token_id)
            continue
        at = text.find(token, cursor)
        if run:
            plain = decode(run)
            if text.startswith(plain + token, cursor):
                at = cursor + len(plain)
        run = []
        if at < 0:
            continue
        if at > cursor:
            pieces.append((text[cursor:at], False))
        pieces.append((token, True))
        cursor = at + len(token)
    if cursor < len(text):
        pieces.append((text[cursor:], False))
    return pieces


def token_ids(tree: Any, ids: dict[str, int]) -> Any:
    """A structural tag's format tree with each token named by its id in
    ``ids`` where it was named by its text: vLLM 0.33 checks a tag with
    ``xgrammar.Grammar.from_structural_tag``, which has no vocabulary to
    look a text up in. Only formats are entered, never a JSON schema."""
    if isinstance(tree, list):
        return [token_ids(f, ids) for f in tree]
    if not isinstance(tree, dict):
        return tree
    out = {}
    for key, value in tree.items():
        if key == "token" and isinstance(value, str):
            value = ids.get(value, value)
        elif key in ("trigger_tokens", "exclude_tokens"):
            value = [ids.get(t, t) if isinstance(t, str) else t for t in value]
        elif key in ("format", "content", "elements", "tags", "begin", "end"):
            value = token_ids(value, ids)
        out[key] = value
    return out


def _token(tokenizer: Any, name: str) -> Optional[str]:
    value = getattr(tokenizer, name, None)
    return value if isinstance(value, str) else None


def _forces_calls(request: Any) -> bool:
    """``required``, a named function or ``allowed_tools`` in mode ``required``: the output must be calls."""
    choice = _json(getattr(request, "tool_choice", None))
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        return (choice.get("allowed_tools") or choice).get("mode") == "required"
    return choice == "required" or (choice is not None and not isinstance(choice, str))


def _needs_grammar(request: Any) -> bool:
    """What the parser alone cannot promise: forced calls, calls among ``allowed_tools``,
    strict tools, one call at most. (vLLM 0.33's Chat Completions request refuses
    ``allowed_tools`` before a parser sees it; a later one may pass it on.)"""
    strict = any(getattr(getattr(t, "function", None), "strict", None) for t in request.tools or [])
    choice = _json(getattr(request, "tool_choice", None))
    allowed = isinstance(choice, dict) and choice.get("type") == "allowed_tools"
    return _forces_calls(request) or allowed or strict or request.parallel_tool_calls is False


def _reasoning_ended(template: ca.ChatTemplate, parser: ca.Parser) -> bool:
    """The output starts after reasoning: the prompt closed it, or the template has none."""
    return template.analyze()["reasoning"]["mode"] == "none" or parser.start == "after_reasoning"


class ChatAutoparserParser(Parser):
    """vLLM's ``Parser`` over one ``chat_autoparser`` stream per choice."""

    reasoning_parser_cls = None
    tool_parser_cls = None

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, model_config: Any = None, **kwargs: Any):
        super().__init__(tokenizer, tools, *args, model_config=model_config, **kwargs)
        self._request = _Request(tokenizer, tools, kwargs.get("chat_template_kwargs"))
        # Fails at first use on a tokenizer without a template or a bad CHAT_AUTOPARSER_POLICY.
        _policy.checked(self._request.template(), _policy.server_policy(), _policy.ENV)
        self._stream: Optional[ca.Stream] = None

    def _parses_tools(self, request: Any, enable_auto_tools: bool = True) -> bool:
        if self.tool_parser_cls is None or not request.tools or request.tool_choice == "none":
            return False
        return enable_auto_tools or _forces_calls(request)

    def _parser(self, request: Any, enable_auto_tools: bool = True) -> ca.Parser:
        return self._request.parser(
            request, self._parses_tools(request, enable_auto_tools), self.reasoning_parser_cls is not None
        )

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        self._request.set_prompt(prompt_token_ids)

    def adjust_request(self, request: Any) -> Any:
        if not isinstance(request, ChatCompletionRequest):
            return request
        # Markers are often special tokens: the parser must see them.
        request.skip_special_tokens = False
        if not self._parses_tools(request) or not _needs_grammar(request):
            return request
        options = self._request.options(request)
        options.pop("enable_thinking" if options["prompt"] is not None else "prompt")
        schema = _response_schema(request)
        tag = self._request.template(request).grammar(
            **options, response_schema=schema, format="structural-tag",
            special_tokens=self._request.single_texts)["structural_tag"]
        tag = token_ids(tag, self._request.single_ids)
        request.structured_outputs = StructuredOutputsParams(structural_tag=json.dumps(tag))
        request.response_format = None
        # The tag covers reasoning too: constrain from the first token.
        request._grammar_from_parser = True
        return request

    def is_reasoning_end(self, input_ids: list[int]) -> bool:
        prompt = self.model_tokenizer.decode(list(input_ids), skip_special_tokens=False)
        template = self._request.template()
        parser = template.parser(tools=self._request.tools, enable_thinking=self._request.thinking(), prompt=prompt)
        return _reasoning_ended(template, parser)

    def parse(self, model_output: str, request: Any, enable_auto_tools: bool = False,
              model_output_token_ids: Sequence[int] = ()) -> tuple:
        parser = self._parser(request, enable_auto_tools)
        if model_output_token_ids:
            message = parser.parse_tokens(self._request.pieces(model_output, model_output_token_ids))
        else:
            message = parser.parse(model_output)
        calls = [FunctionCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                 for c in message.get("tool_calls", [])]
        return message.get("reasoning_content") or None, message["content"], calls or None

    def parse_delta(self, delta_text: str, delta_token_ids: list[int], request: Any,
                    prompt_token_ids: Optional[list[int]] = None, *, finished: bool) -> Optional[DeltaMessage]:
        if self._stream is None:
            self._request.set_prompt(prompt_token_ids)
            self._stream = self._parser(request, self._auto_tools()).stream()
        if delta_token_ids:
            deltas = self._stream.push_tokens(self._request.pieces(delta_text, delta_token_ids))
        else:
            deltas = self._stream.push(delta_text) if delta_text else []
        if finished:
            deltas += self._stream.finish()
        message = _delta_message(deltas)
        if message is not None and not request.include_reasoning:
            message.reasoning = None
            if not message.content and not message.tool_calls:
                return None
        return message

    def _auto_tools(self) -> bool:
        # vLLM hands parse() its --enable-auto-tool-choice but not parse_delta():
        # a composed class knows it from ParserManager (see _compose).
        return getattr(self, "_enable_auto_tools", True)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """Tokens from the first that adds reasoning text to the last that does,
        streaming the output token by token (the markers around it are not counted;
        a marker written with ordinary tokens is reasoning text, as in ``parse``)."""
        if self.reasoning_parser_cls is None:
            return 0
        stream = self._request.parser(_NO_TOOLS, False, True).stream()
        first = last = None
        pending: list[int] = []
        for at, token in enumerate(token_ids):
            pending.append(token)
            text = self.model_tokenizer.decode(pending, skip_special_tokens=False)
            if text.endswith("\ufffd"):  # a character cut: wait for the rest
                continue
            pieces = self._request.pieces(text, pending)
            pending = []
            if any("reasoning_content" in d for d in stream.push_tokens(pieces)):
                first = at if first is None else first
                last = at
        return 0 if first is None else last - first + 1


class _NoTools:
    """A request that parses no calls (reasoning is all that is counted)."""

    tools = None
    tool_choice = "none"
    parallel_tool_calls = True


_NO_TOOLS = _NoTools()


def _response_schema(request: Any) -> Optional[dict]:
    fmt = getattr(request, "response_format", None)
    schema = getattr(getattr(fmt, "json_schema", None), "json_schema", None)
    return schema if isinstance(schema, dict) else None


def _delta_message(deltas: list[dict]) -> Optional[DeltaMessage]:
    """Our OpenAI deltas of one push as one vLLM ``DeltaMessage``: texts joined,
    a call's pieces merged (id, type and name come once, in its first piece)."""
    reasoning = "".join(d.get("reasoning_content", "") for d in deltas)
    content = "".join(d.get("content", "") for d in deltas)
    calls: dict[int, DeltaToolCall] = {}
    for piece in (p for d in deltas for p in d.get("tool_calls", [])):
        call = calls.setdefault(piece["index"], DeltaToolCall(index=piece["index"]))
        call.id = call.id or piece.get("id")
        call.type = call.type or piece.get("type")
        function = piece.get("function", {})
        # Always a function object: the openai client asserts one in every piece.
        call.function = call.function or DeltaFunctionCall()
        if function:
            if "name" in function:
                call.function.name = (call.function.name or "") + function["name"]
            if "arguments" in function:
                call.function.arguments = (call.function.arguments or "") + function["arguments"]
    if not (reasoning or content or calls):
        return None
    return DeltaMessage(reasoning=reasoning or None, content=content or None, tool_calls=list(calls.values()))


class ChatAutoparserReasoningParser(ReasoningParser):
    """The registered reasoning half: what vLLM's engine asks a reasoning
    parser alone (where reasoning ends, to gate a response grammar)."""

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any):
        super().__init__(tokenizer, *args, **kwargs)
        self._request = _Request(tokenizer, None, kwargs.get("chat_template_kwargs"))

    def _end_marker(self) -> str:
        return self._request.template().analyze()["reasoning"].get("end") or ""

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        prompt = self.model_tokenizer.decode(list(input_ids), skip_special_tokens=False)
        template = self._request.template()
        return _reasoning_ended(template, template.parser(enable_thinking=self._request.thinking(), prompt=prompt))

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Sequence[int]) -> bool:
        end = self._end_marker()
        tail = self.model_tokenizer.decode(list(input_ids)[-(len(delta_ids) + 8):], skip_special_tokens=False)
        return bool(end) and end.strip() in tail

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        return input_ids

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[Optional[str], Optional[str]]:
        message = self._request.parser(request, False, True).parse(model_output)
        return message.get("reasoning_content") or None, message["content"] or None

    def extract_reasoning_streaming(self, *args: Any, **kwargs: Any) -> Optional[DeltaMessage]:
        raise NotImplementedError(f"{NAME}: streaming runs in ChatAutoparserParser (vllm.parser), not here")


class ChatAutoparserToolParser(ToolParser):
    """The registered tool half (batch extraction alone; streaming runs in
    :class:`ChatAutoparserParser`)."""

    supports_required_and_named = True

    def __init__(self, tokenizer: Any, tools: Any = None):
        super().__init__(tokenizer, tools)
        self._request = _Request(tokenizer, tools, None)

    def adjust_request(self, request: Any) -> Any:
        return request

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        message = self._request.parser(request, True, False).parse(model_output)
        calls = [ToolCall(id=c["id"] or f"call_{i}", function=FunctionCall(**c["function"]))
                 for i, c in enumerate(message.get("tool_calls", []))]
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=message["content"])

    def extract_tool_calls_streaming(self, *args: Any, **kwargs: Any) -> Optional[DeltaMessage]:
        raise NotImplementedError(f"{NAME}: streaming runs in ChatAutoparserParser (vllm.parser), not here")


_current = ParserManager.__dict__["_compose_parser"].__func__
# Imported twice (as a plugin path and as a module): wrap vLLM's, not ours.
_compose_original = getattr(_current, "chat_autoparser_wraps", _current)


def _compose(cls, tool_parser_name=None, reasoning_parser_name=None, enable_auto_tools=False, **kwargs):
    """``ParserManager._compose_parser``, giving ours one class for both halves."""
    names = {tool_parser_name, reasoning_parser_name} - {None, ""}
    if NAME not in names:
        return _compose_original(cls, tool_parser_name=tool_parser_name, reasoning_parser_name=reasoning_parser_name,
                                 enable_auto_tools=enable_auto_tools, **kwargs)
    if names != {NAME}:
        raise TypeError(f"--tool-call-parser and --reasoning-parser: {NAME} parses both and cannot be "
                        f"combined with {sorted(names - {NAME})}")
    reasoning = cls.get_reasoning_parser(reasoning_parser_name)
    tools = cls.get_tool_parser(tool_parser_name, enable_auto_tools, kwargs.get("model_name"))
    return type("ChatAutoparserParser", (ChatAutoparserParser,), {
        "reasoning_parser_cls": reasoning, "tool_parser_cls": tools, "_enable_auto_tools": enable_auto_tools,
    })


_compose.chat_autoparser_wraps = _compose_original  # type: ignore[attr-defined]


def register() -> None:
    """Registers both parsers as ``chat_autoparser`` and the composition
    (idempotent): the ``vllm.general_plugins`` entry point."""
    ToolParserManager.register_module(NAME, force=True, module=ChatAutoparserToolParser)
    ReasoningParserManager.register_module(NAME, force=True, module=ChatAutoparserReasoningParser)
    current = ParserManager.__dict__["_compose_parser"].__func__
    if not hasattr(current, "chat_autoparser_wraps"):
        ParserManager._compose_parser = classmethod(_compose)


register()
