"""SGLang adapter: one tool-call detector and one reasoning detector, both
named ``chat_autoparser``, that parse any chat template's output with this
library instead of a hand-written per-model parser.

Importing this module (or calling :func:`register`) adds the two detectors
to SGLang's own tables, ``FunctionCallParser.ToolCallParserEnum`` and
``ReasoningParser.DetectorMap``; from then on ``--tool-call-parser
chat_autoparser --reasoning-parser chat_autoparser`` are valid server
flags. The package declares :func:`register` as an ``sglang.srt.plugins``
entry point, which SGLang's ``load_plugins()`` runs early in every one of
its processes (launcher, scheduler, detokenizer), so installing the package
into SGLang's environment is all a server needs (``docs/serving.md``).

Where the template comes from: SGLang hands both detectors the tokenizer
(``tokenizer=``); its ``chat_template`` (with ``bos_token``/``eos_token``)
is compiled and analysed once per distinct template and kept in a small
cache, as are the parsers built from it per request shape.

How SGLang's two-step composition gives exactly our one parse. SGLang runs
the reasoning detector first and hands the text it calls "normal" to the
tool-call detector (batch: ``parse_non_stream`` then ``has_tool_call`` /
``detect_and_parse``; streamed: ``parse_stream_chunk`` then
``parse_streaming_increment``, then both ``finish``). Our parser reads an
output as a whole (reasoning, content and calls share one state machine),
so the adapter does not split the text; it relays it:

- When a tool-call parser will read the normal text (SGLang says so with
  ``tool_call_parser_active=True``), the reasoning detector emits the
  reasoning our parser finds, and as normal text the *raw output itself*,
  unchanged, behind a one-character relay header (a private-use character,
  ``_RELAY``) that says where reasoning stood when the output began. The
  tool-call detector, seeing the header, parses the raw output with the
  request's tools, in that same reasoning state, and emits its content and
  calls (its reasoning was already emitted upstream). The client therefore
  gets reasoning, content and calls of the same parse of the same text,
  whatever the chunking, and no byte is lost or parsed twice into content.
  A whole (batch) output whose parse has no call needs no relay: the
  reasoning detector hands over its content, which has no call to find.
- With no tool-call parser after it (no tools, ``tool_choice: none``), the
  reasoning detector emits our parse's content itself, call markup
  included (our ``tool_choice: none`` parse).
- A tool-call detector that receives text without the header (SGLang ran
  no reasoning parser: ``separate_reasoning: false``) keeps reasoning
  inline in the content as the model wrote it (``reasoning="inline"``,
  no prompt assumed: the prompt's opening marker is not prepended).

The reasoning detector does not see the request's tools; its parse is
built without them, and a parse without tools still reads calls (of any
name), so any call ends reasoning there as in the tool detector's parse.

Where reasoning stood: SGLang hands the reasoning detector a bool,
``force_reasoning`` (its template probe, else the detector's
``reasoning_default`` read against the request's ``enable_thinking``),
which cannot say that the request left thinking unset. The detector sets
``reasoning_default`` from our analysis (on unless turned off, for
templates whose unprompted render is their thinking-on one; else off
unless turned on), and reads the value that agrees with the template's
default as that default (``enable_thinking=None``), the other as the
request's explicit switch (``_switch``).

Output policy (docs/policies.md): the server's, ``CHAT_AUTOPARSER_POLICY``
(a preset name or a JSON object), part of the parser cache key; a bad value
is a ``ValueError`` naming the variable when a detector first builds a parser.
Per request, ``chat_template_kwargs.chat_autoparser_policy`` overrides it:
SGLang hands the request to ``ReasoningParser`` only, so :func:`register`
wraps its ``__init__`` to tell our reasoning detector, which relays the
policy to the tool detector in the relay header (as JSON between two
``_POLICY_MARK``). Without a reasoning parser (``separate_reasoning:
false``) the tool detector never sees it and parses under the server's.

Constrained decoding: :meth:`ChatAutoparserToolDetector.get_structural_tag`
returns our structural tag for the request (``ChatTemplate.grammar(...,
format="structural-tag")``) as xgrammar's ``StructuralTag``; SGLang uses it
for ``tool_choice: required``, a named function and ``strict`` tools. With
our reasoning detector configured, SGLang's reasoner grammar backend gates
the grammar on the reasoning end marker (``think_end_token``), so the tag
describes the output after reasoning (``thinking_mode`` False).

Invariants: every detector method returns SGLang's result types and never
raises on odd model output (it becomes content, as our parser leaves it);
a detector instance is one output's (SGLang makes one per choice).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult, ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import (
    BaseReasoningFormatDetector,
    ReasoningParser,
)
from sglang.srt.parser.reasoning_parser import (
    StreamingParseResult as ReasoningResult,
)

from . import ChatTemplate, Parser, Stream, _policy

__all__ = [
    "NAME",
    "ChatAutoparserReasoningDetector",
    "ChatAutoparserToolDetector",
    "register",
]

NAME = "chat_autoparser"

# The relay header: one private-use character per reasoning state the
# reasoning detector parsed with (`enable_thinking` True, False, unknown).
_RELAY = {True: "\ue0c1", False: "\ue0c0", None: "\ue0c2"}
_RELAY_STATE = {mark: state for state, mark in _RELAY.items()}
# A request's own policy follows the header as JSON between two of these
# (json.dumps escapes any in the policy itself).
_POLICY_MARK = "\ue0c3"


def _relay_header(thinking: Optional[bool], policy: _policy.Policy) -> str:
    if policy is None:
        return _RELAY[thinking]
    return _RELAY[thinking] + _POLICY_MARK + json.dumps(policy) + _POLICY_MARK


def _unrelay(text: str) -> Tuple[Optional[str], _policy.Policy, str]:
    """The relay mark, the relayed policy and the text after the header."""
    if not text or text[0] not in _RELAY_STATE:
        return None, None, text
    body = text[1:]
    if body.startswith(_POLICY_MARK):
        end = body.index(_POLICY_MARK, 1)
        return text[0], json.loads(body[1:end]), body[end + 1:]
    return text[0], None, body


class _Lru:
    """A small thread-safe LRU map (SGLang serves requests on threads and
    an event loop; templates and parsers are immutable and shared)."""

    def __init__(self, size: int):
        self._size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


_TEMPLATES = _Lru(8)
_PARSERS = _Lru(256)


def _template_of(tokenizer: Any) -> ChatTemplate:
    """The tokenizer's chat template, compiled and analysed once per text."""
    if tokenizer is None:
        raise ValueError(f"the {NAME} parsers need the tokenizer SGLang passes (tokenizer=)")
    source = getattr(tokenizer, "chat_template", None)
    if isinstance(source, dict):  # named templates: the default one
        source = source.get("default") or next(iter(source.values()), None)
    if not isinstance(source, str) or not source:
        raise ValueError(f"the {NAME} parsers need a tokenizer with a chat_template")
    bos = _token_text(getattr(tokenizer, "bos_token", None))
    eos = _token_text(getattr(tokenizer, "eos_token", None))

    def compile_and_analyse() -> ChatTemplate:
        template = ChatTemplate.from_str(source, bos_token=bos, eos_token=eos)
        template.analyze()  # once here, not per request
        return template

    return _TEMPLATES.get((source, bos, eos), compile_and_analyse)


