"""How often transformers reads our `response_template` as our parser does.

Reads `chat-autoparser check DIR --engines --json` lines on stdin (one Python
process serves the whole folder: the CLI keeps its checker running) and
prints, over the templates whose analysis found a tool format: how many have
every probe's `parse_response` message equal to our parser's, and the same
over probe outputs; then both again over the probes our parser reads back
into the turn (where its parse is the right reference: a probe whose round
trip fails, such as a raw tagged value quoting its own closing marker, has
no right answer to agree on); then each disagreement (template,
shape/probe, detail).

    CHAT_AUTOPARSER_PYTHON=.venv/bin/python chat-autoparser check ../shared/corpus \\
        --engines --json | python3 tools/response_template_share.py
"""

import json
import sys


def verdicts(doc, read_back_only=False):
    """(shape/probe, status, detail) of each transformers verdict; with
    `read_back_only`, only on probes our parser reads back into the turn
    (no `parse_error`: our parse is then the right reference)."""
    for shape in doc.get("shapes", []):
        for probe in shape.get("probes", []):
            if read_back_only and probe.get("parse_error"):
                continue
            for e in probe.get("exports", []):
                if e.get("by") == "transformers":
                    at = f"{shape['shape']['name']}/{probe['name']}"
                    yield at, e["status"], e.get("detail", "")


class Tally:
    """Templates whose every checked probe agrees, and probe outputs that agree."""

    def __init__(self):
        self.templates = self.agreeing = self.outputs = self.equal = 0

    def add(self, seen):
        bad = [v for v in seen if v[1] != "accepted"]
        self.templates += 1
        self.agreeing += bool(seen) and not bad
        self.outputs += len(seen)
        self.equal += len(seen) - len(bad)
        return bad

    def lines(self, scope):
        share = lambda a, b: f"{a}/{b} ({100 * a / max(b, 1):.1f}%)"
        print(f"templates with tools where every probe{scope} agrees: {share(self.agreeing, self.templates)}")
        print(f"probe outputs{scope} that agree: {share(self.equal, self.outputs)}")


def main() -> int:
    every, read_back = Tally(), Tally()
    misses = []
    for line in sys.stdin:
        doc = json.loads(line)
        if not doc.get("detection", {}).get("tool_formats"):
            continue
        seen = list(verdicts(doc))
        if not seen:
            misses.append((doc["template"], "-", "no output checked by transformers"))
        bad = every.add(seen)
        read_back.add(list(verdicts(doc, read_back_only=True)))
        misses += [(doc["template"], at, detail) for at, _, detail in bad]
    every.lines("")
    read_back.lines(" our parser reads back")
    for template, at, detail in misses:
        print(f"  {template} {at}: {detail[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
