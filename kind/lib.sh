# shellcheck shell=bash
# shellcheck disable=SC2034  # the variables are used by the scripts that source this file
# Shared by the kind/*.sh scripts: versions, cache locations, logging. Sourced, not run.
#
# Every build step caches its output under $KIND_CACHE (default
# ~/.cache/numa-testkit/kind) in a directory named after the versions and a hash of the
# inputs that made it, and every Docker image it makes is tagged the same way, so a
# second run finds them and skips the step.

set -euo pipefail

KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$KIND_DIR/.." && pwd)
CACHE_ROOT=${NUMA_TESTKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numa-testkit}
KIND_CACHE=$CACHE_ROOT/kind

# Pinned versions. Kubernetes and etcd come from the control plane's go.mod so the Kind
# node runs exactly the release the local control plane does.
CONTROLPLANE_GOMOD=$REPO_ROOT/tests/controlplane/go.mod
K8S_VERSION=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$CONTROLPLANE_GOMOD")
ETCD_VERSION=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$CONTROLPLANE_GOMOD")
KIND_VERSION=v0.33.0
# CoreDNS: the release kind/coredns/go.mod pins, built with the plugins its main.go names.
COREDNS_VERSION=$(awk '$1=="require" && $2=="github.com/coredns/coredns"{print $3; exit}' "$KIND_DIR/coredns/go.mod")
DEBIAN_SUITE=bookworm

# Where build-node-image.sh puts kubelet, kubeadm, kubectl, kube-* and etcd: keyed by the
# pinned go.mod/go.sum and K8S_BUILD_REV (bump it when the way they are built changes).
K8S_BUILD_REV=1
K8S_BIN_KEY=$( (cat "$CONTROLPLANE_GOMOD" "${CONTROLPLANE_GOMOD%.mod}.sum"; echo "$K8S_BUILD_REV") | sha256sum | cut -c1-12)
K8S_BIN_DIR=$KIND_CACHE/k8s-$K8S_VERSION-etcd$ETCD_VERSION-$K8S_BIN_KEY

CLUSTER_NAME=${NUMA_TESTKIT_KIND_CLUSTER:-numa-testkit}
PROJECT_IMAGE=${NUMA_TESTKIT_IMAGE:-numa-testkit/numa-testkit:local}
DEBIAN_IMAGE=numa-testkit/debian:$DEBIAN_SUITE

# The engine has only the legacy builder; say so, so the client does not warn each build.
export DOCKER_BUILDKIT=0

log() { printf '[kind %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[kind] error: %s\n' "$*" >&2; exit 1; }

# hash_of FILE... -> 12 hex digits identifying the content of the files.
hash_of() { cat "$@" | sha256sum | cut -c1-12; }

# docker_build ARGS... - `docker build -q` without the legacy builder's deprecation banner.
docker_build() {
  local rc=0 err
  err=$(docker build -q "$@" 2>&1 >/dev/null) || rc=$?
  grep -vE 'DEPRECATED|BuildKit|environment-variable|buildx|docs\.docker\.com|^$' <<<"$err" >&2 || true
  return "$rc"
}

# have_image TAG -> true if the Docker engine has that image.
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# drop_other_tags REPOSITORY TAG - removes the images of REPOSITORY other than TAG: once a
# changed input gives a new key, the images of the old keys (1-2 GB each) would stay
# forever. An image still in use (a Kind cluster's container) is kept: docker refuses.
drop_other_tags() {
  local repo=$1 keep=$2 other
  while read -r other; do
    [[ $other == "$keep" ]] && continue
    if docker image rm "$other" >/dev/null 2>&1; then
      log "removed $other (replaced by $keep)"
    else
      log "kept $other (in use)"
    fi
  done < <(docker image ls --format '{{.Repository}}:{{.Tag}}' "$repo")
}

# apt_install PKG... installs Debian packages that are missing (machine-wide).
apt_install() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  [[ $(id -u) -eq 0 ]] || die "missing Debian packages ${missing[*]}: install them (needs root)"
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confold "${missing[@]}" >&2
}