def _token_text(token: Any) -> Optional[str]:
    if token is None or isinstance(token, str):
        return token
    return str(getattr(token, "content", token))


def _tool_dicts(tools: Optional[List[Any]]) -> List[dict]:
    """SGLang's `Tool` models as OpenAI tool dicts, unset fields left out."""
    out = []
    for tool in tools or []:
        data = tool.model_dump() if hasattr(tool, "model_dump") else dict(tool)
        function = {k: v for k, v in (data.get("function") or {}).items() if v is not None}
        out.append({"type": data.get("type") or "function", "function": function})
    return out


def _choice_value(tool_choice: Any) -> Any:
    if tool_choice is None or isinstance(tool_choice, (str, dict)):
        return tool_choice
    return tool_choice.model_dump() if hasattr(tool_choice, "model_dump") else str(tool_choice)


def _parser(
    template: ChatTemplate,
    tools: List[dict],
    tool_choice: Any,
    enable_thinking: Optional[bool],
    reasoning: str,
    prompt: Optional[str] = None,
    policy: _policy.Policy = None,
) -> Parser:
    """Our parser for one request shape, built once per shape; the output
    policy is the request's (relayed), else the server's
    (``CHAT_AUTOPARSER_POLICY``, read per build)."""
    source = f"chat_template_kwargs.{_policy.REQUEST_KEY}"
    if policy is None:
        policy, source = _policy.server_policy(), _policy.ENV
    key = (
        template.source, template.bos_token, template.eos_token, json.dumps(tools, sort_keys=True),
        json.dumps(tool_choice, sort_keys=True), enable_thinking, reasoning, prompt, _policy.cache_key(policy),
    )
    return _PARSERS.get(key, lambda: template.parser(
        tools=tools or None, tool_choice=tool_choice, enable_thinking=enable_thinking,
        reasoning=reasoning, prompt=prompt, policy=_policy.checked(template, policy, source),
    ))


