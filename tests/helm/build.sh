#!/usr/bin/env bash
# Builds (or reuses) helm at the version pinned in go.mod beside this script
# (helm.sh/helm/v4/cmd/helm from the Go module proxy), for the chart tests: helm lint,
# helm template (applied with a server-side dry run), helm install on Kind. Prints the
# helm path.
#
# Cache: ${NUMA_TESTKIT_CACHE:-~/.cache/numa-testkit}/helm/<version>-<key>/helm where <key>
# is derived from go.mod, go.sum and this script. Built in a scratch copy of the module
# (go.mod and go.sum stay untouched); the first build takes a few minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache_root=${NUMA_TESTKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numa-testkit}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/tools.go" "$here/build.sh" | sha256sum | cut -c1-16)
version=$(awk '$1=="helm.sh/helm/v4"{print $2; exit}' "$here/go.mod")
out="$cache_root/helm/${version}-${key}"
if [[ -x "$out/helm" ]]; then
  echo "$out/helm"
  exit 0
fi
command -v go >/dev/null || { echo "tests/helm/build.sh: the Go toolchain (go) is not on PATH; it is needed to build helm" >&2; exit 1; }
echo "tests/helm/build.sh: building helm $version into $out (first use; this takes a few minutes)" >&2
mkdir -p "$cache_root/helm"
tmp="$out.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp/module"
trap 'rm -rf "$tmp"' EXIT
cp "$here/go.mod" "$here/go.sum" "$here/tools.go" "$tmp/module/"
cd "$tmp/module"
export GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
export CGO_ENABLED=0
vpkg=helm.sh/helm/v4/internal/version
ldflags="-s -w -X $vpkg.version=$version -X $vpkg.metadata= -X $vpkg.gitTreeState=clean"
go build -ldflags="$ldflags" -o "$tmp/helm" helm.sh/helm/v4/cmd/helm >&2
"$tmp/helm" version >&2
rm -rf "$tmp/module" "$out"; mv "$tmp" "$out"
trap - EXIT
echo "tests/helm/build.sh: done" >&2
echo "$out/helm"
