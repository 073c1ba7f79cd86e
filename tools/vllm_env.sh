#!/usr/bin/env bash
# The pinned vLLM virtualenv for the vLLM tier (python/tests/test_vllm.py),
# kept outside the checkout like llama.cpp's build, so only a fresh machine
# pays for it (about 9 minutes and 9.4 GB: vLLM pulls torch and CUDA wheels;
# its parser and serving classes import and run on CPU). Creates it once
# (or reuses it), adds pytest, builds this checkout's Python package as a
# wheel and installs it there (with its `vllm.general_plugins` entry point).
# Prints the venv's python on its last line.
#
# CHAT_AUTOPARSER_CACHE overrides ~/.cache/chat-autoparser.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.33.0
dir="${CHAT_AUTOPARSER_CACHE:-$HOME/.cache/chat-autoparser}/vllm-$version"
venv="$dir/venv"
installed() {
    "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('vllm') != '$version')" 2>/dev/null
}
if ! installed; then
    mkdir -p "$dir"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    echo "vllm_env: installing vllm==$version into $venv (minutes; log: $dir/install.log)" >&2
    "$venv/bin/pip" install --disable-pip-version-check "vllm==$version" > "$dir/install.log" 2>&1
fi
"$venv/bin/python" -c "import pytest" 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check pytest==9.2.0
[ -x .venv/bin/maturin ] || { python3 -m venv .venv && .venv/bin/pip install --quiet -r python/requirements.txt; }
rm -rf target/wheels-vllm
.venv/bin/maturin build --release --locked --quiet -m python/Cargo.toml -o target/wheels-vllm >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall target/wheels-vllm/*.whl
echo "$venv/bin/python"
