#!/usr/bin/env bash
# Fetches (or reuses) the Prometheus Operator's PodMonitor, PrometheusRule and
# ServiceMonitor CRDs, so the manifest and chart tests can apply manifests/exporter
# (podmonitor.yaml, alerts/) and charts/numa-exporter to the real API server with the
# operator's own schemas. They come from the operator's Go
# module (example/prometheus-operator-crd/), downloaded with `go mod download` from the
# Go module proxy, pinned below. Prints the directory holding the CRD files.
#
# Cache: ${NUMA_TESTKIT_CACHE:-~/.cache/numa-testkit}/prometheus-operator-crds/<version>/
set -euo pipefail
version=v0.85.0
module=github.com/prometheus-operator/prometheus-operator
cache_root=${NUMA_TESTKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numa-testkit}
out="$cache_root/prometheus-operator-crds/$version"
files=(monitoring.coreos.com_podmonitors.yaml monitoring.coreos.com_prometheusrules.yaml
  monitoring.coreos.com_servicemonitors.yaml)
have=0
for f in "${files[@]}"; do [[ -f "$out/$f" ]] && have=$((have + 1)); done
if [[ $have == "${#files[@]}" ]]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "operator-crds.sh: the Go toolchain (go) is not on PATH; it is needed to fetch $module" >&2; exit 1; }
echo "operator-crds.sh: fetching $module@$version (CRDs only)" >&2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Outside any module, so no go.mod is read or written.
dir=$(cd "$scratch" && GOFLAGS=-mod=mod go mod download -json "$module@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n "$dir" ]] || { echo "operator-crds.sh: go mod download gave no directory for $module@$version" >&2; exit 1; }
tmp="$out.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
for f in "${files[@]}"; do
  cp "$dir/example/prometheus-operator-crd/$f" "$tmp/$f"
done
rm -rf "$out"; mv "$tmp" "$out"
echo "$out"
