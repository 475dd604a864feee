#!/bin/sh
# Build llama.cpp's `llama-server` from the llama.cpp source the installed llama-cpp-python was
# built from (its sdist vendors it in vendor/llama.cpp), with the same CPU flags as the set-up,
# and put it at OUT (default build/llama-server/llama-server in this checkout).
#
# The build is cached outside the checkout, keyed by the llama-cpp-python version and the
# cmake flags: $XDG_CACHE_HOME/offline-assistant-build/llama-server-<version>-<hash>/. A fresh
# clone on the same machine (CI) copies the cached binary in seconds; a fresh machine builds it
# once (about 15 minutes on 2 cores). Only the llama-server target is built, Release, static
# (it runs from any folder), without CURL (the app gives it local model files).
#
# Usage: packaging/build-llama-server.sh PYTHON [OUT]   (CMAKE_ARGS: the CPU flags)
set -eu

PY=${1:?usage: build-llama-server.sh PYTHON [OUT]}
OUT=${2:-build/llama-server/llama-server}
VERSION=$("$PY" -c 'import llama_cpp; print(llama_cpp.__version__)')
FLAGS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF ${CMAKE_ARGS:-}"
KEY=$(printf '%s\n%s\n' "$VERSION" "$FLAGS" | sha256sum | cut -c1-12)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/offline-assistant-build
DEST=$CACHE/llama-server-$VERSION-$KEY

if ! "$DEST/llama-server" --version >/dev/null 2>&1; then
    echo "Building llama-server $VERSION (llama.cpp vendored by llama-cpp-python) into $DEST"
    echo "  flags: $FLAGS"
    mkdir -p "$CACHE/sdist"
    SDIST=$CACHE/sdist/llama_cpp_python-$VERSION.tar.gz
    if [ ! -s "$SDIST" ]; then
        "$PY" -m pip download --quiet --no-deps --no-binary :all: \
            --dest "$CACHE/sdist" "llama-cpp-python==$VERSION"
    fi
    WORK=$CACHE/work-$VERSION-$KEY
    rm -rf "$WORK"
    mkdir -p "$WORK"
    tar -xzf "$SDIST" -C "$WORK" --strip-components=1
    # shellcheck disable=SC2086  # FLAGS is a list of cmake arguments
    cmake -S "$WORK/vendor/llama.cpp" -B "$WORK/build" -G Ninja $FLAGS >"$WORK/configure.log"
    cmake --build "$WORK/build" --target llama-server -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
    mkdir -p "$DEST.part"
    cp "$WORK/build/bin/llama-server" "$DEST.part/llama-server"
    printf 'llama-cpp-python %s\n%s\n' "$VERSION" "$FLAGS" >"$DEST.part/BUILD_INFO"
    "$DEST.part/llama-server" --version
    rm -rf "$DEST"
    mv "$DEST.part" "$DEST"
    rm -rf "$WORK"
fi

mkdir -p "$(dirname "$OUT")"
if ! cmp -s "$DEST/llama-server" "$OUT"; then
    cp "$DEST/llama-server" "$OUT.part" && mv "$OUT.part" "$OUT"
fi
echo "llama-server $VERSION: $OUT (cached in $DEST)"
