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
# Inside a container loopback is unreachable from outside: listen on every interface.
ENV TOOLQ_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/dashboard"]
CMD ["serve"]
