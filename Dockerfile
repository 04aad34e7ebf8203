# syntax=docker/dockerfile:1

# Build: a static binary, no cgo (the SQLite driver is pure Go).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/dashboard ./cmd/dashboard \
 && mkdir -p /out/data

# Run: no shell, no package manager, a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dashboard /dashboard
# The SQLite database lives in /data, the working directory, on a volume of its own.
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
VOLUME ["/data"]
# nonroot of the distroless image.
USER 65532:65532
# The database by absolute path, so that `serve` and `token` find the same file whatever the
# working directory (serve's --db default, toolq.db, is relative to it).
ENV TOOLQ_DB=/data/toolq.db
# Inside a container loopback is unreachable from outside: listen on every interface. Beyond
# loopback `serve` refuses --auth none (it exits at once, saying so), so the image defaults to
# token auth: create a token on the same volume with
#   docker run --rm -v toolq-data:/data toolq token create --name admin --role operator
# Behind an authenticating proxy, set TOOLQ_AUTH=proxy and TOOLQ_TRUSTED_PROXY instead.
ENV TOOLQ_LISTEN=0.0.0.0:8080 \
    TOOLQ_AUTH=token
EXPOSE 8080
ENTRYPOINT ["/dashboard"]
CMD ["serve"]
