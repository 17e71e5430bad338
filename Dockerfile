# The web app and the task worker share this image; docker-compose.yml picks the command.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
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
