# skylb's container image:
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) -t ghcr.io/skylb/skylb:dev .
# (skylb version prints both, and the Go version.)
# A static binary (no cgo) on distroless "static", running as the non-root user
# 65532. Multi-platform builds (docker buildx --platform linux/amd64,linux/arm64)
# cross-compile on the build machine.
# Without Docker, scripts/image.sh builds it from this recipe: the go build line
# below, read as written, for linux/amd64 and linux/arm64, on the files of
# distroless static:nonroot that skylb uses; it writes the image to a file,
# imports it into containerd or pushes it to a registry.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY *.go ./
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=
# grpcnotrace leaves out gRPC's golang.org/x/net/trace, which skylb never
# serves: it links html/template, whose calls of methods by name keep every
# exported method of every linked type in the binary (64 MB instead of 37 MB,
# and 14 MiB more of it in memory).
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
	go build -trimpath -tags grpcnotrace -ldflags "-s -w -X github.com/skylb/skylb/internal/cli.version=${VERSION} -X github.com/skylb/skylb/internal/cli.commit=${COMMIT}" -o /out/skylb . && \
	if [ "$TARGETOS/$TARGETARCH" = "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" ]; then /out/skylb --version; fi

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/skylb /skylb
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/skylb"]
