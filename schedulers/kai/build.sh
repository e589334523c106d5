#!/usr/bin/env bash
# Builds (or reuses) KAI-Scheduler's scheduler, binder, podgrouper and NUMA placement
# exporter from its source at the pinned commit, with its unmodified go.mod (every module
# from the Go module proxy), and copies its CRDs (deployments/kai-scheduler/crds) beside
# them. Prints the directory. Cold: about 9 minutes at load 10 (docs/schedulers/kai.md).
#
# Source: $NUMA_TESTKIT_KAI_SOURCE - a directory or a .tar.gz - defaulting to the shared
# snapshot kai-scheduler-d5bc503a.tar.gz. Users point it at their own clone:
#   git clone https://github.com/kai-scheduler/KAI-Scheduler && git -C KAI-Scheduler checkout d5bc503a146317e51037d89775d77172c6d12f71
#   NUMA_TESTKIT_KAI_SOURCE=$PWD/KAI-Scheduler schedulers/kai/build.sh
# Binaries are cached by source (commit) under ~/.cache/numa-testkit/kai/ (see ../lib.sh).
# shellcheck disable=SC2034  # read by ../lib.sh
NAME=kai
SOURCE_VAR=NUMA_TESTKIT_KAI_SOURCE
SNAPSHOT=kai-scheduler-d5bc503a.tar.gz
COMMIT=d5bc503a146317e51037d89775d77172c6d12f71
COMMANDS=(./cmd/scheduler ./cmd/binder ./cmd/podgrouper ./cmd/numa-placement-exporter)
# shellcheck disable=SC1091  # checked on its own
source "$(dirname "$0")/../lib.sh"

copy_extras() {
  local tree=$1 out=$2
  [[ -d $tree/deployments/kai-scheduler/crds ]] || die "$tree has no deployments/kai-scheduler/crds"
  mkdir -p "$out/crds"
  cp "$tree"/deployments/kai-scheduler/crds/*.yaml "$out/crds/"
}

build_go_source
echo "$OUT"
