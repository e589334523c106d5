#!/usr/bin/env bash
# Builds the project image ($PROJECT_IMAGE, default numa-testkit/numa-testkit:local) offline
# and prints its tag: Debian's python3 on the debootstrap base, plus the project and its
# dependencies installed on the host from wheels into one site directory. The wheels
# must match the image's python3 (Debian bookworm: CPython 3.11).
#
# Usage: kind/image.sh [PYTHON]   (PYTHON: the interpreter whose pip builds the wheels;
#                                  default .venv/bin/python, else python3)
source "$(dirname "$0")/lib.sh"

python=${1:-$REPO_ROOT/.venv/bin/python}
[[ -x $python ]] || python=$(command -v python3)
"$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || die "$python is not CPython 3.11; the image's Debian python3 is 3.11, so wheels must be built by a 3.11 pip"

"$KIND_DIR/docker-up.sh"
mkdir -p "$KIND_CACHE"
exec 9>"$KIND_CACHE/build.lock"
flock 9
debian_base

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# The dependencies' wheels (the exporter's and the `fakenrt` extra's: the image runs every
# entrypoint) are cached by pyproject.toml's content; the project's own wheel is rebuilt
# every time, without build isolation (the interpreter's setuptools).
deps=$KIND_CACHE/wheels-py311-$(hash_of "$REPO_ROOT/pyproject.toml")
if [[ ! -d $deps ]]; then
  log "building the dependencies' wheels into $deps"
  "$python" -m pip wheel --quiet --wheel-dir "$deps.tmp" "${REPO_ROOT}[fakenrt]" >&2
  rm -f "$deps.tmp"/numa_testkit-*.whl
  mv "$deps.tmp" "$deps"
fi
log "building the project wheel and the site directory for $PROJECT_IMAGE"
mkdir -p "$ctx/wheels"
cp "$deps"/*.whl "$ctx/wheels/"
"$python" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$ctx/wheels" "$REPO_ROOT" >&2
"$python" -m pip install --quiet --no-compile --no-index --no-deps --target "$ctx/site" "$ctx"/wheels/*.whl >&2
# Byte-compiled here: the image's user cannot write __pycache__ (and PYTHONDONTWRITEBYTECODE
# is set), so without these every start would compile every module it imports from
# source. unchecked-hash: valid whatever the files' mtimes (all set to 0 below).
"$python" -m compileall -q -j 0 --invalidation-mode unchecked-hash "$ctx/site" >&2
# Console scripts, pointed at the image's interpreter, with -S: every module comes from
# PYTHONPATH, so the site module (dist-packages paths, .pth files) is start-up CPU for
# nothing.
mkdir -p "$ctx/bin"
for script in "$ctx"/site/bin/*; do
  sed '1s|^#!.*|#!/usr/bin/python3 -S|' "$script" >"$ctx/bin/$(basename "$script")"
  chmod 0755 "$ctx/bin/$(basename "$script")"
done
# direct_url.json names the temporary wheel path: drop it so an unchanged tree gives the
# same layer (and image ID, which lets `kind load` skip an image the node already has).
rm -rf "$ctx/site/bin" "$ctx/wheels" "$ctx"/site/*.dist-info/direct_url.json
sed -i '/direct_url\.json,/d' "$ctx"/site/*.dist-info/RECORD
find "$ctx/site" "$ctx/bin" -exec touch -h -d @0 {} +
cp "$REPO_ROOT/Dockerfile" "$ctx/"
# The tag moves to the new image; the one it named before would stay behind untagged
# (about 600 MB a build: a CI machine filled its disk with them). Removed unless
# something still uses it (a container, another tag): then docker refuses, and it stays.
previous=$(docker image inspect -f '{{.Id}}' "$PROJECT_IMAGE" 2>/dev/null || true)
docker_build --build-arg "BASE=$DEBIAN_IMAGE" -t "$PROJECT_IMAGE" "$ctx"
current=$(docker image inspect -f '{{.Id}}' "$PROJECT_IMAGE")
if [[ -n $previous && $previous != "$current" ]]; then
  docker image rm "$previous" >/dev/null 2>&1 || log "kept the replaced image $previous (in use)"
fi
log "built $PROJECT_IMAGE"
echo "$PROJECT_IMAGE"
