#!/usr/bin/env bash
# Checks every kind/ script, and the control plane's and the schedulers' build scripts,
# with shellcheck (Debian's package, installed when missing).
source "$(dirname "$0")/lib.sh"
command -v shellcheck >/dev/null || apt_install shellcheck
shellcheck "$KIND_DIR"/*.sh "$REPO_ROOT"/tests/controlplane/*.sh "$REPO_ROOT"/schedulers/*.sh \
  "$REPO_ROOT"/schedulers/*/*.sh
