#!/usr/bin/env bash
# Installs what `make test` needs into the virtual environment whose python is $1.
set -euo pipefail
py=${1:?usage: install-test-deps.sh PATH/TO/python}
"$py" -m pip install -q -e '.[test]'
# The torch backend's tests and the measured decode of a real model run on torch's CPU build, with the
# pins make bench installs into asv's environment (one list: requirements/models.txt).
"$py" -m pip install -q -r requirements/models.txt
# llama.cpp for engines.LlamaCppDecode and its tests (setup.cfg's `engines` extra, pinned in requirements/engines.txt):
# built from source with this machine's compiler and cmake once (minutes), then pip's cache has the wheel. Where
# it cannot be built, one line says so and what needs it skips.
engines_log=$(mktemp)
if ! "$py" -m pip install -q -r requirements/engines.txt >"$engines_log" 2>&1; then
    why=$(grep -E '^ERROR|error:' "$engines_log" | tail -n 1)
    echo "install-test-deps: llama-cpp-python could not be built (${why:-see the output of pip}): the llama.cpp tests and benchmarks will skip" >&2
fi
rm -f "$engines_log"

# The browser test of asv's published HTML runs Debian's Chromium headless (no browser download).
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -q && apt-get install -y -q chromium; } >/dev/null ||
            echo "install-test-deps: apt-get could not install chromium: the browser test will skip" >&2
    else
        echo "install-test-deps: /usr/bin/chromium is missing and apt-get needs root: the browser test will skip" >&2
    fi
fi
# The referee of the level and compute roofs is Debian's likwid (likwid-bench), installed the same way.
if ! command -v likwid-bench >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -q && apt-get install -y -q likwid; } >/dev/null ||
            echo "install-test-deps: apt-get could not install likwid: the likwid-bench referee test will skip" >&2
    else
        echo "install-test-deps: likwid-bench is missing and apt-get needs root: the likwid-bench referee test will skip" >&2
    fi
fi
