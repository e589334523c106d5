#!/usr/bin/env bash
# Deletes the numa-testkit Kind cluster (if it exists) and its kubeconfig. Images and the
# build cache are kept, so the next kind/up.sh is quick.
#
# Usage: kind/down.sh     env: NUMA_TESTKIT_KIND_CLUSTER (default numa-testkit)
source "$(dirname "$0")/lib.sh"

kubeconfig=$KIND_CACHE/kubeconfig-$CLUSTER_NAME
if ! docker info >/dev/null 2>&1; then
  log "no Docker engine runs: no cluster to delete"
  exit 0
fi
kind=$(kind_binary)
if "$kind" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
  log "deleting cluster $CLUSTER_NAME"
  "$kind" delete cluster --name "$CLUSTER_NAME" --kubeconfig "$kubeconfig" >&2
else
  log "cluster $CLUSTER_NAME does not exist"
fi
rm -f "$kubeconfig"