def _split(deltas: List[dict]) -> Tuple[str, str, List[dict]]:
    """The reasoning, content and call pieces of a run of deltas."""
    reasoning, content, calls = [], [], []
    for delta in deltas:
        reasoning.append(delta.get("reasoning_content", ""))
        content.append(delta.get("content", ""))
        calls.extend(delta.get("tool_calls", ()))
    return "".join(reasoning), "".join(content), calls


def _default_thinking(reasoning: dict) -> Optional[bool]:
    """Whether the template's prompt, with no switch given, is the one it
    renders with thinking on (True), off (False), or neither."""
    default = reasoning.get("default_prompt")
    on, off = reasoning.get("thinking_on"), reasoning.get("thinking_off")
    if default == on != off:
        return True
    if default == off != on:
        return False
    return None


def _switch(force_reasoning: Optional[bool], default_on: Optional[bool]) -> Optional[bool]:
    """Our `enable_thinking` from SGLang's `force_reasoning`. SGLang's bool
    cannot say "the request did not say"; with `reasoning_default` set as
    above, the value that agrees with the template's default is read as
    that default (None: the prompt is rendered as the template renders it
    unprompted), the other one as the request's explicit switch."""
    if force_reasoning is None:
        return None
    if default_on:
        return None if force_reasoning else False
    return True if force_reasoning else None


