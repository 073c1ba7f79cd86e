#!/usr/bin/env bash
# Runs the whole test suite from a fresh machine.
#
# The rendering-fidelity tier compares our renders with Python's jinja2, and the
# response-template tier parses with transformers' parse_response, so this script
# first makes a project-local virtualenv (.venv) with the pinned requirements.
# It also installs the xgrammar wheel there for the structural-tag tier.
# Tests that need ../shared (the template corpus and llama.cpp's vectors) skip
# with a message when it is absent. The llama.cpp tier needs llama.cpp's
# test-gbnf-validator, which tools/llama_gbnf.sh builds (cached). Then
# python/test.sh builds the Python package into the same .venv and runs its
# pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Formatting and lints are habits, not a separate job: a full run checks
# them first (rustfmt.toml; clippy on every target of the workspace, with
# the tests' gbnf-check feature, warnings as errors).
if [ $# -eq 0 ]; then
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --features gbnf-check --locked -- -D warnings
fi
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import jinja2, transformers.utils.chat_parsing' 2>/dev/null; then
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tools/requirements.txt
fi
# The xgrammar tier: its wheel without torch (tools/requirements-xgrammar.txt says why);
# when it cannot be installed the tier skips with a message.
if ! .venv/bin/python cli/src/xgrammar_check.py --probe >/dev/null 2>&1; then
    .venv/bin/pip install --quiet --disable-pip-version-check -r tools/requirements-xgrammar.txt \
        && .venv/bin/pip install --quiet --disable-pip-version-check --no-deps xgrammar==0.2.8 \
        || echo "note: xgrammar could not be installed; the xgrammar tier will skip"
fi
export CHAT_AUTOPARSER_PYTHON="$PWD/.venv/bin/python"
# The llama.cpp tier (tests/engines/llamacpp.rs) runs llama.cpp's GBNF matcher
# and std::regex: built once per machine into a cache outside the checkout
# (~15-20 min on 2 cores the first time, nothing after). The llama-server tier
# (python/tests/test_llama_server.py, run by python/test.sh below: a tiny
# random-weight model served end to end) adds llama-server to the same cache
# (15 min more on 2 busy cores, once), unless CHAT_AUTOPARSER_SERVERS=0 skips the
# server tiers or arguments narrowed the run to some cargo tests.
llama_server=server
if [ $# -ne 0 ] || [ "${CHAT_AUTOPARSER_SERVERS:-1}" = 0 ]; then
    llama_server=
fi
export CHAT_AUTOPARSER_LLAMA_BIN="$(bash tools/llama_gbnf.sh ${llama_server:+"$llama_server"} | tail -n 1)"
# Show what passing tests print: the fidelity count and the corpus summaries
# are the measured results a CI log should carry.
case " $* " in
    *" -- "*) cargo test --locked "$@" ;;
    *) cargo test --locked "$@" -- --show-output ;;
esac
# The Python package (python/): built into .venv and tested with pytest,
# unless arguments narrowed the run to some cargo tests.
if [ $# -eq 0 ]; then
    bash python/test.sh
fi

# Fuzz smoke run (docs/reliability.md): each cargo-fuzz target for a few
# seconds from its committed seeds, when a nightly toolchain and cargo-fuzz
# are present. CHAT_AUTOPARSER_FUZZ_SECONDS=0 skips it.
fuzz_seconds="${CHAT_AUTOPARSER_FUZZ_SECONDS:-10}"
[ $# -eq 0 ] || fuzz_seconds=0
if [ "$fuzz_seconds" = 0 ]; then
    echo "fuzz smoke: skipped (CHAT_AUTOPARSER_FUZZ_SECONDS=0)"
elif ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz smoke: skipped, no nightly toolchain (rustup toolchain install nightly)"
elif ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: skipped, cargo-fuzz is not installed (cargo install cargo-fuzz)"
else
    fuzz_target="${XDG_CACHE_HOME:-$HOME/.cache}/chat-autoparser/fuzz-target"
    for target in parse_bytes template_text tool_schema; do
        mkdir -p "fuzz/corpus/$target"
        echo "fuzz smoke: $target for ${fuzz_seconds}s"
        # Built into a cache outside the checkout: a clean clone rebuilds
        # only the crate, not libFuzzer and the dependencies.
        # libFuzzer prints a line per new input: the log keeps its summary,
        # or all of it when the target fails.
        log="$(mktemp)"
        if (cd fuzz && cargo +nightly fuzz run --target-dir "$fuzz_target" --sanitizer none -O "$target" "corpus/$target" "seeds/$target" -- \
            -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1) >"$log" 2>&1; then
            grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || tail -n 3 "$log"
            rm -f "$log"
        else
            cat "$log"
            exit 1
        fi
    done
fi

# The server tiers: our parser plugins inside vLLM 0.33 (python/tests/test_vllm.py)
# and SGLang 0.5.23 (python/tests/test_sglang.py), each run in its pinned
# virtualenv outside the checkout (tools/vllm_env.sh, tools/sglang_env.sh make
# them once per machine: ~10 GB and some minutes each; then they only
# reinstall this checkout's package). CHAT_AUTOPARSER_SERVERS=0 skips both.
if [ $# -ne 0 ] || [ "${CHAT_AUTOPARSER_SERVERS:-1}" = 0 ]; then
    echo "server tiers: skipped (a filtered run or CHAT_AUTOPARSER_SERVERS=0)"
else
    bash tools/vllm_test.sh
    sglang_py="$(bash tools/sglang_env.sh | tail -n1)"
    "$sglang_py" -m pytest python/tests/test_sglang.py -q -rs -p no:warnings
fi
