"""Runs transformers' own response parser on exported response templates.

The consumer of the `response_template` export (tests/engines/response_template.rs):
one JSON request a line on stdin, `{"text", "template", "prefix", "tools"}`,
one answer a line on stdout, in order: `{"ok": true, "message": {...}}` with
the message `parse_response` returns, or `{"ok": false, "error": "..."}`.
One process serves every case, so the test pays transformers' import once.

`--probe` only checks that transformers' response parser imports (exit 0).
"""

import json
import sys


def main() -> int:
    from transformers.utils.chat_parsing import parse_response

    if "--probe" in sys.argv:
        return 0
    for line in sys.stdin:
        request = json.loads(line)
        try:
            message = parse_response(
                request["text"],
                request["template"],
                prefix=request.get("prefix", ""),
                tools=request.get("tools"),
            )
            answer = {"ok": True, "message": message}
        except Exception as e:  # any failure of the parser is a result to report
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
