#!/usr/bin/env bash
# Regenerates the generated docs from the full data (`../shared`: the
# template corpus and llama.cpp's vectors). Tests never write tracked files;
# this is the one command that does:
# - docs/coverage.md: the analysis tables (tools/coverage.rs), then the
#   per-template blocks the vectors and engine tiers own, rewritten by those
#   runs under CHAT_AUTOPARSER_REGEN=1 (without it they only check the blocks);
# - docs/lint.md (tools/lint_report.rs);
# - docs/conformance.md (tools/conformance.sh: `check` over templates/ and the
#   corpus under each policy preset).
# The engine tiers need what tools/test.sh sets up (the venv, llama.cpp's
# validator), so they run through it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls ../shared/corpus/llamacpp/*.jinja >/dev/null 2>&1; then
    echo "regen_docs: the template corpus ../shared/corpus/llamacpp is absent; nothing regenerated" >&2
    exit 1
fi
cargo run --release --example coverage -- ../shared/corpus/llamacpp --out docs/coverage.md
lint="$(mktemp)"
cargo run --release --example lint_report -- ../shared/corpus/llamacpp templates >"$lint"
cat "$lint" >docs/lint.md
rm -f "$lint"
CHAT_AUTOPARSER_REGEN=1 bash tools/test.sh --test parser --test engines
bash tools/conformance.sh   # docs/conformance.md
