"""How often transformers reads our `response_template` as our parser does.

Reads `chat-autoparser check DIR --engines --json` lines on stdin (one Python
process serves the whole folder: the CLI keeps its checker running) and
prints, over the templates whose analysis found a tool format: how many have
every probe's `parse_response` message equal to our parser's, and the same
over probe outputs, then each disagreement (template, shape/probe, detail).

    CHAT_AUTOPARSER_PYTHON=.venv/bin/python chat-autoparser check ../shared/corpus \\
        --engines --json | python3 tools/response_template_share.py
"""

import json
import sys


def verdicts(doc):
    """(shape/probe, status, detail) of each transformers verdict."""
    for shape in doc.get("shapes", []):
        for probe in shape.get("probes", []):
            for e in probe.get("exports", []):
                if e.get("by") == "transformers":
                    at = f"{shape['shape']['name']}/{probe['name']}"
                    yield at, e["status"], e.get("detail", "")


def main() -> int:
    templates = agreeing = outputs = equal = 0
    misses = []
    for line in sys.stdin:
        doc = json.loads(line)
        if not doc.get("detection", {}).get("tool_formats"):
            continue
        seen = list(verdicts(doc))
        if not seen:
            misses.append((doc["template"], "-", "no output checked by transformers"))
        templates += 1
        bad = [v for v in seen if v[1] != "accepted"]
        agreeing += bool(seen) and not bad
        outputs += len(seen)
        equal += len(seen) - len(bad)
        misses += [(doc["template"], at, detail) for at, _, detail in bad]
    share = lambda a, b: f"{a}/{b} ({100 * a / max(b, 1):.1f}%)"
    print(f"templates with tools where every probe agrees: {share(agreeing, templates)}")
    print(f"probe outputs that agree: {share(equal, outputs)}")
    for template, at, detail in misses:
        print(f"  {template} {at}: {detail[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
