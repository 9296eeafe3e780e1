#!/usr/bin/env bash
# Installs what `make test` needs into the virtual environment whose python is $1.
set -euo pipefail
py=${1:?usage: install-test-deps.sh PATH/TO/python}
"$py" -m pip install -q -e '.[test]'
