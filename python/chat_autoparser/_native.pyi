"""Types of the Rust extension module (see ``python/src/``)."""

from __future__ import annotations

from os import PathLike
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, TypedDict, Union

__version__: str

Json = Any
Output = Union[str, bytes, bytearray]
ToolChoice = Union[Literal["auto", "required", "none"], str, Mapping[str, Any], None]

class FunctionCall(TypedDict):
    name: str
    arguments: str  # JSON text

class ToolCall(TypedDict):
    id: Optional[str]  # the model's own id, else one minted from ``call_ids``, else None
    type: Literal["function"]
    function: FunctionCall

class _MessageBase(TypedDict):
    role: Literal["assistant"]
    content: Optional[str]  # None when empty and there are tool calls

class Message(_MessageBase, total=False):
    reasoning_content: str  # left out when empty
    tool_calls: list[ToolCall]  # left out when empty

class FunctionDelta(TypedDict, total=False):
    name: str
    arguments: str

class _ToolCallDeltaBase(TypedDict):
    index: int
    function: FunctionDelta

class ToolCallDelta(_ToolCallDeltaBase, total=False):
    id: str
    type: Literal["function"]

class Delta(TypedDict, total=False):
    """An OpenAI ``choices[0].delta``: one kind of text per delta."""
    content: str
    reasoning_content: str
    tool_calls: list[ToolCallDelta]

class Diagnostic(TypedDict):
    kind: str  # "broken_tool_call", "withdrawn_tool_call", "oversized_tool_call", "unknown_member", "extra_tool_call",
    # "unknown_tool", "unknown_label", "unparsed", "dropped", "salvaged_tool_call", "unknown_tool_call",
    # "foreign_marker", "stray_marker", "call_in_reasoning"
    offset: int  # byte offset in the output

class Trigger(TypedDict):
    kind: Literal["word", "pattern", "pattern_full", "token"]
    value: str

class _GrammarBase(TypedDict):
    gbnf: str  # empty when nothing is constrained
    lazy: bool
    triggers: list[Trigger]
    preserved_tokens: list[str]

class Grammar(_GrammarBase, total=False):
    warnings: list[str]

class ChatTemplate:
    """A compiled chat template. Safe to share between threads."""

    @staticmethod
    def from_str(
        text: str, *, bos_token: Optional[str] = None, eos_token: Optional[str] = None,
        analysis: Union[str, Mapping[str, Any], None] = None,
    ) -> ChatTemplate:
        """Compiles template text; raises ``TemplateSyntaxError`` with ``line``/``column``.
        ``analysis``: a cached ``analysis_json()`` to skip analysing."""
    @staticmethod
    def from_file(
        path: Union[str, PathLike[str]], *, bos_token: Optional[str] = None, eos_token: Optional[str] = None,
        analysis: Union[str, Mapping[str, Any], None] = None,
    ) -> ChatTemplate:
        """Loads a ``.jinja`` file, a ``tokenizer_config.json`` (its ``chat_template``,
        ``bos_token``, ``eos_token``) or a model folder. A missing file raises ``IoError``."""
    @staticmethod
    def from_pretrained(
        directory: Union[str, PathLike[str]], *, analysis: Union[str, Mapping[str, Any], None] = None,
    ) -> ChatTemplate:
        """Loads a model folder: ``chat_template.jinja``, else ``chat_template.json``,
        else ``tokenizer_config.json``; BOS/EOS from ``tokenizer_config.json``."""
    @property
    def source(self) -> str: ...
    @property
    def bos_token(self) -> Optional[str]: ...
    @property
    def eos_token(self) -> Optional[str]: ...
    def render(
        self, messages: Sequence[Mapping[str, Any]], tools: Optional[Sequence[Mapping[str, Any]]] = None,
        add_generation_prompt: bool = True, **template_kwargs: Any,
    ) -> str:
        """The prompt text, byte-identical to transformers' ``apply_chat_template(...,
        tokenize=False)`` with the same arguments (``enable_thinking=...``,
        ``reasoning_effort=...`` and any other template variable as keywords), except
        that a tool without ``description`` or ``parameters`` (the OpenAI API allows
        both) is given ``""`` and an empty object schema first, as the CLI does.
        ``continue_final_message=True`` ends the prompt inside the final message's
        content, with no generation prompt, as transformers cuts it."""
    def capabilities(self) -> dict[str, Any]:
        """What the template renders: ``system_role``, ``tools``, ``tool_calls``,
        ``tool_responses``, ``parallel_calls``, ``thinking_toggle``..."""
    def analyze(self) -> dict[str, Any]:
        """The analysis (turn, reasoning, content and tool-call markers) as a dict."""
    def analysis_json(self) -> str:
        """The analysis as deterministic JSON text. Cache it (keyed by the template text) and
        pass it to ``from_str``/``from_file``/``from_pretrained(..., analysis=text)`` to skip
        analysing the same template again."""
    def check(self) -> dict[str, Any]:
        """Will this template work? ``{"verdict": "works"|"warnings"|"unsupported", "warnings",
        "notes", "detection", "shapes", "prompt", "lint"}``, as ``chat-autoparser check --json``
        (docs/check.md) without the engines."""
    def parser(
        self, tools: Optional[Sequence[Mapping[str, Any]]] = None, tool_choice: ToolChoice = None,
        parallel_tool_calls: bool = True, enable_thinking: Optional[bool] = None, prompt: Optional[str] = None,
        *, messages: Optional[Sequence[Mapping[str, Any]]] = None,
        reasoning: Literal["extract", "inline"] = "extract",
        response_schema: Optional[Mapping[str, Any]] = None,
        continue_final_message: Union[bool, Literal["none", "auto", "reasoning", "content"], None] = None,
        call_ids: Optional[int] = None,
        policy: Union[str, Mapping[str, Any], None] = None,
        special_tokens: Optional[Sequence[str]] = None,
    ) -> Parser:
        """A parser for the outputs of one request shape. ``prompt``: the rendered prompt
        the output continues; when None it is rendered from ``messages`` (default one
        user turn) with these tools and ``enable_thinking``, as the CLI does. A prompt
        that does not render gives a ``UserWarning`` saying why and a parser built
        without it. ``call_ids``: a seed (an unsigned 64-bit int) from which calls the
        model wrote without an id get OpenAI-style ids (``call_`` + 24 letters and
        digits), in messages and in the first delta of each call; the same seed gives
        the same ids, so a server passes a fresh one per request. None: such ids are None.
        ``special_tokens``: the vocabulary's special tokens (texts); where output comes
        as token pieces (``parse_tokens``, ``Stream.push_tokens``), a marker holding one
        counts only where the model sampled it: typed with ordinary tokens it is content."""
    def grammar(
        self, tools: Optional[Sequence[Mapping[str, Any]]] = None, tool_choice: ToolChoice = None,
        parallel_tool_calls: bool = True, response_schema: Optional[Mapping[str, Any]] = None,
        *, format: Literal["gbnf", "structural-tag", "lark", "response-template"] = "gbnf",
        enable_thinking: Optional[bool] = None, prompt: Optional[str] = None,
        special_tokens: Optional[Sequence[str]] = None,
    ) -> Dict[str, Any]:
        """A grammar for constrained decoding, in the shape of the engine ``format`` names:
        ``gbnf`` (llama.cpp; lazy with triggers for ``auto``), ``structural-tag`` (xgrammar),
        ``lark`` (llguidance) or ``response-template`` (transformers' ``parse_response``).
        ``prompt`` or ``enable_thinking`` say where reasoning stands when the output starts.
        ``special_tokens`` (the serving model's, its whole list will do): ``gbnf`` and ``lark``
        write the markers among them as tokens (``<tool_call>``), so the model must sample
        the token; markers without the ``<...>`` form stay text, with a warning."""

