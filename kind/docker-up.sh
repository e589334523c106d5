#!/usr/bin/env bash
# Makes sure a Docker engine answers `docker info`. If none runs, installs Debian's
# docker.io when dockerd is missing and starts dockerd in the background (log:
# $KIND_CACHE/dockerd.log). When this machine's capability bounding set lacks
# capabilities that containers are granted (see docs/kind.md), dockerd gets the
# numa-testkit runc wrapper as its default runtime.
source "$(dirname "$0")/lib.sh"

if docker info >/dev/null 2>&1; then
  if runc_wrapper_needed && [[ $(docker info --format '{{.DefaultRuntime}}') != numa-testkit-runc ]]; then
    log "warning: the running Docker engine does not use the numa-testkit runc wrapper, but this"
    log "machine's capability bounding set needs it; privileged containers may fail to start"
  fi
  exit 0
fi

mkdir -p "$KIND_CACHE"
# One start at a time: a background build and a test may both find no engine; the second
# waits here, then finds the first one's engine up.
exec 7>"$KIND_CACHE/docker-up.lock"
flock 7
docker info >/dev/null 2>&1 && exit 0
command -v dockerd >/dev/null || apt_install docker.io
command -v docker >/dev/null || apt_install docker.io
args=()
if runc_wrapper_needed; then
  wrapper=$(build_runc_wrapper)
  log "capability bounding set is reduced: dockerd runs containers through $wrapper"
  args+=(--add-runtime "numa-testkit-runc=$wrapper" --default-runtime numa-testkit-runc)
fi
log "starting dockerd (log: $KIND_CACHE/dockerd.log)"
# In a session of its own: a caller killing its process group (a timed-out test, a CI
# step) must not take the engine, and every cluster on it, down too.
setsid nohup dockerd "${args[@]}" >"$KIND_CACHE/dockerd.log" 2>&1 &
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && { log "Docker engine is up"; exit 0; }
  sleep 1
done
tail -20 "$KIND_CACHE/dockerd.log" >&2
die "dockerd did not answer within 60 s (log: $KIND_CACHE/dockerd.log)"
