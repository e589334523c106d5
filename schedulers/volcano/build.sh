#!/usr/bin/env bash
# Builds (or reuses) Volcano's scheduler and controller-manager (which makes a PodGroup
# for every plain pod naming the scheduler) from its source at the pinned commit, with
# its unmodified go.mod (every module from the Go module proxy), and copies its CRDs
# (config/crd/volcano/bases: PodGroup, Queue, Numatopology...) beside them. Prints the
# directory. Cold: about 4 minutes on 2 cores (docs/schedulers/volcano.md).
#
# Source: $NUMA_TESTKIT_VOLCANO_SOURCE - a directory or a .tar.gz - defaulting to the
# shared snapshot volcano-ed72c7c8.tar.gz. Users point it at their own clone:
#   git clone https://github.com/volcano-sh/volcano && git -C volcano checkout ed72c7c815a9fd547a787134676f73d42e9d049c
#   NUMA_TESTKIT_VOLCANO_SOURCE=$PWD/volcano schedulers/volcano/build.sh
# With --crds it only extracts the CRDs (seconds) and prints their directory.
# Binaries are cached by source (commit) under ~/.cache/numa-testkit/volcano/ (../lib.sh).
# shellcheck disable=SC2034  # read by ../lib.sh
NAME=volcano
SOURCE_VAR=NUMA_TESTKIT_VOLCANO_SOURCE
SNAPSHOT=volcano-ed72c7c8.tar.gz
COMMIT=ed72c7c815a9fd547a787134676f73d42e9d049c
COMMANDS=(./cmd/scheduler ./cmd/controller-manager)
# shellcheck disable=SC1091  # checked on its own
source "$(dirname "$0")/../lib.sh"
# shellcheck disable=SC1091
source "$(dirname "$0")/../extras.sh"

copy_extras() {
  local tree=$1 out=$2
  [[ -d $tree/config/crd/volcano/bases ]] || die "$tree has no config/crd/volcano/bases"
  mkdir -p "$out/crds"
  cp "$tree"/config/crd/volcano/bases/*.yaml "$out/crds/"
}

if [[ ${1:-} == --crds ]]; then  # the CRDs only, no build (tests of what they serve)
  copy_source_extras
  echo "$OUT/crds"
  exit
fi
build_go_source
echo "$OUT"
