#!/usr/bin/env bash
# Headless Chromium for the report test (tests/simulate/test_report_chromium.py): Debian's
# `chromium` package. Idempotent: installs only when no chromium binary is on PATH. Needs
# root (CI and the dev container run as root) or passwordless sudo. Prints the binary.
set -euo pipefail
find_chromium() {
    command -v chromium || command -v chromium-browser || true
}
bin="$(find_chromium)"
if [[ -z "$bin" ]]; then
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        sudo="sudo -n"
    fi
    echo "installing Debian's chromium (headless browser for the report test)" >&2
    # make test builds the Kind node image beside this: wait for dpkg's lock, not fail
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
        chromium fonts-dejavu-core >&2
    bin="$(find_chromium)"
fi
if [[ -z "$bin" ]]; then
    echo "chromium is not installed and could not be installed" >&2
    exit 1
fi
echo "$bin"
