#!/usr/bin/env bash
# Makes promtool and prometheus available for the test suite: Debian's `prometheus`
# package carries both. Idempotent: does nothing when both are on PATH; otherwise runs
# `apt-get update` and installs the package (needs root, as CI and the dev machines run).
# Prints the directory holding the two binaries.
set -euo pipefail
if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
  dirname "$(command -v promtool)"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install.sh: promtool/prometheus are missing; run as root (apt-get install prometheus) or install Debian's prometheus package" >&2
  exit 1
fi
echo "install.sh: installing Debian's prometheus package (promtool, prometheus)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# The package's service is not wanted: the tests run the binary themselves. Where
# policy-rc.d forbids starting services (containers) it stays stopped anyway.
apt-get install -y -qq --no-install-recommends prometheus >&2
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "install.sh: the prometheus package installed but promtool/prometheus are not on PATH" >&2
  exit 1
fi
dirname "$(command -v promtool)"
