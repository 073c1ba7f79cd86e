"""chat_autoparser: read any LLM chat template, render prompts with
transformers' semantics, and parse model output into OpenAI messages and
streamed deltas, with no per-model code.

The classes come from the Rust extension ``chat_autoparser._native``;
this module adds iteration helpers over a ``Stream``. Types are in
``_native.pyi``.
"""

from __future__ import annotations

from typing import AsyncIterable, AsyncIterator, Iterable, Iterator, Union

from ._native import (
    AnalysisError,
    ChatTemplate,
    Error,
    InputError,
    IoError,
    LimitError,
    ParseError,
    Parser,
    RenderError,
    Stream,
    TemplateRaisedError,
    TemplateSyntaxError,
    __version__,
)

__all__ = [
    "AnalysisError",
    "ChatTemplate",
    "Error",
    "InputError",
    "IoError",
    "LimitError",
    "ParseError",
    "Parser",
    "RenderError",
    "Stream",
    "TemplateRaisedError",
    "TemplateSyntaxError",
    "__version__",
    "adeltas",
    "deltas",
]

Chunk = Union[str, bytes]


def deltas(parser: Parser, chunks: Iterable[Chunk]) -> Iterator[dict]:
    """Yields the OpenAI delta dicts of an output given as chunks (``str``
    or ``bytes``, e.g. detokenized tokens), the final ones included."""
    stream = parser.stream()
    for chunk in chunks:
        yield from stream.push(chunk)
    yield from stream.finish()


async def adeltas(parser: Parser, chunks: AsyncIterable[Chunk]) -> AsyncIterator[dict]:
    """``deltas`` over an async iterable of chunks (a server's token stream)."""
    stream = parser.stream()
    async for chunk in chunks:
        for delta in stream.push(chunk):
            yield delta
    for delta in stream.finish():
        yield delta
