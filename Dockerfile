# Multi-stage build of a static, non-root kvstore-apiserver image.
#   docker build -t kvstore-apiserver:dev .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY pkg pkg
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.37.2+kvstore.${VERSION}" \
      -o /out/kvstore-apiserver ./cmd/kvstore-apiserver

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kvstore-apiserver /usr/local/bin/kvstore-apiserver
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kvstore-apiserver"]
