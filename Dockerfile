# One image for every role of a deployment; the command picks it:
#   serve [--no-worker]   the HTTP API (with in-process workers unless --no-worker)
#   worker                executes runs, serves no HTTP
#   migrate               upgrades the database schema, then exits
#
# The first stage builds the project's wheel, which carries the migration scripts
# (alembic/, as the package `threadline_migrations`); the image installs the locked
# runtime dependencies (requirements.txt), then that wheel, and holds no source tree.
FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY alembic ./alembic
COPY engine ./engine
COPY app ./app
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH

COPY requirements.txt /tmp/requirements.txt
RUN python -m venv /opt/venv && pip install -r /tmp/requirements.txt
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-deps /tmp/wheels/*.whl && rm -r /tmp/wheels /tmp/requirements.txt

# The working directory holds the embedded database's default place (./data).
WORKDIR /app
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin threadline \
    && mkdir -p /app/data && chown threadline /app/data
USER threadline

# Listen on every interface of the container; the port is THREADLINE_PORT (8123).
ENV THREADLINE_HOST=0.0.0.0 \
    THREADLINE_LOG_FORMAT=json
EXPOSE 8123
ENTRYPOINT ["threadline"]
CMD ["serve"]
