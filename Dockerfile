# The numa-testkit image: every entrypoint (numa-exporter, fakenrt) on Debian's python3.
# Built offline by `make image` (kind/image.sh), never from a registry:
#   * the base is numa-testkit/debian:bookworm, made by kind/build-node-image.sh with
#     debootstrap + docker import (passed in as BASE);
#   * site/ is the project and its dependencies installed on the host from wheels
#     (pip install --target) and byte-compiled there, so the image needs neither pip nor
#     a compiler and no start compiles a module; bin/ holds the console scripts
#     (#!/usr/bin/python3 -S: every module comes from PYTHONPATH).
# The default user is nobody (65534); the exporter DaemonSet runs as UID 0 only because
# the kubelet's podresources socket is root-only (see manifests/exporter/daemonset.yaml).
ARG BASE=numa-testkit/debian:bookworm
FROM ${BASE}
RUN printf 'path-exclude=/usr/share/%s/*\n' doc man locale info > /etc/dpkg/dpkg.cfg.d/01-slim \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PYTHONPATH=/opt/numa-testkit/site
COPY site /opt/numa-testkit/site
COPY bin /usr/local/bin
USER 65534:65534
ENTRYPOINT ["numa-exporter"]
CMD ["run"]
