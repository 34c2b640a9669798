# One image for every role of a deployment; the command picks it:
#   serve [--no-worker]   the HTTP API (with in-process workers unless --no-worker)
#   worker                executes runs, serves no HTTP
#   migrate               upgrades the database schema, then exits
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH

WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY alembic ./alembic
COPY engine ./engine
COPY app ./app
# Editable, so the migration scripts stay where `threadline migrate` looks for them: next
# to the packages (/app/alembic), which a regular install into site-packages would break.
RUN python -m venv /opt/venv && pip install -e .

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin threadline \
    && mkdir -p /app/data && chown threadline /app/data
USER threadline

# Listen on every interface of the container; the port is THREADLINE_PORT (8123).
ENV THREADLINE_HOST=0.0.0.0 \
    THREADLINE_LOG_FORMAT=json
EXPOSE 8123
ENTRYPOINT ["threadline"]
CMD ["serve"]
