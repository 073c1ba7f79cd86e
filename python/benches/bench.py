#!/usr/bin/env python3
"""Python call costs of chat_autoparser (a script, not a timed test).

Measures, on the shipped Hermes template (`templates/hermes-think.jinja`):
- `parse`: `Parser.parse` of a 2 KB output (reasoning, content, two tool
  calls; once all ASCII, once with `—` and `é` on every line, which
  Python stores as UCS-2 and must transcode both ways), µs per call, against the same parse inside Rust
  (`Parser._rust_parse_us`: the crate's `parse` in a Rust loop, no Python
  call, no dict). Target: Python < 2 × Rust + 5 µs. Also printed: one
  Rust parse per Python call (`_rust_parse_us(output, 1)`: the text
  handed over and parsed, no dict built), which separates what the dicts
  cost from what a parse costs when it is not one of a tight loop.
- `push`: `Stream.push` of one 4-byte token, as `str` and as `bytes`,
  µs per call over a whole output pushed token by token (a fresh stream
  per output, `finish` included in the total). Target: < 2 µs.

Each figure is the fastest of 15 runs (timeit's advice: on a shared
machine the slower runs measure the other processes, not this code). Run after building the package
into .venv (`bash tools/test.sh` or `maturin develop --release -m python/Cargo.toml`):

    .venv/bin/python python/benches/bench.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import chat_autoparser as ca

ROOT = Path(__file__).resolve().parents[2]
RUNS = 15
TOOLS = [{"type": "function", "function": {"name": "save_note", "description": "Saves a note.", "parameters": {
    "type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}]


ASCII_NOTE = "Meeting moved to Thursday at 10, bring the <draft> & notes. "
MIXED_NOTE = "Meeting moved to Thursday — café at 10, bring the <draft> & notes. "


def output_of(size: int, note: str) -> str:
    """A Hermes output of about `size` bytes: reasoning, content, two calls
    whose arguments repeat `note`."""
    call = lambda text: ('<tool_call>\n' + json.dumps({"name": "save_note", "arguments": {"text": text, "tags": ["work"]}},
                                                       ensure_ascii=False) + "\n</tool_call>")  # noqa: E731
    head = "<think>The user wants two notes saved; I will call save_note twice.</think>\n\nSaving both notes now.\n"
    body = note
    while True:
        text = head + call(body) + "\n" + call(body[: len(body) // 2] + "Second.")
        if len(text.encode()) >= size:
            return text
        body += note


def repeat(call, arg, times: int, *more) -> None:
    """`call(arg, *more)` `times` times, dropping each result (a server
    sends a message and forgets it; keeping them all would time the
    memory they fill instead)."""
    for _ in range(times):
        call(arg, *more)


def fastest_us(run, calls: int) -> float:
    """The fastest over RUNS of the µs per call of `run()` (which makes `calls` calls)."""
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter_ns()
        run()
        samples.append((time.perf_counter_ns() - started) / 1000 / calls)
    return min(samples)


def main() -> None:
    template = ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja")
    parser = template.parser(tools=TOOLS)
    for kind, note in (("ASCII", ASCII_NOTE), ("non-ASCII", MIXED_NOTE)):
        output = output_of(2048, note)
        assert len(parser.parse(output)["tool_calls"]) == 2
        loops = 2000
        parse_py = fastest_us(lambda: repeat(parser.parse, output, loops), loops)
        parse_rust = min(parser._rust_parse_us(output, loops) for _ in range(RUNS))
        single = fastest_us(lambda: repeat(parser._rust_parse_us, output, loops, 1), loops)
        target = 2 * parse_rust + 5
        print(f"parse  {len(output.encode())} B {kind:9} output: Python {parse_py:.2f} µs/call, Rust {parse_rust:.2f} µs "
              f"in a loop (target < 2 × Rust + 5 = {target:.2f} µs: {'met' if parse_py < target else 'MISSED'}); "
              f"one Rust parse per Python call, no dict: {single:.2f} µs")

    output = output_of(2048, MIXED_NOTE)

    long = output * 8
    data = long.encode()
    text_tokens = [data[i:i + 4].decode("utf-8", "ignore") for i in range(0, len(data), 4)]
    text_tokens = [t for t in text_tokens if t]
    byte_tokens = [data[i:i + 4] for i in range(0, len(data), 4)]

    def stream_all(tokens):
        stream = parser.stream()
        push = stream.push
        for token in tokens:
            push(token)
        stream.finish()

    for kind, tokens in (("str", text_tokens), ("bytes", byte_tokens)):
        push = fastest_us(lambda: stream_all(tokens), len(tokens))
        print(f"push   one 4-byte {kind:5} token: {push:.2f} µs/call over {len(tokens)} pushes "
              f"(target < 2 µs: {'met' if push < 2 else 'MISSED'})")


if __name__ == "__main__":
    main()
