#!/usr/bin/env bash
# Builds the Kind node image offline and prints its tag. No registry is used: the
# Debian base comes from debootstrap, the Kubernetes, etcd, CoreDNS and Kind binaries
# are compiled from the Go module proxy (Kubernetes and etcd pinned by
# tests/controlplane/go.mod), pause is compiled from the Kubernetes module's pause.c,
# and the images kubeadm expects are made locally and imported into the node's
# containerd. Each step is cached (see lib.sh), so a warm run does nothing.
#
# Usage: kind/build-node-image.sh        (prints e.g. numa-testkit/kind-node:v1.36.3-<hash>)
source "$(dirname "$0")/lib.sh"

"$KIND_DIR/docker-up.sh"
command -v go >/dev/null || die "the Go toolchain (go) is needed to build the node image"
command -v gcc >/dev/null || apt_install gcc libc6-dev

# --- Go builds -------------------------------------------------------------------------
# k8s_binaries -> prints the directory with kubelet, kubeadm, kubectl, kube-*, etcd.
k8s_binaries() {
  local key=$K8S_BIN_KEY out=$K8S_BIN_DIR cp_bin build
  if [[ ! -x $out/kubelet ]]; then
    # kube-apiserver, kube-controller-manager, kube-scheduler and etcd are the control
    # plane's own build (one cached copy, shared with the test suite).
    cp_bin=$("$REPO_ROOT/tests/controlplane/build.sh")
    log "building kubelet, kubeadm, kubectl, kube-proxy $K8S_VERSION (first run: several minutes)"
    # A copy of the pinned module, so -mod=mod may add what these commands need
    # without touching the repository's go.mod.
    build=$KIND_CACHE/gobuild-$key
    mkdir -p "$build" "$out.tmp"
    sed 's|^module .*|module numa-testkit/kind-k8s|' "$CONTROLPLANE_GOMOD" >"$build/go.mod"
    cp "${CONTROLPLANE_GOMOD%.mod}.sum" "$build/go.sum"
    local minor vpkg ldflags
    minor=$(echo "$K8S_VERSION" | cut -d. -f2)
    vpkg=k8s.io/component-base/version
    ldflags="-s -w -X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor"
    ldflags="$ldflags -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
    # One go build for the four: shared packages compile once and the links run in parallel.
    (cd "$build" && CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath" go build -ldflags="$ldflags" -o "$out.tmp/" \
      k8s.io/kubernetes/cmd/{kubelet,kubeadm,kubectl,kube-proxy}) >&2
    cp "$cp_bin"/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd} "$out.tmp/"
    rm -rf "$out"; mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# pause_binary TAG -> prints the path of a static pause built from the Kubernetes module.
pause_binary() {
  local tag=$1 out src
  out=$KIND_CACHE/pause-$tag/pause
  if [[ ! -x $out ]]; then
    src=$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c
    [[ -f $src ]] || (cd "$KIND_CACHE" && go mod download "k8s.io/kubernetes@$K8S_VERSION") >&2
    [[ -f $src ]] || die "pause.c not found at $src"
    log "building pause $tag"
    mkdir -p "$(dirname "$out")"
    gcc -Os -Wall -Werror -static -DVERSION="v$tag-numa-testkit" -o "$out.tmp" "$src" >&2
    strip "$out.tmp"; mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# --- Images kubeadm expects ----------------------------------------------------------
# image_from_binary TAG BINARY PATH [BASE] - a one-binary image (FROM scratch unless BASE).
image_from_binary() {
  local tag=$1 binary=$2 path=$3 base=${4:-scratch} ctx
  ctx=$(mktemp -d)
  cp "$binary" "$ctx/bin"
  {
    echo "FROM $base"
    echo "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
    echo "COPY bin $path"
    echo "ENTRYPOINT [\"$path\"]"
  } >"$ctx/Dockerfile"
  docker_build -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
}

# kube_proxy_base -> a Debian image with the iptables/conntrack tools kube-proxy calls.
kube_proxy_base() {
  local tag=numa-testkit/kube-proxy-base:$DEBIAN_SUITE-1 ctx
  if ! have_image "$tag"; then
    log "building $tag"
    ctx=$(mktemp -d)
    cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $DEBIAN_IMAGE
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      iptables nftables conntrack ipset kmod >/dev/null && rm -rf /var/lib/apt/lists/*
DOCKERFILE
    docker_build -t "$tag" "$ctx" >/dev/null
    rm -rf "$ctx"
  fi
  echo "$tag"
}

# component_images BINDIR -> prints the path of a docker-save archive of every image
# `kubeadm config images list` names, built locally.
component_images() {
  local bin=$1 list key archive coredns image name tag
  list=$("$bin/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null)
  key=$(echo "$list" | cat - "$KIND_DIR/build-node-image.sh" "$KIND_DIR"/coredns/{go.mod,go.sum,main.go} | sha256sum | cut -c1-12)
  archive=$KIND_CACHE/images-$K8S_VERSION-$key.tar
  if [[ ! -s $archive ]]; then
    coredns=$(coredns_binary)
    for image in $list; do
      name=${image%:*}; tag=${image##*:}
      log "image $image"
      case $name in
        */kube-proxy) image_from_binary "$image" "$bin/kube-proxy" /usr/local/bin/kube-proxy "$(kube_proxy_base)" ;;
        */kube-*) image_from_binary "$image" "$bin/${name##*/}" "/usr/local/bin/${name##*/}" ;;
        */etcd)
          [[ $tag == "${ETCD_VERSION#v}"* ]] || log "note: kubeadm asks for etcd $tag, the pinned etcd is $ETCD_VERSION"
          image_from_binary "$image" "$bin/etcd" /usr/local/bin/etcd ;;
        */coredns)
          [[ $tag == "$COREDNS_VERSION" ]] || log "note: kubeadm asks for coredns $tag, building $COREDNS_VERSION"
          image_from_binary "$image" "$coredns" /coredns ;;
        */pause) image_from_binary "$image" "$(pause_binary "$tag")" /pause ;;
        *) die "kubeadm expects an image this script cannot build: $image" ;;
      esac
    done
    # shellcheck disable=SC2086  # $list is a whitespace-separated list of image names
    docker save -o "$archive.tmp" $list
    mv "$archive.tmp" "$archive"
  fi
  echo "$archive"
}

