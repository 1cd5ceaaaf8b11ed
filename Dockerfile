# syntax=docker/dockerfile:1
# nl2sql-gateway image: a builder stage turns the source into a wheel and installs it into a virtualenv; the
# runtime stage copies only that virtualenv onto a slim Python, so no compiler, pip cache or source tree ships.
#   docker build -t nl2sql-gateway .
#   docker run -p 8000:8000 -e NL2SQL_DATABASES__SALES__DSN=postgresql://reader@db:5432/sales \
#              -e NL2SQL_DATABASES__SALES__PASSWORD=... nl2sql-gateway
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
# Metadata first so that a code-only change reuses nothing but still keeps the layer order readable.
COPY pyproject.toml README.md ./
COPY gateway ./gateway
# The core install, no extras: serving needs nothing more (no embedded Postgres, no chart libraries);
# tests/test_core_install.py serves from exactly such an install and bench/size.py measures its size.
RUN /opt/venv/bin/pip wheel --no-deps --wheel-dir /wheels . \
    && /opt/venv/bin/pip install /wheels/*.whl

FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    NL2SQL_CONFIG=/etc/nl2sql-gateway/nl2sql-gateway.toml \
    NL2SQL_SERVER__WORKERS=1 \
    MALLOC_MMAP_THRESHOLD_=32768 \
    MALLOC_TRIM_THRESHOLD_=131072
# NL2SQL_SERVER__WORKERS: worker processes per container (serve --workers); raise it with the CPU limit
# (docs/operations.md: pools, caches and rate limits are per worker, /metrics sums the workers).
# glibc: large query values get their own mappings and freed memory goes back to the system, so RSS falls
# back after a burst of large results instead of staying at its peak (bench/memory.py measures both).
# A fixed numeric uid/gid so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
RUN groupadd --system --gid 10001 nl2sql \
    && useradd --system --uid 10001 --gid nl2sql --home-dir /srv/nl2sql-gateway --no-create-home \
       --shell /usr/sbin/nologin nl2sql
COPY --from=builder /opt/venv /opt/venv
# Rules and guidelines from the repository are the defaults; compose and Kubernetes mount their own.
COPY --chown=10001:10001 rules /srv/nl2sql-gateway/rules
COPY --chown=10001:10001 semantic /srv/nl2sql-gateway/semantic
COPY --chown=10001:10001 guidelines /srv/nl2sql-gateway/guidelines
COPY deploy/config/image.toml /etc/nl2sql-gateway/nl2sql-gateway.toml
WORKDIR /srv/nl2sql-gateway
USER 10001:10001
EXPOSE 8000
# Liveness only (the process answers); readiness, which needs the databases, is the orchestrator's business.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"]
CMD ["nl2sql-gateway", "serve", "--host", "0.0.0.0"]