class ChatAutoparserReasoningDetector(BaseReasoningFormatDetector):
    """SGLang reasoning detector over this library's parser (module doc)."""

    def __init__(
        self,
        tokenizer: Any = None,
        stream_reasoning: bool = True,
        force_reasoning: Optional[bool] = None,
        tool_call_parser_active: bool = False,
        **_ignored: Any,
    ):
        template = _template_of(tokenizer)
        reasoning = template.analyze().get("reasoning") or {}
        default_on = _default_thinking(reasoning)
        super().__init__(
            (reasoning.get("start") or "").strip(),
            (reasoning.get("end") or "").strip(),
            force_reasoning=bool(force_reasoning),
            stream_reasoning=stream_reasoning,
            # What SGLang concludes when its own template probe finds no
            # switch: the template's default unless the request says otherwise.
            reasoning_default="enable_thinking" if default_on else "explicit_enable_thinking",
        )
        self._thinking = _switch(force_reasoning, default_on)
        self._force = force_reasoning
        self._relay = tool_call_parser_active
        # Relaying: calls are the tool detector's, so any call ends reasoning
        # here as there. Not relaying: the request has no tools (or
        # tool_choice none), and call markup stays content.
        self._choice = None if tool_call_parser_active else "none"
        self._template = template
        self._policy: _policy.Policy = None  # the request's, when it names one
        self._parser = _parser(template, [], self._choice, force_reasoning, "extract")
        self._stream: Optional[Stream] = None
        self._held = ""  # reasoning not yet emitted (stream_reasoning=False)
        self._relayed = False

    def use_request_policy(self, request: Any) -> None:
        """Parses under the request's ``chat_autoparser_policy`` (SGLang passes
        the request to ``ReasoningParser`` only; ``register`` wires this)."""
        kwargs = getattr(request, "chat_template_kwargs", None) or {}
        if kwargs.get(_policy.REQUEST_KEY) is None:
            return
        self._policy = kwargs[_policy.REQUEST_KEY]
        self._parser = _parser(self._template, [], self._choice, self._force, "extract", policy=self._policy)

    def detect_and_parse(self, text: str) -> ReasoningResult:
        message = self._parser.parse(text)
        reasoning = message.get("reasoning_content", "")
        # A whole output with no call needs no relay: its content is final
        # (and SGLang then logs no "tool call marker present" warning).
        if self._relay and message.get("tool_calls"):
            header = _relay_header(self._thinking, self._policy)
            return ReasoningResult(normal_text=header + text, reasoning_text=reasoning)
        return ReasoningResult(normal_text=message.get("content") or "", reasoning_text=reasoning)

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        if self._stream is None:
            self._stream = self._parser.stream(errors="replace")
        return self._emit(self._stream.push(new_text), new_text)

    def finish(self) -> ReasoningResult:
        if self._stream is None:
            return ReasoningResult()
        deltas = [] if self._stream.finished else self._stream.finish()
        result = self._emit(deltas, "")
        result.reasoning_text += self._held
        self._held = ""
        return result

    def _emit(self, deltas: List[dict], raw: str) -> ReasoningResult:
        reasoning, content, _ = _split(deltas)
        if not self.stream_reasoning:
            self._held += reasoning
            reasoning = ""
            if content:  # the reasoning is over: hand it over whole
                reasoning, self._held = self._held, ""
        normal = content
        if self._relay:
            normal = raw
            if raw and not self._relayed:
                normal, self._relayed = _relay_header(self._thinking, self._policy) + raw, True
        return ReasoningResult(normal_text=normal, reasoning_text=reasoning)


