# Queuewatch web and monitor image.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    QUEUEWATCH_STATIC_ROOT=/app/staticfiles
WORKDIR /app

COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

COPY manage.py ./
COPY dashboard ./dashboard
COPY queues ./queues
COPY templates ./templates
COPY locale ./locale
COPY static ./static
RUN QUEUEWATCH_SECRET_KEY=build-only python manage.py collectstatic --noinput -v0

RUN useradd --system --uid 10001 queuewatch
USER queuewatch
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s \
  CMD python -c "import http.client,sys; c=http.client.HTTPConnection('127.0.0.1', 8000, timeout=2); c.request('GET', '/login/'); sys.exit(c.getresponse().status >= 500)" || exit 1
# The server and its options: dashboard/serve.py (uvicorn, flow-controlled downloads).
CMD ["python", "-m", "dashboard.serve", "--host", "0.0.0.0", "--port", "8000"]
