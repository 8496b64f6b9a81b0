# One image for the migrate, api, worker and attach services of docker-compose.yml and for
# deploy/kubernetes (runs as the numeric non-root user 10001, so runAsNonRoot can check it).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PODLEDGER_HOME=/tmp/podledger

WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY alembic ./alembic
COPY migrations ./migrations
COPY ledger ./ledger
COPY scheduler ./scheduler
COPY api ./api
COPY bench ./bench
COPY deploy ./deploy
COPY examples ./examples
# Editable: migrations/ and alembic/ are read from the source tree at run time.
RUN pip install -e . \
    && groupadd --system --gid 10001 podledger \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app podledger

USER 10001:10001
EXPOSE 8080
CMD ["podledger", "serve", "--host", "0.0.0.0", "--port", "8080"]
