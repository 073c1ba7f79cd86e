#!/usr/bin/env bash
# Runs the whole test suite from a fresh machine.
#
# The rendering-fidelity tier compares our renders with Python's jinja2, so this
# script first makes a project-local virtualenv (.venv) with the pinned jinja2.
# Tests that need ../shared (the template corpus and llama.cpp's vectors) skip
# with a message when it is absent. The llama.cpp tier needs llama.cpp's
# test-gbnf-validator, which tools/llama_gbnf.sh builds (cached).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import jinja2' 2>/dev/null; then
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tools/requirements.txt
fi
export CHAT_AUTOPARSER_PYTHON="$PWD/.venv/bin/python"
# The llama.cpp tier (tests/grammar_llamacpp.rs) runs llama.cpp's GBNF matcher
# and std::regex: built once per machine into a cache outside the checkout
# (~15-20 min on 2 cores the first time, nothing after).
export CHAT_AUTOPARSER_LLAMA_BIN="$(bash tools/llama_gbnf.sh | tail -n 1)"
# Show what passing tests print: the fidelity count and the corpus summaries
# are the measured results a CI log should carry.
case " $* " in
    *" -- "*) exec cargo test --locked "$@" ;;
    *) exec cargo test --locked "$@" -- --show-output ;;
esac
