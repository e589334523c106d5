#!/usr/bin/env bash
# Makes promtool and prometheus available for the test suite: Debian's `prometheus`
# package carries both. Idempotent: does nothing when both are on PATH; otherwise runs
# `apt-get update` and installs the package (as root, or with passwordless sudo).
# Prints the directory holding the two binaries.
set -euo pipefail
if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
  dirname "$(command -v promtool)"
  exit 0
fi
# Root runs apt-get itself; anyone else needs passwordless sudo.
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "install.sh: promtool/prometheus are missing and installing Debian's prometheus package needs root (or passwordless sudo)" >&2
    exit 1
  fi
fi
echo "install.sh: installing Debian's prometheus package (promtool, prometheus)" >&2
export DEBIAN_FRONTEND=noninteractive
# The Kind node image's build may be installing its packages at the same time (make
# test runs it in the background): wait for dpkg's lock rather than fail.
lock=(-o DPkg::Lock::Timeout=600)
"${sudo[@]}" apt-get "${lock[@]}" update -qq >&2
# The package's service is not wanted: the tests run the binary themselves. Where
# policy-rc.d forbids starting services (containers) it stays stopped anyway.
"${sudo[@]}" apt-get "${lock[@]}" install -y -qq --no-install-recommends prometheus >&2
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "install.sh: the prometheus package installed but promtool/prometheus are not on PATH" >&2
  exit 1
fi
dirname "$(command -v promtool)"
