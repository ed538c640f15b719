# syntax=docker/dockerfile:1
# The one image of Centrality: every worker, collector and watcher is `centrality <command>`
# (compose, Kubernetes, and anywhere else a container runs). Build from the repository root:
#   docker build -t centrality:0.1.0 .
# EXTRAS picks the optional dependencies; `local` (the embedded ClickHouse, ~530 MB) and `ray`
# stay out unless asked for, e.g. --build-arg EXTRAS=workers,agent,k8s,ray.
ARG PYTHON_IMAGE=python:3.11.15-slim

FROM ${PYTHON_IMAGE} AS build
ARG EXTRAS=workers,agent,k8s
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/centrality
# Exact pins (the lock CI tests against); the package itself only states ranges.
COPY constraints.txt pyproject.toml README.md ./
COPY schemas schemas
COPY collectors collectors
COPY streams streams
COPY actions actions
COPY centrality centrality
# Installed as a wheel, not editable: the image holds everything it runs and never reads /src.
RUN /opt/centrality/bin/pip install --no-cache-dir --constraint constraints.txt ".[${EXTRAS}]"

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="centrality" \
      org.opencontainers.image.description="Event-sourced control plane for GPU clusters: workers, collectors, watchers"
# A fixed numeric uid, so Kubernetes' runAsNonRoot can verify it and host paths can be granted.
RUN groupadd --system --gid 10001 centrality \
    && useradd --system --uid 10001 --gid centrality --home-dir /var/lib/centrality \
        --shell /usr/sbin/nologin centrality \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/centrality \
        /var/lib/centrality/keys /var/lib/centrality/streams
COPY --from=build /opt/centrality /opt/centrality
ENV PATH=/opt/centrality/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HOME=/var/lib/centrality \
    CENTRALITY_STREAMS_DATA_DIR=/var/lib/centrality/streams
USER 10001:10001
WORKDIR /var/lib/centrality
ENTRYPOINT ["centrality"]
CMD ["--help"]
