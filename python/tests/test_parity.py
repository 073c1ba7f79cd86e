"""Python results equal the Rust CLI's over the round-trip outputs of the
shipped templates and (when `../shared` is there) the corpus: batch
parse, the CLI's streamed parse (`chunk: 4`), Python's stream fed
`str` chunks cut as the CLI cuts, and Python's stream fed byte tokens
that split UTF-8 characters."""

from __future__ import annotations

import pytest

import chat_autoparser as ca
from conftest import run_batch, template_sets
from roundtrip import accumulate, byte_tokens, char_chunks, outputs

CASES = [(label, path) for label, paths in template_sets() for path in paths]


@pytest.fixture(scope="module")
def cli_results() -> dict:
    """CLI batch and chunked results for every round-trip output, by (path, case)."""
    keys, requests = [], []
    for _, path in CASES:
        template = ca.ChatTemplate.from_file(path)
        try:
            template.analyze()
        except ca.Error:
            continue
        for name, options, output in outputs(template):
            base = {"op": "parse", "template": str(path), "input": output, **options}
            keys.append((str(path), name))
            requests += [base, {**base, "chunk": 4}]
    results = run_batch(requests)
    return {key: (results[2 * i], results[2 * i + 1]) for i, key in enumerate(keys)}


@pytest.mark.parametrize("label,path", CASES, ids=[f"{label}/{p.stem}" for label, p in CASES])
def test_python_equals_cli(label, path, cli_results, report):
    template = ca.ChatTemplate.from_file(path)
    try:
        template.analyze()
    except ca.Error as e:
        pytest.skip(f"analysis fails: {e}")
    compared = 0
    for name, options, output in outputs(template):
        batch, chunked = cli_results[(str(path), name)]
        assert batch["ok"], batch
        want = batch["result"]
        parser = template.parser(**options)
        assert parser.parse(output) == want, name
        assert chunked["result"] == want, name
        stream = parser.stream()
        got = [d for piece in char_chunks(output, 4) for d in stream.push(piece)] + stream.finish()
        assert accumulate(got) == want, name
        stream = parser.stream()
        got = [d for token in byte_tokens(output) for d in stream.push(token)] + stream.finish()
        assert accumulate(got) == want, name
        assert stream.message() == want, name
        compared += 1
    report[f"{label} round-trip outputs: Python parse and streams (str, split bytes) equal to the CLI's"] += compared
