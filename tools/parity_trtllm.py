"""TensorRT-LLM's own tool-call and reasoning parsers on tools/parity.py's cases: the third
engine of the cross-engine harness.

Usage: PYTHON tools/parity_trtllm.py CASES.json OUT.json [--src DIR] [--reasoning FAMILY=NAME,...]

- CASES.json: parity.py's cases ([{"family", "case", "output", "kwargs", "id"}], or an
  object holding them under "cases", as `parity.py run --dump` writes).
- OUT.json: {id: {"content", "reasoning", "calls": [[name, arguments]]} | {"error"} | null}
  (null: TensorRT-LLM has no text parser for the family's format).
- --src: a directory holding TensorRT-LLM's `tensorrt_llm/serve/tool_parser/*.py` and
  `tensorrt_llm/llmapi/reasoning_parser.py` (default ~/.cache/chat-autoparser/trtllm/src).
  Get them without the GPU package:
      git clone --depth 1 --filter=blob:none --sparse https://github.com/NVIDIA/TensorRT-LLM
      git -C TensorRT-LLM sparse-checkout set tensorrt_llm/serve/tool_parser tensorrt_llm/llmapi
  Only those files are used; nothing of TensorRT-LLM is in this repository.
- --reasoning: another reasoning parser for a family ("none": no reasoning parser).
- PYTHON needs pydantic and partial_json_parser (the pinned SGLang or vLLM venv has both).

The rest of the `tensorrt_llm` package the parsers import (its logger, the request's tool
classes, the package inits and the parser registry) is stood in for by the shims below, in
a temporary package. The composition follows TensorRT-LLM's non-streaming chat path
(`tensorrt_llm/serve/postprocess_handlers.py`, `chat_response_post_processor`, tool_choice
"auto"): the reasoning parser's `parse(text)` first, with the request's
`chat_template_kwargs`; then the tool parser's `detect_and_parse(content, tools)`, whose
`normal_text` is the content. One fresh parser pair per case, as per request there.
"""

from __future__ import annotations

import importlib
import json
import logging
import shutil
import sys
import tempfile
from pathlib import Path

# family -> (tool parser module and class, reasoning parser name or None); None: no text
# parser for the format (gpt-oss goes through TensorRT-LLM's harmony adapter, on token ids).
FAMILIES = {
    "qwen3": (("qwen3_tool_parser", "Qwen3ToolParser"), "qwen3"),
    "qwen2.5": (("qwen3_tool_parser", "Qwen3ToolParser"), None),
    "hermes-3": (("qwen3_tool_parser", "Qwen3ToolParser"), None),
    "qwen3-coder": (("qwen3_coder_parser", "Qwen3CoderToolParser"), None),
    "qwen3.5": (("qwen3_coder_parser", "Qwen3CoderToolParser"), "deepseek_v4"),
    "step3.5": (("qwen3_coder_parser", "Qwen3CoderToolParser"), "deepseek-r1"),
    "glm-4.6": (("glm4_parser", "Glm4ToolParser"), "qwen3"),
    "glm-4.7": (("glm47_parser", "Glm47ToolParser"), None),
    "ling-3": (("glm4_parser", "Glm4ToolParser"), "deepseek_v4"),
    "kimi-k2": (("kimi_k2_tool_parser", "KimiK2ToolParser"), "kimi_k2"),
    "kimi-k2-instruct": (("kimi_k2_tool_parser", "KimiK2ToolParser"), None),
    "kimi-k3": (("kimi_k3_tool_parser", "KimiK3ToolParser"), "kimi_k3"),
    "deepseek-v3.1": (("deepseekv31_parser", "DeepSeekV31Parser"), "deepseek_v4"),
    "deepseek-v3.2": (("deepseekv32_parser", "DeepSeekV32Parser"), "deepseek_v4"),
    "deepseek-v4": (("deepseekv4_parser", "DeepSeekV4Parser"), "deepseek_v4"),
    "minimax-m2": (("minimax_m2_parser", "MiniMaxM2ToolParser"), "minimax_m2"),
    "minimax-m3": (("minimax_m3_parser", "MiniMaxM3ToolParser"), "minimax_m3"),
    "gemma-4": (("gemma4_parser", "Gemma4ToolParser"), "gemma4"),
    "laguna-xs-2.1": (("poolside_v1_parser", "PoolsideV1ToolParser"), "poolside_v1"),
}

