#!/usr/bin/env bash
# Builds (or reuses) kubectl at the control plane's pinned Kubernetes version
# (k8s.io/kubernetes/cmd/kubectl, go.mod beside this script), for the manifest tests
# (kustomize rendering, server-side dry-run, auth can-i). Prints the kubectl path.
#
# Cache: ${NUMA_TESTKIT_CACHE:-~/.cache/numa-testkit}/kubectl/<version>-<key>/kubectl where
# <key> is derived from go.mod, go.sum and this script. go.mod and go.sum are copied to
# a scratch module first: resolving kubectl's extra packages may add go.sum lines, and
# the originals (build.sh's cache key) must stay untouched. Run it after build.sh so the
# Go module and build caches are warm; the first build takes a few minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache_root=${NUMA_TESTKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numa-testkit}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build-kubectl.sh" | sha256sum | cut -c1-16)
k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/go.mod")
out="$cache_root/kubectl/${k8s_version}-${key}"
if [[ -x "$out/kubectl" ]]; then
  echo "$out/kubectl"
  exit 0
fi
command -v go >/dev/null || { echo "build-kubectl.sh: the Go toolchain (go) is not on PATH; it is needed to build kubectl" >&2; exit 1; }
echo "build-kubectl.sh: building kubectl $k8s_version into $out (first use; this takes a few minutes)" >&2
tmp="$out.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp/module"
trap 'rm -rf "$tmp"' EXIT
cp "$here/go.mod" "$here/go.sum" "$tmp/module/"
cd "$tmp/module"
export GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
export CGO_ENABLED=0
minor=$(echo "$k8s_version" | cut -d. -f2)
vpkg=k8s.io/component-base/version
ldflags="-s -w -X $vpkg.gitVersion=$k8s_version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor"
ldflags="$ldflags -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
go build -ldflags="$ldflags" -o "$tmp/kubectl" k8s.io/kubernetes/cmd/kubectl >&2
"$tmp/kubectl" version --client >&2
rm -rf "$tmp/module" "$out"; mkdir -p "$(dirname "$out")"; mv "$tmp" "$out"
trap - EXIT
echo "build-kubectl.sh: done" >&2
echo "$out/kubectl"
