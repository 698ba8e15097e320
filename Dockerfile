# syntax=docker/dockerfile:1
# The image of the dlgate GitHub Action (action.yml: runs.using docker, image Dockerfile).
#
#   CPU, what the action builds:  docker build -t dlgate .
#   GPU, for a self-hosted runner that starts it itself with `docker run --gpus all`
#   (a container *action* gets no GPU: GitHub starts it without --gpus):
#     docker build -t dlgate-gpu --build-arg GPU=1 \
#       --build-arg BASE_IMAGE=nvidia/cuda:12.4.1-runtime-ubuntu22.04 .
#
# Layers run from the slowest-changing to the fastest-changing, so a change to dlgate's
# code rebuilds only the last few: the interpreter, then the pinned reference toolchain
# (requirements/pins.txt: torch, onnx, onnxruntime, z3, TVM...), then dlgate itself,
# installed with --no-deps so it can never pull a different version of a pinned package.
#
# No USER instruction, on purpose: GitHub runs a Docker action as the image's default user,
# and its documentation requires that to be root, because the mounted workspace, the event
# file and the file-command files ($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY) belong to the
# runner's user. The entrypoint instead drops to the owner of the workspace (the runner's
# uid, 1001 on GitHub-hosted runners) before it runs any model or compiler code, so the
# compiler under test never runs as root and the files it leaves in the workspace belong to
# the runner (see entrypoint/main.py, run_as()). No secret is used at build time: the token
# arrives at run time as an input and is masked first thing.

# The base image pinned by digest, so that every build of one dlgate commit starts from the
# same bytes: python:3.11-slim as published on 2026-08-05 (Python 3.11.15 on Debian 13
# "trixie", glibc 2.41; the multi-platform index, as docker-library/repo-info records it).
# Bump it in a reviewed change (docs/releasing.md, "The base image"); the compiler wheels that
# the workflows build on ubuntu-latest must keep running on it (docs/adding-to-ci.md).
ARG BASE_IMAGE=python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff
FROM ${BASE_IMAGE}

# 1 adds the GPU packages of requirements/gpu.txt and PyPI's CUDA build of torch.
ARG GPU=0
ARG TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# Python 3.11 in a virtual environment, and git, which reads a pull request's change
# (`changed-from`: git diff BASE...HEAD in the checkout). python:3.11-slim has Python; an
# nvidia/cuda (Ubuntu 22.04) base gets it from the distribution, whose package versions
# move with its security updates (hence unpinned). Two shared libraries that compilers built
# on a runner link from the system, and that the slim image lacks: libgomp1 (OpenMP, in a
# PyTorch built from source) and libxml2 (in LLVM's system libraries, linked into a TVM that
# links LLVM statically).
# hadolint ignore=DL3008
RUN set -eux; \
    apt-get update; \
    if ! command -v python3.11 >/dev/null 2>&1; then \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            python3.11 python3.11-venv ca-certificates; \
    fi; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git libgomp1 libxml2; \
    rm -rf /var/lib/apt/lists/*; \
    python3.11 -m venv /opt/venv

# The pinned reference toolchain. torch first, from the index that has the wanted build
# (the CPU index for the CPU image), so that installing the rest keeps it.
COPY requirements/ /app/requirements/
RUN set -eux; \
    grep -E '^torch==' /app/requirements/pins.txt > /tmp/torch.txt; \
    if [ "$GPU" = 1 ]; then \
        pip install -r /tmp/torch.txt; \
        grep -vE '^onnxruntime==' /app/requirements/pins.txt > /tmp/pins-gpu.txt; \
        pip install -r /tmp/pins-gpu.txt -r /app/requirements/gpu.txt; \
    else \
        pip install --index-url "$TORCH_CPU_INDEX" -r /tmp/torch.txt; \
        pip install -r /app/requirements/pins.txt; \
    fi; \
    rm -f /tmp/torch.txt /tmp/pins-gpu.txt; \
    pip check

# dlgate itself, without dependencies: they are all pinned above.
COPY pyproject.toml README.md /app/
COPY dlgate/ /app/dlgate/
RUN set -eux; \
    pip install --no-deps /app; \
    rm -rf /app/build /app/dlgate.egg-info; \
    python -c "import dlgate, onnx, onnxruntime, torch, tvm, z3"; \
    dlgate backends

# The campaign files the action falls back to, and the entrypoint.
COPY configs/ /app/configs/
COPY entrypoint/ /app/entrypoint/

# Exec form, straight into Python: a shell in between (dash, busybox sh) would drop the
# hyphenated input variables (INPUT_OPEN-ISSUES, INPUT_FAIL-ON...) from the environment.
ENTRYPOINT ["/opt/venv/bin/python", "/app/entrypoint/main.py"]
