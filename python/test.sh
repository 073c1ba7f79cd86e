#!/usr/bin/env bash
# Builds the Python package into the project's .venv and runs its tests
# (python/tests). Called by tools/test.sh after cargo test; runs alone too.
#
# Installs python/requirements.txt into .venv when it changed (a stamp
# file in .venv keeps its hash), builds the extension in release mode with
# maturin (incremental in target/), and the debug CLI the parity tests
# compare with. pytest's exit code 5 (no test collected) ends the script
# with 0 and a message, as CI reads a run that ran no test.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=.venv/.python-requirements.sha256
want=$(sha256sum python/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/pip install --quiet --disable-pip-version-check -r python/requirements.txt
    echo "$want" > "$stamp"
fi
cargo build --locked --quiet -p chat-autoparser-cli
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --locked --quiet -m python/Cargo.toml
export CHAT_AUTOPARSER_CLI="$PWD/target/debug/chat-autoparser"
status=0
.venv/bin/python -m pytest python/tests -q -rs "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "python/tests: pytest collected no test" >&2
    status=0
fi
exit "$status"