# The Debian mirror apt uses on this machine (debootstrap and image builds use it too).
debian_mirror() {
  local uri
  uri=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list 2>/dev/null \
    | grep -E '/debian/?( |$)' | head -1 | awk '{ if ($1=="URIs:") print $2; else for (i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit} }')
  echo "${uri:-http://deb.debian.org/debian}"
}

# runc_wrapper_needed -> true if this machine's capability bounding set lacks a capability
# that container runtimes grant by default to privileged containers (notably
# CAP_SYS_RESOURCE, needed for negative oom_score_adj).
runc_wrapper_needed() {
  local bnd
  bnd=$(awk '$1=="CapBnd:"{print $2}' /proc/self/status)
  # Capabilities 0..40 (CAP_CHOWN..CAP_CHECKPOINT_RESTORE) all present = 0x1ffffffffff.
  (( (0x$bnd & 0x1ffffffffff) != 0x1ffffffffff ))
}

# build_runc_wrapper -> prints the path of the wrapper binary, building it on first use.
build_runc_wrapper() {
  local src=$KIND_DIR/runc-wrapper key out
  key=$(hash_of "$src/go.mod" "$src/main.go")
  out=$KIND_CACHE/runc-wrapper-$key/numa-testkit-runc
  if [[ ! -x $out ]]; then
    command -v go >/dev/null || die "the Go toolchain (go) is needed to build the runc wrapper"
    log "building the runc wrapper into $out"
    mkdir -p "$(dirname "$out")"
    (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out.tmp" .) >&2
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# coredns_binary -> prints the path of CoreDNS built from kind/coredns (the pinned release,
# only the plugins its main.go imports: about half a full build's packages), on first use.
coredns_binary() {
  local src=$KIND_DIR/coredns key out
  key=$(hash_of "$src/go.mod" "$src/go.sum" "$src/main.go")
  out=$KIND_CACHE/coredns-$COREDNS_VERSION-$key/coredns
  if [[ ! -x $out ]]; then
    command -v go >/dev/null || die "the Go toolchain (go) is needed to build CoreDNS"
    log "building CoreDNS $COREDNS_VERSION (kind/coredns: kubeadm's Corefile plugins)"
    mkdir -p "$(dirname "$out")"
    (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags='-s -w' -o "$out.tmp" .) >&2
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# go_tool MODULE@VERSION BINARY -> prints the path of a binary built with `go install`.
go_tool() {
  local pkg=$1 name=$2 out
  out=$KIND_CACHE/$name-${pkg##*@}/$name
  if [[ ! -x $out ]]; then
    log "building $pkg"
    mkdir -p "$(dirname "$out")"
    GOBIN=$(dirname "$out") CGO_ENABLED=0 GOFLAGS=-trimpath go install -ldflags='-s -w' "$pkg" >&2
  fi
  echo "$out"
}

# kind_binary -> prints the path of the kind command, built on first use.
kind_binary() { go_tool "sigs.k8s.io/kind@$KIND_VERSION" kind; }

# debian_base -> makes $DEBIAN_IMAGE (debootstrap minbase + docker import) unless present;
# the rootfs tarball is cached, so an engine without images only re-imports it.
debian_base() {
  have_image "$DEBIAN_IMAGE" && return 0
  local mirror rootfs
  mirror=$(debian_mirror)
  rootfs=$KIND_CACHE/debian-$DEBIAN_SUITE-minbase-$(echo "$mirror" | sha256sum | cut -c1-8).tar
  if [[ ! -s $rootfs ]]; then
    command -v debootstrap >/dev/null || apt_install debootstrap
    log "debootstrap $DEBIAN_SUITE (minbase) from $mirror"
    local dir
    dir=$(mktemp -d "$KIND_CACHE/debootstrap.XXXXXX")
    debootstrap --variant=minbase "$DEBIAN_SUITE" "$dir" "$mirror" >"$KIND_CACHE/debootstrap.log" 2>&1 \
      || { tail -20 "$KIND_CACHE/debootstrap.log" >&2; rm -rf "$dir"; die "debootstrap failed"; }
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    tar -C "$dir" -cf "$rootfs.tmp" .
    rm -rf "$dir"
    mv "$rootfs.tmp" "$rootfs"
  fi
  log "docker import $rootfs as $DEBIAN_IMAGE"
  docker import "$rootfs" "$DEBIAN_IMAGE" >/dev/null
}
