#!/usr/bin/env bash
# Checks every kind/ script with shellcheck (Debian's package, installed when missing).
source "$(dirname "$0")/lib.sh"
command -v shellcheck >/dev/null || apt_install shellcheck
shellcheck "$KIND_DIR"/*.sh