class ChatAutoparserToolDetector(BaseFormatDetector):
    """SGLang tool-call detector over this library's parser (module doc)."""

    def __init__(self, tokenizer: Any = None, **_ignored: Any):
        super().__init__()
        self._template = _template_of(tokenizer)
        self._tool_choice: Any = None
        self._stream: Optional[Stream] = None
        self._last: Optional[Tuple[str, int, dict]] = None

    # -- the request's shape -------------------------------------------------

    def get_required_tool_parser(self, tool_choice: Any) -> None:
        # SGLang's one look at the request's tool_choice; our parser reads
        # required and named calls itself, so no other parser is needed.
        self._tool_choice = _choice_value(tool_choice)
        return None

    def _parser_for(self, tools: List[Any], relayed: Optional[str], policy: _policy.Policy = None) -> Parser:
        if relayed:
            thinking = _RELAY_STATE[relayed]
            return _parser(self._template, _tool_dicts(tools), self._tool_choice, thinking, "extract", policy=policy)
        # No reasoning parser ran (`separate_reasoning: false`): reasoning
        # stays in the content as the model wrote it, so no prompt is
        # assumed (none opened a block whose marker the content would gain).
        return _parser(self._template, _tool_dicts(tools), self._tool_choice, None, "inline", prompt="")

    # -- batch ---------------------------------------------------------------

    def has_tool_call(self, text: str) -> bool:
        # Relayed text always goes through detect_and_parse: the relay
        # header must go, and the content is our parse's, not the raw text.
        return self._relay_mark(text) is not None or bool(self._parse(text, None).get("tool_calls"))

    def detect_and_parse(self, text: str, tools: List[Any]) -> StreamingParseResult:
        message = self._parse(text, tools)
        indices = {t["function"].get("name"): i for i, t in enumerate(_tool_dicts(tools))}
        calls = [
            ToolCallItem(
                tool_index=indices.get(call["function"]["name"], -1),
                name=call["function"]["name"],
                parameters=call["function"]["arguments"],
            )
            for call in message.get("tool_calls", ())
        ]
        return StreamingParseResult(normal_text=message.get("content") or "", calls=calls)

    def _parse(self, text: str, tools: Optional[List[Any]]) -> dict:
        """Our parse of `text` (less a relay header); the last one is kept,
        as SGLang asks `has_tool_call` and then `detect_and_parse`."""
        key = (text, id(tools))
        if self._last is not None and self._last[:2] == key:
            return self._last[2]
        mark, policy, body = _unrelay(text)
        message = self._parser_for(tools or [], mark, policy).parse(body)
        self._last = (text, id(tools), message)
        return message

    @staticmethod
    def _relay_mark(text: str) -> Optional[str]:
        return text[0] if text and text[0] in _RELAY_STATE else None

    # -- streamed ------------------------------------------------------------

    def parse_streaming_increment(self, new_text: str, tools: List[Any]) -> StreamingParseResult:
        if self._stream is None:
            if not new_text:
                return StreamingParseResult()
            mark, policy, new_text = _unrelay(new_text)
            self._stream = self._parser_for(tools, mark, policy).stream(errors="replace")
        return self._result(self._stream.push(new_text))

    def finish(self, tools: List[Any]) -> StreamingParseResult:
        if self._stream is None or self._stream.finished:
            return StreamingParseResult()
        return self._result(self._stream.finish())

    def _result(self, deltas: List[dict]) -> StreamingParseResult:
        _, content, pieces = _split(deltas)
        calls = [
            ToolCallItem(
                tool_index=piece["index"],
                name=piece["function"].get("name"),
                parameters=piece["function"].get("arguments", ""),
            )
            for piece in pieces
        ]
        return StreamingParseResult(normal_text=content, calls=calls)

    # -- constrained decoding ------------------------------------------------

    def supports_structural_tag(self) -> bool:
        return True

    def structure_info(self) -> Callable[[str], Any]:
        # SGLang asks for per-tool begin/end strings only when
        # get_structural_tag gives nothing; ours always gives a tag.
        raise NotImplementedError(f"{NAME} gives a whole structural tag (get_structural_tag)")

    def get_structural_tag(
        self,
        tools: Optional[List[Any]] = None,
        tool_choice: Any = "auto",
        thinking_mode: bool = False,
        parallel_tool_calls: bool = True,
        **_ignored: Any,
    ) -> Any:
        """Our structural tag for the request, as xgrammar's `StructuralTag`.
        `thinking_mode` False (SGLang's reasoner backend owns the reasoning):
        the tag starts after the reasoning."""
        from xgrammar import StructuralTag

        exported = self._template.grammar(
            tools=_tool_dicts(tools), tool_choice=_choice_value(tool_choice),
            parallel_tool_calls=parallel_tool_calls is not False,
            format="structural-tag", enable_thinking=bool(thinking_mode),
        )
        return StructuralTag.model_validate(exported["structural_tag"])


def register() -> None:
    """Adds both detectors to SGLang's tables under ``chat_autoparser``
    (idempotent; the ``sglang.srt.plugins`` entry point)."""
    FunctionCallParser.ToolCallParserEnum[NAME] = ChatAutoparserToolDetector
    ReasoningParser.DetectorMap[NAME] = ChatAutoparserReasoningDetector
    if not hasattr(ReasoningParser.__init__, "chat_autoparser_wraps"):
        ReasoningParser.__init__ = _with_request_policy(ReasoningParser.__init__)


def _with_request_policy(init: Callable) -> Callable:
    """``ReasoningParser.__init__``, then our detector told the request's policy."""

    def wrapped(self: Any, model_type: Any = None, stream_reasoning: bool = True, force_reasoning: Any = None,
                request: Any = None, *args: Any, **kwargs: Any) -> None:
        init(self, model_type, stream_reasoning, force_reasoning, request, *args, **kwargs)
        if isinstance(self.detector, ChatAutoparserReasoningDetector):
            self.detector.use_request_policy(request)

    wrapped.chat_autoparser_wraps = init  # type: ignore[attr-defined]
    return wrapped


register()
