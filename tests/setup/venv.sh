#!/usr/bin/env bash
# The environments users install, for the tests that run commands as users do
# (tests/test_install.py, tests/test_docs.py). Prints the virtualenv's path.
#
#   tests/setup/venv.sh runtime   what `make demo` builds: `pip install -e '.[fakenrt]'`, by
#                                 the Makefile's own rule (VENV=build/venv-runtime); reused
#                                 while pyproject.toml is unchanged
#   tests/setup/venv.sh base      what `pip install numa-testkit` installs: the project
#                                 without extras, from a wheel of the current tree
#                                 (build/venv-base; dependencies kept while pyproject.toml
#                                 is unchanged, the project reinstalled on every call)
#
# PYTHON picks the interpreter (default python3), as for make.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-python3}
case ${1:-} in
runtime)
    make -C "$root" --no-print-directory PYTHON="$python" VENV=build/venv-runtime \
        build/venv-runtime/.installed-runtime >&2
    echo "$root/build/venv-runtime"
    ;;
base)
    venv=$root/build/venv-base
    key=$(sha256sum "$root/pyproject.toml" | cut -c1-16)
    if [[ ! -f $venv/.deps-$key ]]; then
        echo "tests/setup/venv.sh: building $venv (pip install numa-testkit, no extras)" >&2
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
        "$venv/bin/python" -m pip install --quiet "$root" >&2
        touch "$venv/.deps-$key"
    fi
    # the project as the tree is now (a wheel, as pip builds it for users), nothing else
    "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$root" >&2
    rm -rf "$root/build/lib" "$root"/build/bdist.*  # setuptools' in-tree build directories
    echo "$venv"
    ;;
*)
    echo "usage: tests/setup/venv.sh runtime|base" >&2
    exit 2
    ;;
esac
