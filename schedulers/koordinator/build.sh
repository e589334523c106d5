#!/usr/bin/env bash
# Builds (or reuses) Koordinator's koord-scheduler (kube-scheduler with Koordinator's
# plugins, NodeNUMAResource among them) from its source at the pinned commit, with its
# unmodified go.mod (every module from the Go module proxy), and copies its CRDs
# (config/crd/bases, but for the NodeResourceTopology CRD, which the harness installs
# from manifests/crds) beside it. Prints the directory. Cold: about 4 minutes on 2 cores
# (docs/schedulers/koordinator.md).
#
# Source: $NUMA_TESTKIT_KOORDINATOR_SOURCE - a directory or a .tar.gz - defaulting to the
# shared snapshot koordinator-a7a1b76b.tar.gz. Users point it at their own clone:
#   git clone https://github.com/koordinator-sh/koordinator && git -C koordinator checkout a7a1b76bbf81abd26f9c377de1f31a60dd965f6e
#   NUMA_TESTKIT_KOORDINATOR_SOURCE=$PWD/koordinator schedulers/koordinator/build.sh
# With --crds it only extracts the CRDs (seconds) and prints their directory.
# Binaries are cached by source (commit) under ~/.cache/numa-testkit/koordinator/.
# shellcheck disable=SC2034  # read by ../lib.sh
NAME=koordinator
SOURCE_VAR=NUMA_TESTKIT_KOORDINATOR_SOURCE
SNAPSHOT=koordinator-a7a1b76b.tar.gz
COMMIT=a7a1b76bbf81abd26f9c377de1f31a60dd965f6e
COMMANDS=(./cmd/koord-scheduler)
# shellcheck disable=SC1091  # checked on its own
source "$(dirname "$0")/../lib.sh"
# shellcheck disable=SC1091
source "$(dirname "$0")/../extras.sh"

copy_extras() {
  local tree=$1 out=$2 crd
  [[ -d $tree/config/crd/bases ]] || die "$tree has no config/crd/bases"
  mkdir -p "$out/crds"
  for crd in "$tree"/config/crd/bases/*.yaml; do
    [[ $(basename "$crd") == topology.node.k8s.io_* ]] || cp "$crd" "$out/crds/"
  done
}

if [[ ${1:-} == --crds ]]; then  # the CRDs only, no build (tests of what they serve)
  copy_source_extras
  echo "$OUT/crds"
  exit
fi
build_go_source
echo "$OUT"
