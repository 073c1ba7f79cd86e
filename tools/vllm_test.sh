#!/usr/bin/env bash
# The vLLM tier: python/tests/test_vllm.py run inside the pinned vLLM
# virtualenv (tools/vllm_env.sh creates or reuses it and installs this
# checkout's package). Extra arguments go to pytest. The same file, run in
# .venv by python/test.sh, skips with a message (no vllm there).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(bash tools/vllm_env.sh | tail -n1)
cargo build --locked --quiet -p chat-autoparser-cli
export CHAT_AUTOPARSER_CLI="$PWD/target/debug/chat-autoparser"
# VLLM_TARGET_DEVICE: no GPU here; vLLM's parser and serving classes run on CPU.
VLLM_TARGET_DEVICE=cpu "$python" -m pytest python/tests/test_vllm.py -q -rs "$@"
