"""µs per streamed delta inside vLLM 0.33: its `ChatStreamProcessor` over one
Qwen3-style stream (reasoning, content, four calls with long string
arguments), one token a step, with `chat_autoparser` (one parser for both)
beside vLLM's own `hermes` tool parser + `qwen3` reasoning parser, in one
run, fastest of `--rounds` rounds.

Run in the pinned vLLM venv (tools/vllm_env.sh prints its python):
    VLLM_TARGET_DEVICE=cpu $(bash tools/vllm_env.sh | tail -n1) python/benches/vllm_bench.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "tests"))

import chat_autoparser as ca  # noqa: E402
import chat_autoparser.vllm  # noqa: E402,F401  (registers the parsers)
from test_vllm import USER, tokenizer_for  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}}}}]


def stream_text(arg_len: int) -> str:
    body = ("All work and no play makes a long argument. " * (arg_len // 44 + 1))[:arg_len]
    calls = "".join(
        '<tool_call>\n' + json.dumps({"name": "write_file", "arguments": {"path": f"/tmp/f{i}", "text": body}})
        + "\n</tool_call>\n" for i in range(4))
    return ("<think>The user wants four files written; I will write them one by one.</think>\n\n"
            "Writing the files now.\n" + calls.rstrip())


def steps(tok, ids):
    """(delta_text, delta_ids) per token, detokenized incrementally."""
    out, emitted = [], ""
    for at in range(len(ids)):
        text = tok.decode(ids[:at + 1], skip_special_tokens=False)
        delta = "" if text.endswith("\ufffd") and at + 1 < len(ids) else text[len(emitted):]
        emitted = text if delta else emitted
        out.append((delta, ids[at:at + 1]))
    return out


def per_delta_us(parser_cls, tok, request, prompt_ids, pieces) -> tuple[float, int]:
    """µs per step, and how many calls the stream announced (a check that it parsed)."""
    parser = parser_cls(tok, request.tools, chat_template_kwargs={}, model_config=None)
    processor = ChatStreamProcessor(request, parser, enable_auto_tools=True, parser_cls=parser_cls)
    results = []
    started = time.perf_counter()
    for at, (text, ids) in enumerate(pieces):
        results.append(processor.step(text, ids, "stop" if at + 1 == len(pieces) else None,
                                      prompt_ids if at == 0 else None))
    elapsed = time.perf_counter() - started
    calls = {c.index for r in results if r.delta for c in r.delta.tool_calls if c.function and c.function.name}
    return elapsed * 1e6 / len(pieces), len(calls)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    template = ca.ChatTemplate.from_file(ROOT / "templates" / "hermes-think.jinja")
    outputs = {n: stream_text(n) for n in (200, 2000)}
    tok = tokenizer_for(template, [template.source, *outputs.values()])
    request = ChatCompletionRequest(model="bench", messages=[USER], tools=TOOLS)
    prompt = template.render([USER], tools=TOOLS)
    prompt_ids = tok.encode(prompt, add_special_tokens=False)
    pairs = {"chat_autoparser": ("chat_autoparser", "chat_autoparser"), "hermes + qwen3": ("hermes", "qwen3")}
    for arg_len, output in outputs.items():
        pieces = steps(tok, tok.encode(output, add_special_tokens=False))
        for label, (tool, reasoning) in pairs.items():
            cls = ParserManager.get_parser(tool_parser_name=tool, reasoning_parser_name=reasoning,
                                           enable_auto_tools=True, tokenizer=tok)
            runs = [per_delta_us(cls, tok, request, prompt_ids, pieces) for _ in range(args.rounds)]
            best, calls = min(runs)
            print(f"{label:16s} arguments of {arg_len:5d} chars, {len(pieces):5d} deltas, {calls} calls: "
                  f"{best:7.1f} µs per delta")


if __name__ == "__main__":
    main()
