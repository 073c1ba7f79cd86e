#!/usr/bin/env bash
# Creates (or reuses) the pinned SGLang virtualenv outside the checkout and
# installs this checkout's Python package into it; prints the venv's python
# as the last line. The SGLang tier runs there:
#
#   py=$(bash tools/sglang_env.sh | tail -n1)
#   "$py" -m pytest python/tests/test_sglang.py -q -rs
#
# SGLang (11 GB with torch and CUDA wheels, a few minutes) installs once per
# machine into $CHAT_AUTOPARSER_CACHE (default ~/.cache/chat-autoparser)
# /sglang-<version>/venv, like the llama.cpp build; a venv whose sglang is
# another version is made anew. Our package is rebuilt each run (maturin,
# release, incremental in target/) and reinstalled without dependencies.
# Its `sglang.srt.plugins` entry point is what makes SGLang load
# chat_autoparser.sglang in each of its processes.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.5.23
maturin_version=1.16.0
cache="${CHAT_AUTOPARSER_CACHE:-$HOME/.cache/chat-autoparser}/sglang-$version"
venv="$cache/venv"
py="$venv/bin/python"

installed() {
    [ -x "$py" ] && "$py" - "$@" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(p) == v for p, v in (a.split("==") for a in sys.argv[1:])) else 1)
EOF
}

if ! installed "sglang==$version"; then
    # An install.log without its closing `rc=` line is an install under way.
    if [ -f "$cache/install.log" ] && ! grep -q '^rc=' "$cache/install.log"; then
        echo "sglang_env: an install into $venv is under way ($cache/install.log); run again when it ends" >&2
        exit 1
    fi
    echo "sglang_env: installing sglang==$version into $venv (once per machine; minutes, ~11 GB)" >&2
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    status=0
    "$venv/bin/pip" install --quiet --disable-pip-version-check "sglang==$version" openai \
        > "$cache/install.log" 2>&1 || status=$?
    echo "rc=$status" >> "$cache/install.log"
    [ "$status" -eq 0 ] || { tail -n 20 "$cache/install.log" >&2; exit 1; }
fi
if ! installed "maturin==$maturin_version" || ! "$py" -c "import pytest" 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$maturin_version" pytest
fi

wheels=target/wheels/sglang
rm -rf "$wheels"
"$venv/bin/maturin" build --quiet --release --locked -m python/Cargo.toml -o "$wheels" \
    --interpreter "$py" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/*.whl
echo "$py"