# The shims: what the parsers import from the rest of `tensorrt_llm`.
SHIMS = {
    "tensorrt_llm/__init__.py": "from .logger import logger  # noqa: F401\n",
    "tensorrt_llm/logger.py": '''
import logging
_log = logging.getLogger("tensorrt_llm")
class _Logger:
    def _emit(self, level, msg, *args):
        try:
            text = (str(msg) % args) if args else str(msg)
        except (TypeError, ValueError):
            text = " ".join([str(msg), *map(str, args)])
        _log.log(level, text)
    def debug(self, msg, *a, **_): self._emit(logging.DEBUG, msg, *a)
    def info(self, msg, *a, **_): self._emit(logging.INFO, msg, *a)
    def warning(self, msg, *a, **_): self._emit(logging.WARNING, msg, *a)
    warn = warning
    def error(self, msg, *a, **_): self._emit(logging.ERROR, msg, *a)
logger = _Logger()
''',
    "tensorrt_llm/serve/__init__.py": "",
    "tensorrt_llm/serve/tool_parser/__init__.py": "",
    "tensorrt_llm/llmapi/__init__.py": "",
    "tensorrt_llm/serve/openai_protocol.py": '''
from typing import Any, Dict, Literal, Optional
from pydantic import BaseModel
class FunctionDefinition(BaseModel):
    name: str
    description: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None
    strict: Optional[bool] = None
class ChatCompletionToolsParam(BaseModel):
    type: Literal["function"] = "function"
    function: FunctionDefinition
''',
}

# The request's tools: tools/parity.py's TOOLS.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity import TOOLS  # noqa: E402


def package(src: Path) -> Path:
    """A temporary `tensorrt_llm` package: the shims, and the parser sources from `src`."""
    root = Path(tempfile.mkdtemp(prefix="trtllm."))
    for rel, text in SHIMS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    parsers = src / "tensorrt_llm/serve/tool_parser"
    for f in parsers.glob("*.py"):
        if f.name not in ("__init__.py", "tool_parser_factory.py"):
            shutil.copy(f, root / "tensorrt_llm/serve/tool_parser" / f.name)
    shutil.copy(src / "tensorrt_llm/llmapi/reasoning_parser.py", root / "tensorrt_llm/llmapi")
    return root


def parse_case(case: dict, tools: list) -> dict | None:
    spec = FAMILIES.get(case["family"])
    if spec is None:
        return None
    (module, cls), reasoning_name = spec
    from tensorrt_llm.llmapi.reasoning_parser import ReasoningParserFactory

    text, reasoning = case["output"], ""
    if reasoning_name is not None:
        parser = ReasoningParserFactory.create_reasoning_parser(reasoning_name, case["kwargs"] or None)
        result = parser.parse(text)
        text, reasoning = result.content, result.reasoning_content
    tool_parser = getattr(importlib.import_module(f"tensorrt_llm.serve.tool_parser.{module}"), cls)()
    result = tool_parser.detect_and_parse(text or "", tools)
    calls = [[call.name or "", call.parameters] for call in result.calls]
    return {"content": result.normal_text, "reasoning": reasoning, "calls": calls}


def main() -> int:
    argv = sys.argv[1:]
    src = Path.home() / ".cache/chat-autoparser/trtllm/src"
    if "--src" in argv:
        i = argv.index("--src")
        src = Path(argv[i + 1])
        del argv[i:i + 2]
    if "--reasoning" in argv:
        i = argv.index("--reasoning")
        for item in argv[i + 1].split(","):
            family, name = item.split("=", 1)
            FAMILIES[family] = (FAMILIES[family][0], None if name == "none" else name)
        del argv[i:i + 2]
    logging.disable(logging.CRITICAL)
    sys.path.insert(0, str(package(src)))
    from tensorrt_llm.serve.openai_protocol import ChatCompletionToolsParam

    data = json.loads(Path(argv[0]).read_text())
    cases = data["cases"] if isinstance(data, dict) else data
    tools = [ChatCompletionToolsParam.model_validate(t) for t in TOOLS]
    out = {}
    for case in cases:
        try:
            out[str(case["id"])] = parse_case(case, tools)
        except Exception as e:  # noqa: BLE001 - reported per case
            out[str(case["id"])] = {"error": f"{type(e).__name__}: {e}"}
    Path(argv[1]).write_text(json.dumps(out, ensure_ascii=False))
    ran = sum(v is not None for v in out.values())
    errors = sum(1 for v in out.values() if v is not None and "error" in v)
    print(f"{len(out)} cases: {ran} parsed by TensorRT-LLM's parsers, {errors} errors", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