# --- Kind base image: systemd, containerd, runc, CNI plugins, kind's base files ---------
kind_base() {
  local wrapper=$1 pause=$2 key tag ctx files
  files=$(go env GOMODCACHE)/sigs.k8s.io/kind@$KIND_VERSION/images/base/files
  [[ -d $files ]] || (cd "$KIND_CACHE" && GOFLAGS=-mod=mod go mod download "sigs.k8s.io/kind@$KIND_VERSION") >&2
  key=$(hash_of "$wrapper" "$KIND_DIR/build-node-image.sh" "$KIND_DIR/node/Dockerfile" "$KIND_DIR/node/10-numa-testkit.conflist" <(echo "$pause"))
  tag=numa-testkit/kind-base:$KIND_VERSION-$key
  if ! have_image "$tag"; then
    log "building $tag (Debian packages: systemd, containerd, runc, CNI plugins)"
    ctx=$(mktemp -d)
    cp -r "$files" "$ctx/files"
    chmod -R u+w,go-w "$ctx/files"
    find "$ctx/files" -type f -exec chmod 0644 {} +
    chmod 0755 "$ctx"/files/usr/local/bin/* "$ctx"/files/kind/bin/*
    rm -rf "$ctx/files/etc/systemd/system/containerd-fuse-overlayfs.service"
    # Debian's containerd 1.6 reads config version 2; pin the sandbox image kubeadm
    # expects and run containers through the wrapper (which execs the real runc).
    sed -i -e "s|sandbox_image = .*|sandbox_image = \"$pause\"|" \
      -e 's|^\( *\)SystemdCgroup = true|&\n\1BinaryName = "/usr/local/sbin/numa-testkit-runc"|' \
      "$ctx/files/etc/containerd/config.toml"
    cp "$wrapper" "$ctx/numa-testkit-runc"
    cp "$KIND_DIR/node/Dockerfile" "$KIND_DIR/node/10-numa-testkit.conflist" "$ctx/"
    docker_build --build-arg "BASE=$DEBIAN_IMAGE" -t "$tag" "$ctx" >/dev/null \
      || { rm -rf "$ctx"; die "building $tag failed"; }
    rm -rf "$ctx"
    drop_other_tags numa-testkit/kind-base "$tag"
  fi
  echo "$tag"
}

# --- Node image: base + Kubernetes binaries + images imported into containerd ------------
node_image() {
  local base=$1 bin=$2 archive=$3 key tag cid
  key=$(hash_of <(echo "$base") "$archive" <(cd "$bin" && sha256sum kubelet kubeadm kubectl))
  tag=numa-testkit/kind-node:$K8S_VERSION-$key
  if ! have_image "$tag"; then
    log "building $tag (importing $(basename "$archive") into the node's containerd)"
    cid=$(docker run -d --privileged --entrypoint sleep "$base" infinity)
    # shellcheck disable=SC2064  # expand $cid now; EXIT too, as set -e skips RETURN traps
    trap "docker rm -f $cid >/dev/null 2>&1 || true" RETURN EXIT
    local b
    for b in kubelet kubeadm kubectl; do docker cp "$bin/$b" "$cid:/usr/bin/$b"; done
    docker exec "$cid" sh -c "echo $K8S_VERSION >/kind/version"
    docker cp "$archive" "$cid:/images.tar"
    docker exec "$cid" sh -euc '
      containerd >/var/log/containerd-build.log 2>&1 &
      pid=$!
      for _ in $(seq 1 30); do ctr version >/dev/null 2>&1 && break; sleep 1; done
      ctr -n k8s.io images import --no-unpack /images.tar >/dev/null
      kill "$pid"; wait "$pid" || true
      rm -f /images.tar /var/log/containerd-build.log' >&2
    docker commit \
      --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
      --change 'CMD []' \
      "$cid" "$tag" >/dev/null
    drop_other_tags numa-testkit/kind-node "$tag"
  fi
  echo "$tag"
}

mkdir -p "$KIND_CACHE"
# One build at a time per cache (several checkouts may share the machine's cache and engine).
exec 9>"$KIND_CACHE/build.lock"
flock 9
debian_base
wrapper=$(build_runc_wrapper)
bin=$(k8s_binaries)
archive=$(component_images "$bin")
pause=$("$bin/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | grep '/pause:')
base=$(kind_base "$wrapper" "$pause")
node_image "$base" "$bin" "$archive"
