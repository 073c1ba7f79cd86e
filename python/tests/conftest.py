"""Shared fixtures: where the templates and the Rust CLI are.

The shipped templates (`templates/*.jinja`) are always tested; the corpus
(`../shared/corpus/llamacpp/*.jinja`) when it is there, else the tests
that need it skip with a message. The CLI is the one `tools/test.sh` has
just built (`CHAT_AUTOPARSER_CLI`), else `target/{debug,release}`.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "templates").glob("*.jinja"))
CORPUS_DIR = ROOT.parent / "shared" / "corpus" / "llamacpp"
CORPUS = sorted(CORPUS_DIR.glob("*.jinja"))


REPORT: Counter[str] = Counter()


@pytest.fixture(scope="session")
def report() -> Counter[str]:
    """Counts the run's summary prints, by what was counted: the measured
    results a CI log carries."""
    return REPORT


def pytest_terminal_summary(terminalreporter):
    if REPORT:
        terminalreporter.section("chat_autoparser measurements")
        for what, count in sorted(REPORT.items()):
            terminalreporter.write_line(f"{count:6d}  {what}")


def cli_path() -> Path | None:
    """The chat-autoparser binary to compare with, if one is built."""
    given = os.environ.get("CHAT_AUTOPARSER_CLI")
    candidates = [Path(given)] if given else [ROOT / "target" / d / "chat-autoparser" for d in ("debug", "release")]
    built = [c for c in candidates if c.is_file()]
    return max(built, key=lambda p: p.stat().st_mtime) if built else None


def run_batch(requests: list[dict]) -> list[dict]:
    """Runs `chat-autoparser batch` on the requests; results in order."""
    cli = cli_path()
    if cli is None:
        pytest.skip("no chat-autoparser binary built (cargo build)")
    text = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run([str(cli), "batch"], input=text, capture_output=True, text=True, check=True)
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(requests), done.stderr
    return results


def template_sets() -> list[tuple[str, list[Path]]]:
    """The template sets to run over: shipped, and the corpus when present."""
    sets = [("shipped", SHIPPED)]
    if CORPUS:
        sets.append(("corpus", CORPUS))
    return sets


def corpus_or_skip() -> list[Path]:
    if not CORPUS:
        pytest.skip(f"{CORPUS_DIR} absent: the corpus tier needs ../shared")
    return CORPUS
