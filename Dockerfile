# The web app and the task worker share this image; docker-compose.yml picks the command.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
# glibc's malloc keeps freed memory for the next request: a recompute allocates and
# frees arrays of a few megabytes, which glibc would otherwise mmap afresh and unmap each
# time, so that every page is faulted in again (11.2 ms against 7.9 ms for a
# 10,000-query list). Blocks up to 32 MB come from the heap, and up to 256 MB freed at
# its top stay mapped. Read by glibc when a process starts; other C libraries ignore them.
ENV MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456
WORKDIR /app

COPY pyproject.toml README.md ./
COPY config ./config
COPY judgements ./judgements
COPY metrics ./metrics
COPY searchlogs ./searchlogs
RUN pip install .

COPY . .
# collectstatic needs settings but no database: DATABASE_URL only has to parse.
RUN DEBUG=0 SECRET_KEY=collectstatic DATABASE_URL=postgres://build@localhost/build \
    python manage.py collectstatic --no-input

RUN useradd --create-home judge
USER judge
EXPOSE 8000
# The same gunicorn options as docker-compose.yml's web service (see the timeout's
# reasons there).
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", \
     "--timeout", "120", "--graceful-timeout", "30"]
