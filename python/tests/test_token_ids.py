"""Token ids (issue 27): a marker that is one of the parser's
`special_tokens` counts only where the model sampled that token.

A tiny byte-level BPE is trained in the test (`tokenizers`), hermes-think's
markers added as special tokens. The same call is tokenized twice: as the
tokenizer encodes it (its markers single special tokens) and typed with
ordinary tokens (`<tool` + `_call>`, as a model quoting the user would
write it). Pushed token by token as `(text, special)` pieces, and parsed
whole by `Parser.parse_tokens`, the first is a call and the second content,
byte for byte; pushes of 1, 2, 3 and 7 tokens equal the batch parse. Text
pushed without pieces is read by its characters, as before.
"""

from __future__ import annotations

import pytest
from conftest import ROOT
from roundtrip import TOOLS
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

import chat_autoparser as ca

MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    model = Tokenizer(models.BPE())
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=MARKERS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    model.train_from_iterator([CALL, "Write it like this: the weather in Paris"], trainer)
    return model


@pytest.fixture(scope="module")
def parser() -> ca.Parser:
    template = ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja")
    return template.parser(tools=TOOLS, special_tokens=MARKERS)


def sampled(tok: Tokenizer, text: str) -> list[int]:
    """`text` as the tokenizer encodes it: markers are special tokens."""
    return tok.encode(text, add_special_tokens=False).ids


def typed(tok: Tokenizer, text: str) -> list[int]:
    """`text` written with ordinary tokens: each marker cut in two."""
    for marker in MARKERS:
        text = text.replace(marker, marker[:-3] + "\0" + marker[-3:])
    return [i for part in text.split("\0") for i in sampled(tok, part)]


def pieces(tok: Tokenizer, ids: list[int]) -> list[tuple[str, bool]]:
    special = {tok.token_to_id(m) for m in MARKERS}
    return [(tok.decode([i], skip_special_tokens=False), i in special) for i in ids]


def streamed(parser: ca.Parser, all_pieces: list[tuple[str, bool]], size: int) -> dict:
    stream = parser.stream()
    for at in range(0, len(all_pieces), size):
        stream.push_tokens(all_pieces[at:at + size])
    stream.finish()
    return stream.message()


def parse(parser: ca.Parser, all_pieces: list[tuple[str, bool]]) -> dict:
    message = parser.parse_tokens(all_pieces)
    for size in (1, 2, 3, 7):
        assert streamed(parser, all_pieces, size) == message, size
    return message


def test_the_tokenizer_writes_the_same_text_both_ways(tok):
    output = "Write it like this: " + CALL
    assert tok.decode(sampled(tok, output), skip_special_tokens=False) == output
    assert tok.decode(typed(tok, output), skip_special_tokens=False) == output
    assert len(typed(tok, output)) > len(sampled(tok, output))


def test_a_call_sampled_as_special_tokens_is_a_call(tok, parser):
    message = parse(parser, pieces(tok, sampled(tok, CALL)))
    assert [c["function"] for c in message["tool_calls"]] == [
        {"name": "get_weather", "arguments": '{"city": "Paris"}'}]


def test_a_call_typed_with_ordinary_tokens_is_content(tok, parser):
    output = "Write it like this: " + CALL
    message = parse(parser, pieces(tok, typed(tok, output)))
    assert message["content"] == output
    assert not message.get("tool_calls")
    # Pushed as text, characters decide: a call, as without token ids.
    assert len(parser.parse(output)["tool_calls"]) == 1


def test_malformed_pieces_are_refused(parser):
    with pytest.raises(ValueError, match="tuple of length 2"):
        parser.stream().push_tokens([("text",)])
    with pytest.raises(TypeError):
        parser.parse_tokens([(1, True)])
