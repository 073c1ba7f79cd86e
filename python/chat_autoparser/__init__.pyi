from typing import AsyncIterable, AsyncIterator, Iterable, Iterator, Union

from ._native import (
    AnalysisError as AnalysisError,
    ChatTemplate as ChatTemplate,
    Delta as Delta,
    Error as Error,
    InputError as InputError,
    IoError as IoError,
    LimitError as LimitError,
    Message as Message,
    ParseError as ParseError,
    Parser as Parser,
    RenderError as RenderError,
    Stream as Stream,
    TemplateRaisedError as TemplateRaisedError,
    TemplateSyntaxError as TemplateSyntaxError,
    __version__ as __version__,
)

Chunk = Union[str, bytes]

def deltas(parser: Parser, chunks: Iterable[Chunk]) -> Iterator[Delta]: ...
def adeltas(parser: Parser, chunks: AsyncIterable[Chunk]) -> AsyncIterator[Delta]: ...
