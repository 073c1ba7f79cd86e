#!/usr/bin/env bash
# Regenerates docs/conformance.md: `chat-autoparser check --json` over the
# shipped templates/ and, when present, ../shared/corpus/llamacpp, once per
# output-policy preset (lossless, compatible), summarized by
# tools/conformance.py. The probes are check's own (the templates' renders of
# its probe turns); nothing is taken from other projects' tests.
# Usage: bash tools/conformance.sh [OUT]   (OUT defaults to docs/conformance.md)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-docs/conformance.md}"
cargo build --release --quiet -p chat-autoparser-cli --features gbnf-check
BIN=target/release/chat-autoparser
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for policy in lossless compatible; do
    for dir in templates ../shared/corpus/llamacpp; do
        [ -d "$dir" ] || continue
        set_name="$(basename "$dir")"
        # Exit 3 and 4 are verdicts (warnings, unsupported), not failures.
        "$BIN" check "$dir" --json --policy "$policy" >"$work/$set_name.$policy.jsonl" || [ $? -le 4 ]
    done
done
python3 tools/conformance.py "$work" >"$OUT"
echo "wrote $OUT"
