# shellcheck shell=bash
# Sourced after ../lib.sh by the build scripts that can hand out a project's files (its
# CRDs) without building it: copy_source_extras runs the script's copy_extras on the
# source alone, in seconds, for tests that need the CRDs but not the binaries.

# copy_source_extras -> copies what copy_extras SRC OUT copies from the source, without
# building anything, into a cache directory of its own (keyed like the build's); sets OUT.
# For tests that need a project's CRDs but not its binaries.
copy_source_extras() {
  local src label hash key
  src=$(source_path)
  read -r label hash < <(source_key "$src")
  key=$( (echo "$hash"; cat "$0" "$SCHEDULERS_DIR/lib.sh" "${BASH_SOURCE[0]}") | sha256sum | cut -c1-12)
  OUT="$CACHE_ROOT/$NAME/files-$label-$key"
  if _built; then return; fi
  mkdir -p "$CACHE_ROOT/$NAME"
  exec 8>"$OUT.lock"
  flock 8
  if _built; then return; fi
  local tmp="$OUT.tmp.$$" tree
  rm -rf "$tmp"; mkdir -p "$tmp/src" "$tmp/out"
  # shellcheck disable=SC2064  # expand now: $tmp is this copy's
  trap "rm -rf '$tmp'" EXIT
  if [[ -d $src ]]; then
    tree=$src
  else
    tar -xzf "$src" -C "$tmp/src"
    tree=$(find "$tmp/src" -mindepth 1 -maxdepth 2 -name go.mod -printf '%h\n' | head -1)
    [[ -n $tree ]] || die "$src has no go.mod at its top"
  fi
  copy_extras "$tree" "$tmp/out"
  touch "$tmp/out/.complete"
  rm -rf "$OUT"; mv "$tmp/out" "$OUT"; rm -rf "$tmp"
  trap - EXIT
}
