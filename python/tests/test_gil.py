"""`parse` and `push` release the GIL: with the switch interval at 60 s,
a second Python thread gets the GIL only when the main thread gives it
up itself, so it counts only while the main thread is inside the
library. Without the release it would count nothing."""

from __future__ import annotations

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
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    return ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja").parser(tools=tools)


def test_parse_releases_the_gil(parser):
    assert count_while(lambda: parser.parse(OUTPUT)) > 0


def test_push_releases_the_gil(parser):
    assert count_while(lambda: parser.stream().push(OUTPUT)) > 0


def test_pure_python_work_does_not_let_the_counter_run():
    """The control: the same harness around Python code counts nothing."""
    assert count_while(lambda: OUTPUT.encode().decode().upper().count("F")) == 0
