#!/usr/bin/env bash
# Builds the two llama.cpp-side checkers the GBNF tier (tests/engines/llamacpp.rs) runs:
#   test-gbnf-validator  llama.cpp's own GBNF parser and matcher, built from the
#                        vendored llama.cpp of the pinned llama-cpp-python sdist on PyPI;
#   llama-triggers       tools/llama_triggers.cpp: compiles trigger patterns with
#                        std::regex (ECMAScript) and searches them as llama.cpp's lazy
#                        grammar does.
# With the argument `server` it also builds llama-server from the same build tree
# (its ggml and llama objects are shared: 15 min more on 2 busy cores, once) and links
# llama.cpp's own `gguf` Python package (gguf-py) beside it, for the end-to-end
# tier (python/tests/test_llama_server.py).
# Both live in a cache outside the checkout, so only a fresh machine pays for the
# build (~15 min on 2 cores); later runs find them and return at once. cmake and
# ninja come from pip into a venv inside the cache. The build runs under `nice`
# because the cores are shared.
#
# Prints the directory holding both binaries on its last line. Environment:
#   CHAT_AUTOPARSER_LLAMA_DIR  overrides the cache directory.
set -euo pipefail
VERSION=0.3.36
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${CHAT_AUTOPARSER_LLAMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/chat-autoparser/llama-$VERSION}"
BIN="$CACHE/bin"
mkdir -p "$BIN"
SRC="$CACHE/src"
VENV="$CACHE/venv"
BUILD="$CACHE/build"

fetch_source() {
    local src="$SRC" venv="$VENV"
    if [ ! -d "$src/llama_cpp_python-$VERSION/vendor/llama.cpp" ]; then
        rm -rf "$src" && mkdir -p "$src"
        # Only this package is taken from source; its build backend may come as wheels.
        python3 -m pip download --quiet --disable-pip-version-check --no-deps \
            --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$src"
        tar -xzf "$src/llama_cpp_python-$VERSION.tar.gz" -C "$src"
    fi
    if [ ! -x "$venv/bin/cmake" ] || [ ! -x "$venv/bin/ninja" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check cmake ninja
    fi
}

# One configuration for every target, so building one never rebuilds another's
# objects: no native tuning (the binaries may move between machines of the
# kind), no HTTPS, and the server's web UI neither built (npm) nor downloaded.
configure() {
    "$VENV/bin/cmake" -S "$SRC/llama_cpp_python-$VERSION/vendor/llama.cpp" -B "$BUILD" -G Ninja \
        -DCMAKE_MAKE_PROGRAM="$VENV/bin/ninja" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
        -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$CACHE/configure.log"
}

# Builds one cmake target (only what it links) and copies its binary into $BIN.
build_target() {
    local target="$1"
    [ -x "$BIN/$target" ] && return 0
    fetch_source
    configure
    nice -n 10 "$VENV/bin/cmake" --build "$BUILD" --target "$target" -j "${LLAMA_BUILD_JOBS:-2}" >"$CACHE/build-$target.log"
    cp "$BUILD/bin/$target" "$BIN/$target.tmp"
    mv "$BIN/$target.tmp" "$BIN/$target"
}

# Rebuilt whenever its source changes: the binary's name carries the source's hash
# of which a copy is kept under the stable name.
build_triggers() {
    local sum
    sum="$(sha256sum "$HERE/llama_triggers.cpp" | cut -c1-16)"
    if [ ! -x "$BIN/llama-triggers-$sum" ]; then
        g++ -std=c++17 -O2 -o "$BIN/llama-triggers-$sum.tmp.$$" "$HERE/llama_triggers.cpp"
        mv "$BIN/llama-triggers-$sum.tmp.$$" "$BIN/llama-triggers-$sum"
    fi
    cp "$BIN/llama-triggers-$sum" "$BIN/llama-triggers.tmp.$$"
    mv "$BIN/llama-triggers.tmp.$$" "$BIN/llama-triggers"
}

wanted=(test-gbnf-validator)
[ "${1:-}" = server ] && wanted+=(llama-server)
# One build at a time per cache (two test runs may start it together); a run
# that finds every binary built takes no lock, so it never waits on another's build.
for target in "${wanted[@]}"; do
    if [ ! -x "$BIN/$target" ]; then
        exec 9>"$CACHE/.lock"
        flock 9
        break
    fi
done

build_triggers
for target in "${wanted[@]}"; do
    build_target "$target"
done
if [ "${1:-}" = server ] && [ ! -e "$BIN/gguf-py" ]; then
    ln -s "$SRC/llama_cpp_python-$VERSION/vendor/llama.cpp/gguf-py" "$BIN/gguf-py" 2>/dev/null || [ -e "$BIN/gguf-py" ]
fi
echo "$BIN"
