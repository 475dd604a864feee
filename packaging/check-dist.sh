#!/bin/sh
# Check a built one-folder app the way a user would meet it:
#   1. the smoke test answers with a clean environment (no Python on PATH, empty HOME, no
#      provisioned model, so the bundled one must be used);
#   2. a copy whose bundled model is truncated fails with a clear "error:" message and a
#      non-zero exit, not a crash or a traceback.
#
#   packaging/check-dist.sh [DIST_DIR] [PROMPT]
set -eu

dist=${1:-dist/offline-assistant}
prompt=${2:-What is the capital of France?}
exe=offline-assistant
work=$(mktemp -d "${TMPDIR:-/tmp}/check-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT

run_clean() {  # run_clean APP_DIR: the app with nothing from this shell's environment
    env -i PATH=/nonexistent HOME="$work/home" LANG=C.UTF-8 QT_QPA_PLATFORM=offscreen \
        "$1/$exe" --smoke-test "$prompt"
}

if [ ! -x "$dist/$exe" ]; then
    echo "check-dist: $dist/$exe not found; build it with 'make package'" >&2
    exit 1
fi
mkdir -p "$work/home"

echo "check-dist: smoke test in a clean environment"
start=$(date +%s)
if ! run_clean "$dist" >"$work/out" 2>"$work/err"; then
    cat "$work/out" "$work/err" >&2
    echo "check-dist: FAIL: smoke test exited non-zero" >&2
    exit 1
fi
echo "check-dist: reply ($(($(date +%s) - start)) s): $(cat "$work/out")"
if [ ! -s "$work/out" ]; then
    echo "check-dist: FAIL: empty reply" >&2
    exit 1
fi

echo "check-dist: damaged bundled model"
cp -a "$dist" "$work/damaged"
model=$(find "$work/damaged" -path '*/models/*.gguf' | head -n 1)
if [ -z "$model" ]; then
    echo "check-dist: FAIL: no bundled models/*.gguf in $dist" >&2
    exit 1
fi
truncate -s 1000000 "$model"
status=0
run_clean "$work/damaged" >"$work/out" 2>"$work/err" || status=$?
cat "$work/err"
if [ "$status" -eq 0 ]; then
    echo "check-dist: FAIL: a truncated model was accepted" >&2
    exit 1
fi
if grep -q "Traceback" "$work/err" || ! grep -q "error:" "$work/err" || [ "$status" -ge 128 ]; then
    echo "check-dist: FAIL: expected a clear 'error:' message and a normal non-zero exit, got exit $status" >&2
    exit 1
fi
echo "check-dist: OK (damaged model refused with exit $status)"
