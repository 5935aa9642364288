# gradtape images. Two targets:
#   cpu:  docker build --target cpu -t gradtape:cpu . && docker run --rm gradtape:cpu
#         (slim Python, NumPy; runs the test suite)
#   cuda: docker build --target cuda -t gradtape:cuda . && docker run --rm --gpus all gradtape:cuda
#         (CUDA 12 runtime, CuPy; prints `python -m gradtape info`, then runs the test suite)
# Both install the extras of the README's test command; the cuda image adds `cuda12`. Both
# carry a C compiler so that pip builds gradtape's optional C module (gradtape._speedups).

ARG PYTHON_VERSION=3.11
ARG CUDA_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu24.04

FROM python:${PYTHON_VERSION}-slim AS cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY gradtape ./gradtape
COPY kernels ./kernels
COPY tests ./tests
COPY examples ./examples
COPY benchmarks ./benchmarks
RUN python -m pip install -e ".[test,io,demo,kernels]"
CMD ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]

FROM ${CUDA_IMAGE} AS cuda
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DEBIAN_FRONTEND=noninteractive \
    PATH=/opt/venv/bin:$PATH
# The distribution's Python is what the CUDA base image offers; gradtape pins nothing of it.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY gradtape ./gradtape
COPY kernels ./kernels
COPY tests ./tests
COPY examples ./examples
COPY benchmarks ./benchmarks
RUN python -m pip install -e ".[test,io,demo,kernels,cuda12]"
CMD ["sh", "-c", "python -m gradtape info && python -m pytest -q -p no:cacheprovider"]
