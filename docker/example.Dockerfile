# The example server's image, built on the base image (docker/Dockerfile):
#
#   docker build -f docker/Dockerfile -t mcpcore:0.1.0 .
#   docker build -f docker/example.Dockerfile -t mcpcore-example:0.1.0 .
#   docker run -p 8000:8000 mcpcore-example:0.1.0
#
# A server with dependencies of its own adds them the same way the base does, hash-checked:
#   USER root
#   COPY requirements.lock /tmp/
#   RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r /tmp/requirements.lock
#   USER 10001:10001
ARG BASE_IMAGE=mcpcore:0.1.0
FROM ${BASE_IMAGE}
COPY --chown=10001:10001 examples /app/examples
CMD ["examples.everything:app"]
