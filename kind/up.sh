#!/usr/bin/env bash
# Brings the numa-testkit Kind cluster up and prints the path of its kubeconfig.
#   1. a Docker engine (kind/docker-up.sh), 2. the offline node image
#   (kind/build-node-image.sh), 3. `kind create cluster` from kind/cluster.yaml, unless a
#   cluster of that name already runs that image, 4. waits until the node is Ready, the
#   default ServiceAccount exists and the kubelet's podresources socket answers,
#   5. builds the project image (kind/image.sh) and loads it into the node.
# The kubeconfig is $KIND_CACHE/kubeconfig-<cluster>; ~/.kube/config is left alone.
#
# Usage: kind/up.sh [--no-image]     env: NUMA_TESTKIT_KIND_CLUSTER (default numa-testkit)
source "$(dirname "$0")/lib.sh"

load_image=true
[[ ${1:-} == --no-image ]] && load_image=false

node_image=$("$KIND_DIR/build-node-image.sh")
kind=$(kind_binary)
kubectl=$K8S_BIN_DIR/kubectl
kubeconfig=$KIND_CACHE/kubeconfig-$CLUSTER_NAME
node=$CLUSTER_NAME-control-plane

if "$kind" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
  running=$(docker inspect -f '{{.Config.Image}}' "$node" 2>/dev/null || true)
  state=$(docker inspect -f '{{.State.Running}}' "$node" 2>/dev/null || true)
  if [[ $running == "$node_image" && $state == true ]]; then
    log "cluster $CLUSTER_NAME already runs $node_image: reusing it"
    "$kind" get kubeconfig --name "$CLUSTER_NAME" >"$kubeconfig"
  else
    log "cluster $CLUSTER_NAME runs ${running:-an unknown image} (running: ${state:-no}), not $node_image: recreating it"
    "$kind" delete cluster --name "$CLUSTER_NAME" --kubeconfig "$kubeconfig" >&2
  fi
fi
if ! "$kind" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
  log "creating cluster $CLUSTER_NAME from kind/cluster.yaml with $node_image"
  if ! "$kind" create cluster --name "$CLUSTER_NAME" --image "$node_image" \
      --config "$KIND_DIR/cluster.yaml" --kubeconfig "$kubeconfig" --wait 0s >&2; then
    docker logs "$node" 2>&1 | tail -30 >&2 || true
    die "kind create cluster failed (node logs above; keep the node for debugging with --retain)"
  fi
fi

# A cluster is usable when its node is Ready, pods can be admitted into the default
# namespace (its ServiceAccount exists) and the kubelet serves podresources.
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
wait_for() {
  local what=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "timed out after ${seconds}s waiting for $what"
    sleep 1
  done
  log "$what: ok"
}
wait_for "node $node registered" 120 k get node "$node"
wait_for "node $node Ready" 180 k wait --for=condition=Ready "node/$node" --timeout=5s
wait_for "default ServiceAccount" 120 k -n default get serviceaccount default
wait_for "kubelet podresources socket" 60 docker exec "$node" test -S /var/lib/kubelet/pod-resources/kubelet.sock

if $load_image; then
  image=$("$KIND_DIR/image.sh")
  log "loading $image into $CLUSTER_NAME"
  "$kind" load docker-image --name "$CLUSTER_NAME" "$image" >&2
fi
log "cluster $CLUSTER_NAME is up (kubeconfig: $kubeconfig)"
echo "$kubeconfig"
