#!/usr/bin/env bash
# Runs the whole test suite from a fresh machine.
#
# The rendering-fidelity tier compares our renders with Python's jinja2, so this
# script first makes a project-local virtualenv (.venv) with the pinned jinja2.
# Tests that need ../shared (the template corpus and llama.cpp's vectors) skip
# with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import jinja2' 2>/dev/null; then
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tools/requirements.txt
fi
export CHAT_AUTOPARSER_PYTHON="$PWD/.venv/bin/python"
# Show what passing tests print: the fidelity count and the corpus summaries
# are the measured results a CI log should carry.
case " $* " in
    *" -- "*) cargo test --locked "$@" ;;
    *) cargo test --locked "$@" -- --show-output ;;
esac

# Fuzz smoke run (docs/reliability.md): each cargo-fuzz target for a few
# seconds from its committed seeds, when a nightly toolchain and cargo-fuzz
# are present. CHAT_AUTOPARSER_FUZZ_SECONDS=0 skips it.
fuzz_seconds="${CHAT_AUTOPARSER_FUZZ_SECONDS:-10}"
if [ "$fuzz_seconds" = 0 ]; then
    echo "fuzz smoke: skipped (CHAT_AUTOPARSER_FUZZ_SECONDS=0)"
elif ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz smoke: skipped, no nightly toolchain (rustup toolchain install nightly)"
elif ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: skipped, cargo-fuzz is not installed (cargo install cargo-fuzz)"
else
    # The parser still returns unfinished call arguments (issue 17 item 2,
    # another change): parse_bytes checks them only in long runs until then.
    export CHAT_AUTOPARSER_FUZZ_ARGUMENTS="${CHAT_AUTOPARSER_FUZZ_ARGUMENTS:-lenient}"
    for target in parse_bytes template_text tool_schema; do
        mkdir -p "fuzz/corpus/$target"
        echo "fuzz smoke: $target for ${fuzz_seconds}s"
        (cd fuzz && cargo +nightly fuzz run --sanitizer none -O "$target" "corpus/$target" "seeds/$target" -- \
            -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1)
    done
fi
