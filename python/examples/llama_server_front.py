"""An OpenAI-compatible `/v1/chat/completions` in front of llama-server,
with chat_autoparser doing what the chat layer does: render the prompt from
the template, constrain generation with the template's GBNF (so
`tool_choice: required` and a named function hold), and parse the output
into an OpenAI message, batch and streamed (server-sent events).

llama-server only generates: the request goes to its raw `/completion`
with the rendered prompt, our grammar, the markers to keep as text
(`preserved_tokens`) and the end-of-turn marker as a stop. What is not
wired here (auth, `n`, logprobs, images) is refused or ignored.

    python python/examples/llama_server_front.py --template T.jinja \\
        --llama http://127.0.0.1:8080 --port 8000

Then point any OpenAI client at http://127.0.0.1:8000/v1. Standard
library only, besides chat_autoparser. `docs/serving.md` has the recipe;
`python/tests/test_llama_server.py` runs it.
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import chat_autoparser as ca

# What the front tells llama-server unless the request says otherwise.
DEFAULT_MAX_TOKENS = 1024


class Front:
    """One template, one llama-server. `outputs` keeps each raw generation
    (newest last), so a caller can compare what it got with the model's text."""

    def __init__(self, template: ca.ChatTemplate, llama_url: str, special_tokens: list[str] | None = None):
        self.template = template
        self.llama_url = llama_url.rstrip("/")
        # The model's special tokens: the grammar writes the markers among
        # them as tokens, so the model samples each marker as its token.
        self.special_tokens = special_tokens
        self.stop_marker = template.analyze()["turn"]["stop_marker"]
        self.outputs: list[str] = []

    def prepare(self, body: dict) -> tuple[ca.Parser, dict]:
        """The parser for this request and the `/completion` body for llama-server."""
        tools = body.get("tools") or None
        tool_choice = body.get("tool_choice")
        parallel = body.get("parallel_tool_calls", True)
        kwargs = body.get("chat_template_kwargs") or {}
        prompt = self.template.render(body["messages"], tools, **kwargs)
        parser = self.template.parser(tools, tool_choice, parallel, prompt=prompt,
                                      call_ids=secrets.randbits(64))
        completion: dict[str, Any] = {
            "prompt": prompt,
            "n_predict": body.get("max_tokens") or body.get("max_completion_tokens") or DEFAULT_MAX_TOKENS,
            "stop": [self.stop_marker] + _as_list(body.get("stop")),
        }
        for field in ("seed", "temperature", "top_p"):
            if body.get(field) is not None:
                completion[field] = body[field]
        # Empty when nothing is to be constrained (no tools, `tool_choice: none`).
        grammar = self.template.grammar(tools, tool_choice, parallel, prompt=prompt,
                                        special_tokens=self.special_tokens)
        completion["preserved_tokens"] = grammar["preserved_tokens"]
        if grammar["gbnf"]:
            completion["grammar"] = grammar["gbnf"]
            if grammar["lazy"]:
                completion["grammar_lazy"] = True
                completion["grammar_triggers"] = grammar["triggers"]
        return parser, completion

    def complete(self, body: dict) -> dict:
        """A `chat.completion` for the request."""
        parser, completion = self.prepare(body)
        result = post_json(f"{self.llama_url}/completion", completion)
        self.outputs.append(result["content"])
        cut = result.get("stop_type") == "limit"
        # A whole output even when cut: a call the cut left open is not a call
        # (its arguments are not JSON) and its text stays in the content.
        # (`parse_partial` is for showing progress: it would return the open call.)
        message = parser.parse(result["content"])
        usage = {"prompt_tokens": result.get("tokens_evaluated", 0),
                 "completion_tokens": result.get("tokens_predicted", 0)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {**_envelope("chat.completion", body),
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(message, cut),
                             "logprobs": None}],
                "usage": usage}

    def stream(self, body: dict) -> Iterator[dict]:
        """The `chat.completion.chunk`s for the request, as llama-server streams."""
        parser, completion = self.prepare(body)
        stream = parser.stream(errors="replace")
        envelope = _envelope("chat.completion.chunk", body)
        text, cut = [], False

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

        yield chunk({"role": "assistant"})
        for event in _post_sse(f"{self.llama_url}/completion", {**completion, "stream": True}):
            text.append(event.get("content", ""))
            for delta in stream.push(event.get("content", "")):
                yield chunk(delta)
            if event.get("stop"):
                cut = event.get("stop_type") == "limit"
        for delta in stream.finish():
            yield chunk(delta)
        self.outputs.append("".join(text))
        yield chunk({}, finish_reason(stream.message(), cut))


def finish_reason(message: dict, cut: bool) -> str:
    """`tool_calls` when a call came out whole, `length` when generation was
    cut with none, else `stop`."""
    if message.get("tool_calls"):
        return "tool_calls"
    return "length" if cut else "stop"


def _as_list(stop: Any) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


def _envelope(kind: str, body: dict) -> dict:
    return {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": kind, "created": int(time.time()),
            "model": body.get("model", "llama-server")}


def post_json(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def _post_sse(url: str, body: dict) -> Iterator[dict]:
    """The events of llama-server's server-sent stream (`data: {...}` lines)."""
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        for line in response:
            if line.startswith(b"data: "):
                yield json.loads(line[len(b"data: "):])


def handler(front: Front) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if not body.get("stream"):
                return self._send(200, front.complete(body))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for chunk in front.stream(body):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # quiet: the caller logs what it needs
            pass

    return Handler


def server(front: Front, port: int = 0) -> ThreadingHTTPServer:
    """The HTTP server (not started; `serve_forever` it). Port 0: any free one."""
    return ThreadingHTTPServer(("127.0.0.1", port), handler(front))


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--template", required=True, help="the model's chat template (.jinja, tokenizer_config.json or folder)")
    args.add_argument("--llama", default="http://127.0.0.1:8080", help="llama-server's base URL")
    args.add_argument("--port", type=int, default=8000)
    options = args.parse_args()
    front = Front(ca.ChatTemplate.from_file(options.template), options.llama)
    server(front, options.port).serve_forever()


if __name__ == "__main__":
    main()
