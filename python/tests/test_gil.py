"""`parse`, `push` and `finish` release the GIL: with the switch interval at 60 s,
a second Python thread gets the GIL only when the main thread gives it
up itself, so it counts only while the main thread is inside the
library. Without the release it would count nothing.

And one parser shared by eight threads, each streaming its own output,
gives what it gives on one thread, while the threads' pushes overlap."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

import chat_autoparser as ca
from conftest import ROOT

CALL = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
# Long enough (about 1 MB, milliseconds to parse) for the other thread to
# wake up and take the GIL while the library holds none.
OUTPUT = "<think>Hm.</think>\n\n" + CALL * 20_000
# Twenty thousand calls, the last one's closer missing (about 1 MB):
# `finish` closes it, milliseconds of parsing.
CUT_CALL = OUTPUT[: -len("</tool_call>\n")]


def count_while(work) -> int:
    """How often another thread ran while `work()` ran on this one."""
    go, stop = threading.Event(), threading.Event()
    count = 0

    def counter():
        nonlocal count
        go.wait()
        while not stop.is_set():
            count += 1
            time.sleep(0)  # gives the GIL back at once, so the main thread is never kept waiting

    thread = threading.Thread(target=counter)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(60)
    try:
        thread.start()
        go.set()
        before = count
        work()
        during = count - before
    finally:
        stop.set()
        sys.setswitchinterval(previous)
        thread.join(timeout=60)
    return during


@pytest.fixture(scope="module")
def parser() -> ca.Parser:
    """The parser, used once on every kind of delta and message: the first
    dict with a key interns the key, which may give up the GIL once, and
    would let the counter run without the library releasing it."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    parser = ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja").parser(tools=tools)
    warm_up = "<think>Hm.</think>\n\nText." + CALL + CUT_CALL[:100]
    stream = parser.stream()
    stream.push(warm_up)
    stream.finish()
    stream.message()
    parser.parse(warm_up)
    return parser


def test_parse_releases_the_gil(parser):
    assert count_while(lambda: parser.parse(OUTPUT)) > 0


def test_push_releases_the_gil(parser):
    assert count_while(lambda: parser.stream().push(OUTPUT)) > 0


def test_finish_releases_the_gil(parser):
    # `finish` on one output is a few milliseconds of work, about the time a
    # loaded machine takes to wake the counter: eight in a row give it room.
    streams = [parser.stream() for _ in range(8)]
    for stream in streams:
        stream.push(CUT_CALL)
    assert count_while(lambda: [stream.finish() for stream in streams]) > 0


def test_pure_python_work_does_not_let_the_counter_run():
    """The control: the same harness around Python code counts nothing."""
    assert count_while(lambda: OUTPUT.encode().decode().upper().count("F")) == 0


def thread_output(n: int) -> str:
    """Output `n` of eight, each different: reasoning, non-ASCII content,
    calls with their own arguments, and for odd `n` a call cut off at the
    end. About 300 KB: a push takes milliseconds, long enough to overlap."""
    calls = "".join(
        '<tool_call>\n' + json.dumps({"name": "f", "arguments": {"n": n, "k": k, "s": "é✓" * n}}) + '\n</tool_call>\n'
        for k in range(2_000 + 500 * n)
    )
    cut = '<tool_call>\n{"name": "f", "arguments": {"s": "' + "ü" * 10_000 if n % 2 else ""
    return f"<think>Thread {n} thinks: {'ß' * n}</think>\n\n" + "Wörds, " * (1_000 * n) + calls + cut


def byte_chunks(text: str, size: int) -> list[bytes]:
    """`size`-byte pieces of the UTF-8 output, cutting characters."""
    data = text.encode()
    return [data[at:at + size] for at in range(0, len(data), size)]


def streamed(parser: ca.Parser, chunks: list[bytes], spans: list | None = None) -> tuple:
    """Deltas, message and `parse` of one output, pushed chunk by chunk;
    each push's (start, end) time goes to `spans`."""
    stream = parser.stream()
    deltas = []
    for chunk in chunks:
        start = time.perf_counter_ns()
        deltas += stream.push(chunk)
        if spans is not None:
            spans.append((start, time.perf_counter_ns()))
    deltas += stream.finish()
    return deltas, stream.message(), parser.parse(b"".join(chunks))


def test_eight_threads_share_one_parser(parser):
    chunks = [byte_chunks(thread_output(n), 40_000 + 7 * n) for n in range(8)]
    alone = [streamed(parser, c) for c in chunks]
    together: list = [None] * 8
    spans: list[list] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def work(n: int) -> None:
        start.wait()
        together[n] = streamed(parser, chunks[n], spans[n])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    previous = sys.getswitchinterval()
    # Threads switch only where one gives the GIL up itself (see above).
    sys.setswitchinterval(60)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        sys.setswitchinterval(previous)
    assert together == alone
    assert len({json.dumps(message) for _, message, _ in alone}) == 8
    # Two threads' pushes at once: only possible with the GIL released.
    overlaps = sum(
        1
        for n in range(8) for m in range(n + 1, 8)
        for a, b in spans[n] for c, d in spans[m]
        if a < d and c < b
    )

    assert overlaps > 0
