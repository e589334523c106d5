# shellcheck shell=bash
# Shared by the schedulers' build scripts (schedulers/*/build.sh): where a third-party
# source tree comes from, the cache directory of its binaries, and one Go build of its
# commands. Sourced, not run. A build script sets NAME, SOURCE_VAR, SNAPSHOT, COMMIT and
# COMMANDS, calls build_go_source, and prints the binaries' directory.
#
# Source: $<SOURCE_VAR> - a directory (a `git clone` at the pinned commit, or an
# unpacked tree) or a .tar.gz of one - defaulting to the snapshot in the nearest
# shared/sources/ above the repository (or $NUMA_TESTKIT_SOURCES), which is what CI
# builds (the Go module proxy serves these projects' dependencies, not the projects).
#
# Cache: ${NUMA_TESTKIT_CACHE:-~/.cache/numa-testkit}/<NAME>/<commit>-<key>/ where <key>
# is derived from the source (the tarball's bytes; a git tree's HEAD commit and its
# uncommitted changes; any other directory's files), the Go toolchain's version and the
# build script, so another commit or toolchain builds afresh and the same one is reused.
# One build at a time per cache directory (flock).

set -euo pipefail

SCHEDULERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCHEDULERS_DIR/.." && pwd)
CACHE_ROOT=${NUMA_TESTKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numa-testkit}

log() { printf '[%s %s] %s\n' "${NAME:-build}" "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '%s/build.sh: %s\n' "${NAME:-schedulers}" "$*" >&2; exit 1; }

# sources_dir -> the directory of the shared source snapshots.
sources_dir() {
  if [[ -n ${NUMA_TESTKIT_SOURCES:-} ]]; then
    echo "$NUMA_TESTKIT_SOURCES"
    return
  fi
  local dir=$REPO_ROOT
  while [[ $dir != / ]]; do
    dir=$(dirname "$dir")
    if [[ -d $dir/shared/sources ]]; then
      echo "$dir/shared/sources"
      return
    fi
  done
  die "no shared/sources/ above $REPO_ROOT: set \$$SOURCE_VAR to a checkout of commit $COMMIT (see docs/schedulers/$NAME.md) or \$NUMA_TESTKIT_SOURCES to the snapshots' directory"
}

# source_path -> the source this build uses (checked to exist).
source_path() {
  local given=${!SOURCE_VAR:-}
  if [[ -z $given ]]; then
    given="$(sources_dir)/$SNAPSHOT"
  fi
  [[ -e $given ]] || die "\$$SOURCE_VAR: $given does not exist"
  [[ -d $given || $given == *.tar.gz || $given == *.tgz ]] \
    || die "\$$SOURCE_VAR: $given is neither a directory nor a .tar.gz"
  echo "$given"
}

# source_key SOURCE -> "<label> <hash>": a label for the cache directory (the commit when
# known) and a hash that changes whenever the source does.
source_key() {
  local src=$1 label hash
  if [[ -d $src ]]; then
    if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      label=$(git -C "$src" rev-parse --short=8 HEAD)
      hash=$( (git -C "$src" rev-parse HEAD; git -C "$src" status --porcelain=v1 --untracked-files=no;
               git -C "$src" diff HEAD) | sha256sum | cut -c1-12)
    else
      label=tree
      hash=$(cd "$src" && find . -type f -not -path './.git/*' -print0 | LC_ALL=C sort -z \
               | xargs -0 sha256sum | sha256sum | cut -c1-12)
    fi
  else
    label=$(basename "$src"); label=${label%.tar.gz}; label=${label%.tgz}; label=${label##*-}
    hash=$(sha256sum <"$src" | cut -c1-12)
  fi
  echo "$label $hash"
}

# build_go_source -> builds COMMANDS (Go packages, e.g. ./cmd/scheduler) of the source
# into the cache if missing, plus whatever the build script's copy_extras SRC OUT copies;
# sets OUT to the binaries' directory.
build_go_source() {
  command -v go >/dev/null || die "the Go toolchain (go) is not on PATH; it is needed to build $NAME"
  local src label hash key
  src=$(source_path)
  read -r label hash < <(source_key "$src")
  key=$( (echo "$hash"; go env GOVERSION; cat "$0" "$SCHEDULERS_DIR/lib.sh") | sha256sum | cut -c1-12)
  OUT="$CACHE_ROOT/$NAME/$label-$key"
  if _built; then return; fi
  mkdir -p "$CACHE_ROOT/$NAME"
  exec 8>"$OUT.lock"
  flock 8
  if _built; then return; fi
  log "building ${COMMANDS[*]} of $src into $OUT (first use; several minutes)"
  local tmp="$OUT.tmp.$$" tree
  rm -rf "$tmp"; mkdir -p "$tmp/src"
  # shellcheck disable=SC2064  # expand now: $tmp is this build's
  trap "rm -rf '$tmp'" EXIT
  if [[ -d $src ]]; then
    tree=$src
  else
    tar -xzf "$src" -C "$tmp/src"
    tree=$(find "$tmp/src" -mindepth 1 -maxdepth 2 -name go.mod -printf '%h\n' | head -1)
    [[ -n $tree ]] || die "$src has no go.mod at its top"
  fi
  mkdir -p "$tmp/bin"
  (cd "$tree" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath" \
     go build -ldflags='-s -w' -o "$tmp/bin/" "${COMMANDS[@]}") >&2
  if declare -F copy_extras >/dev/null; then copy_extras "$tree" "$tmp/bin"; fi
  touch "$tmp/bin/.complete"
  rm -rf "$OUT"; mv "$tmp/bin" "$OUT"; rm -rf "$tmp"
  trap - EXIT
  log "done"
}

_built() {
  [[ -f $OUT/.complete ]] || return 1
}
