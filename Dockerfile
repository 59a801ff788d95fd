# syntax=docker/dockerfile:1.7
#
# The image of the work agent and the hub controller: one image, two programs
# (`workagent`, `hubcontroller`), plus `/work`, a shim that takes the argument
# lists OCM's operators pass to their Go image ("/work agent ...",
# "/work manager ...", "/work webhook-server ...").
#
# NOT BUILT IN DEVELOPMENT: the machine this was written on has no container
# engine. tests/docs/test_dockerfile.py checks what can be checked without one
# (the files it copies exist, the programs it names are the distribution's
# console scripts, the user is numeric and not root, base images are pinned by
# tag, the /work shim dispatches as described). Build and smoke-test with:
#
#   docker build -t ocm-work .
#   docker run --rm ocm-work agent --help
#   docker run --rm ocm-work hubcontroller --version
#   docker run --rm ocm-work /work manager --help     # as OCM's operators call it
#
# Both stages must use the same base image: the virtual environment's python
# is a link to the base image's interpreter, and its scripts name
# /app/.venv/bin/python, so it only works at the same path on the same Python.

# -- build: resolve and install the locked dependencies, then our wheel ---------------
FROM python:3.11.11-slim-bookworm AS build

# uv from PyPI, at the version the Makefile uses.
RUN pip install --no-cache-dir "uv==0.13.9"

ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON=python3.11 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv

WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when the lock changes.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project

# Then the distribution itself, as a regular (non-editable) install, so the
# final stage needs the virtual environment only, not the sources.
COPY ocmkit ./ocmkit
COPY workagent ./workagent
COPY hubcontroller ./hubcontroller
COPY schemas ./schemas
COPY kubesim ./kubesim
RUN uv sync --frozen --no-dev --no-editable

# -- runtime: the interpreter, the virtual environment and the /work shim -------------
FROM python:3.11.11-slim-bookworm

LABEL org.opencontainers.image.title="ocm-work" \
      org.opencontainers.image.description="Open Cluster Management work agent and hub controller, in Python" \
      org.opencontainers.image.licenses="Apache-2.0"

# The base image's packaging tools are not needed to run, so they do not ship.
RUN python -m pip uninstall --yes --quiet pip setuptools wheel || true

COPY --from=build /app/.venv /app/.venv

# OCM's images hold one Go binary, /work, and its operators start it with
# "/work agent ...", "/work manager ..." or "/work webhook-server ...". The
# shim runs the program that owns the first command word it finds and passes
# every argument on unchanged; both programs skip a leading "/work" argument
# themselves. "/work workagent ..." and "/work hubcontroller ..." (what
# `docker run IMAGE workagent ...` becomes) run that program. `exec` leaves
# the program as the container's main process, so it receives SIGTERM
# directly and drains before the grace period ends.
COPY --chmod=0755 <<'SHIM' /work
#!/bin/sh
set -eu
case "${1:-}" in
  workagent|hubcontroller) exec "$@" ;;
esac
for arg in "$@"; do
  case "$arg" in
    agent) exec workagent "$@" ;;
    manager|webhook-server|grpc-server|server) exec hubcontroller "$@" ;;
  esac
done
cat >&2 <<'USAGE'
usage: /work agent [flags]            the work agent          (workagent agent --help)
       /work manager [flags]          the hub work manager    (hubcontroller manager --help)
       /work webhook-server [flags]   the admission webhook   (hubcontroller webhook-server --help)
       /work grpc-server [flags]      the CloudEvents gRPC server (hubcontroller grpc-server --help)
USAGE
case "${1:-}" in
  ""|-h|--help|help) exit 0 ;;
esac
exit 2
SHIM

ENV PATH="/app/.venv/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

# 65532 is the conventional "nonroot" user of distroless images; numeric, so
# that runAsNonRoot can verify it without a passwd entry.
USER 65532:65532

# Probes and metrics of the agent (HTTPS, self-signed unless --tls-cert-file) and the
# manager (plain HTTP); the webhook (HTTPS); the CloudEvents gRPC server (TLS).
EXPOSE 8443 9443 8090

ENTRYPOINT ["/work"]
CMD ["--help"]
