#!/usr/bin/env bash
# Cross-engine parity (tools/parity.py): our parse beside vLLM's and SGLang's
# real parsers, with ours from the CLI built from this tree (so a change in
# src/ shows without rebuilding the Python package). Writes docs/parity.md.
# Needs the pinned engine venvs (tools/vllm_env.sh, tools/sglang_env.sh).
# Extra arguments go to `parity.py run` (e.g. --families qwen3,glm-4.6).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p chat-autoparser-cli
exec python3 tools/parity.py run --cli target/release/chat-autoparser --out docs/parity.md "$@"