class Parser:
    """Parses one template's outputs. Immutable; share it between threads, each
    with streams of its own. ``parse``, ``push`` and ``finish`` release the GIL."""

    def parse(self, output: Output) -> Message:
        """The OpenAI assistant message. Never fails on odd output (it stays content);
        ``bytes`` must be UTF-8 (else ``UnicodeDecodeError``)."""
    def parse_partial(self, output: Output) -> Message:
        """The message so far of an output cut off mid-stream."""
    def parse_strict(self, output: Output) -> Message:
        """Raises ``ParseError`` (``kind``, byte ``offset``) at the first problem."""
    def parse_report(self, output: Output, partial: bool = False) -> tuple[Message, list[Diagnostic]]:
        """The lenient parse and the problems it found."""
    def parse_tokens(self, pieces: Sequence[tuple[str, bool]], partial: bool = False) -> Message:
        """The message of an output given as ``(text, special)`` pieces: each a token's
        text (or a run of ordinary tokens') and whether it was sampled as a special token.
        A marker that is one of ``special_tokens`` counts only as a special piece."""
    @property
    def start(self) -> Literal["free", "in_reasoning", "after_reasoning"]:
        """Where outputs start relative to reasoning, as the prompt left it."""
    def stream(self, errors: Literal["strict", "replace"] = "strict") -> Stream:
        """A stream for one output; ``errors`` for invalid UTF-8 in ``bytes`` chunks."""

class Stream:
    """One output's incremental parse. Not for concurrent use."""

    def push(self, chunk: Output) -> list[Delta]:
        """Appends a chunk (``bytes`` may split a character); the deltas it made final."""
    def push_tokens(self, pieces: Sequence[tuple[str, bool]]) -> list[Delta]:
        """Appends ``(text, special)`` pieces (see ``Parser.parse_tokens``); the deltas they
        made final. From the first such push on, text pushed by ``push`` counts as ordinary
        tokens."""
    def finish(self) -> list[Delta]:
        """Ends the output; the last deltas. Pushing after it raises ``RuntimeError``."""
    def message(self) -> Message:
        """The message the deltas so far add up to."""
    @property
    def diagnostics(self) -> list[Diagnostic]: ...
    @property
    def finished(self) -> bool: ...

class Error(Exception):
    """Base of the library's errors."""
    kind: str  # "io", "input", "syntax", "raised", "render", "limit", "analysis"
    message: str
    line: Optional[int]
    column: Optional[int]

class IoError(Error): ...
class InputError(Error): ...
class TemplateSyntaxError(Error): ...
class TemplateRaisedError(Error): ...
class RenderError(Error): ...
class LimitError(Error): ...
class AnalysisError(Error): ...

class ParseError(Error):
    kind: str  # the diagnostic's kind
    offset: int
