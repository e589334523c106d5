#!/usr/bin/env bash
# Builds (or reuses) the control-plane binaries the test suite runs: kube-apiserver,
# kube-controller-manager, kube-scheduler (the stock, NUMA-blind scheduler under test)
# and etcd, pinned by go.mod beside this script, compiled with the machine's Go toolchain
# from the Go module proxy. Prints the directory holding them. kind/build-node-image.sh
# takes the same four from here (one build, one cached copy).
#
# Cache: ${NUMA_TESTKIT_CACHE:-~/.cache/numa-testkit}/controlplane/<key>/ where <key> is
# derived from go.mod, go.sum and this script, so a version bump builds afresh and an unchanged pin
# reuses the binaries. The first build downloads modules and compiles for several minutes.
# go.mod and go.sum are copied to a scratch module first: the controller-manager and the
# scheduler import packages whose go.sum lines the pin does not list (tools.go keeps the
# pin to what kube-apiserver and etcd need), and the originals - this cache's key and
# the Kind node image's - stay untouched. One build at a time per cache directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache_root=${NUMA_TESTKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numa-testkit}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$here/go.mod")
out="$cache_root/controlplane/${k8s_version}-etcd${etcd_version}-${key}"
binaries=(kube-apiserver kube-controller-manager kube-scheduler etcd)
built() { for b in "${binaries[@]}"; do [[ -x "$out/$b" ]] || return 1; done; }
if built; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "build.sh: the Go toolchain (go) is not on PATH; it is needed to build the control plane" >&2; exit 1; }
mkdir -p "$cache_root/controlplane"
exec 9>"$out.lock"
flock 9
if built; then  # another build finished while this one waited
  echo "$out"
  exit 0
fi
echo "build.sh: building kube-apiserver, kube-controller-manager, kube-scheduler $k8s_version and etcd $etcd_version into $out (first use; this takes several minutes)" >&2
tmp="$out.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp/module"
trap 'rm -rf "$tmp"' EXIT
cp "$here/go.mod" "$here/go.sum" "$tmp/module/"
cd "$tmp/module"
export GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
export CGO_ENABLED=0
# Stamp the version the way the Kubernetes release build does, so /version reports it.
minor=$(echo "$k8s_version" | cut -d. -f2)
vpkg=k8s.io/component-base/version
ldflags="-s -w -X $vpkg.gitVersion=$k8s_version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor"
ldflags="$ldflags -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
# One go build for the three: shared packages compile once and the links run in parallel.
go build -ldflags="$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler} >&2
go build -ldflags='-s -w' -o "$tmp/etcd" go.etcd.io/etcd/server/v3 >&2
rm -rf "$tmp/module" "$out"; mv "$tmp" "$out"
trap - EXIT
echo "build.sh: done" >&2
echo "$out"
