#!/usr/bin/env bash
# Installs what `make test` needs into the virtual environment whose python is $1.
set -euo pipefail
py=${1:?usage: install-test-deps.sh PATH/TO/python}
"$py" -m pip install -q -e '.[test]'
# The torch backend's tests run on torch's CPU build. This machine's wheel cache holds
# torch-2.13.0+cpu, and its local label sorts above PyPI's CUDA build of 2.13.0, so the pin
# picks the CPU wheel on disk: no multi-GB CUDA download. Never a bare "torch" requirement.
"$py" -m pip install -q torch==2.13.0
# The measured decode of a real model (roofline decode --measure) builds it with transformers, pinned
# like torch so the tests run against the API they were written for (5.x: cache=, no_init_weights).
"$py" -m pip install -q transformers==5.24.0

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
