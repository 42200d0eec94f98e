# One image for web, worker and beat; docker-compose.yml picks the command.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=eco_service.settings
WORKDIR /app
# The runtime dependencies at the lock file's versions (scripts/lock), in a layer of their own that
# a change to the sources does not rebuild; the test tools (requirements-dev.lock) stay out.
COPY requirements.lock ./
RUN pip install --no-cache-dir -r requirements.lock
COPY pyproject.toml README.md ./
COPY eco_core ./eco_core
COPY upstream ./upstream
COPY eco_service ./eco_service
COPY catalog ./catalog
COPY mcp_gateway ./mcp_gateway
COPY downloads ./downloads
COPY families ./families
COPY tables ./tables
COPY upstream_sim ./upstream_sim
COPY templates ./templates
COPY manage.py ./
# The project itself, its dependencies already in place. The admin's CSS, JS and icons (and the
# ops API's docs assets) go to /app/staticfiles (outside the data folder, so a volume on /app/data
# cannot hide them); WhiteNoise serves them from there (eco_service/static.py).
RUN pip install --no-cache-dir --no-deps . && python manage.py collectstatic --noinput
# Commands run from /app's sources (manage.py, uvicorn's app dir), which pip did not compile, and
# PYTHONDONTWRITEBYTECODE keeps Python from caching them: compiled once here, not at every start.
RUN python -m compileall -q eco_core upstream catalog downloads tables families mcp_gateway eco_service upstream_sim
# The dataset store's folder exists, owned by eco, so the volume compose mounts there starts so too.
RUN useradd --create-home eco && mkdir -p /app/data/datasets && chown -R eco /app/data
USER eco
EXPOSE 8080
# X-Forwarded-For/-Proto are believed from no one (uvicorn trusts 127.0.0.1 by default); behind a
# reverse proxy set FORWARDED_ALLOW_IPS to its address(es). --http: request headers must arrive
# within server.header_read_timeout_s (mcp_gateway/http_protocol.py).
ENV FORWARDED_ALLOW_IPS=""
CMD ["uvicorn", "eco_service.asgi:application", "--host", "0.0.0.0", "--port", "8080", "--http", "mcp_gateway.http_protocol:TimedHttpProtocol"]
