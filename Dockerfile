# Image for the numa-exporter DaemonSet (manifests/exporter) and the fakenrt commands.
#   docker build -t ghcr.io/numa-testkit/numa-testkit:0.1.0 .
# The image has both console scripts; the DaemonSet runs `numa-exporter run`.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY protos protos
COPY exporter exporter
COPY fakenrt fakenrt
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /install /usr/local
ENTRYPOINT ["numa-exporter"]
CMD ["run"]
