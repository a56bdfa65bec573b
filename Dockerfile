# sandbox-cloudrun: a static Go binary with the QuickJS engine embedded, its
# wazero compilation cache baked in, on an empty base, running as non-root.
#
#   docker build --build-arg VERSION=$(git rev-parse HEAD) -t sandbox-cloudrun .
#
# Optional: rebuild quickjs/sandbox.wasm from the pinned QuickJS tarball instead
# of using the committed one (for teams that will not trust a committed binary):
#
#   docker build --build-arg QUICKJS_TARBALL_URL=https://… \
#                --build-arg QUICKJS_SHA256=<sha256 of that tarball> …
#
# Base images are named by tag; pin them by digest (FROM image:tag@sha256:…)
# in your fork if your policy asks for it. deploy/ tests that the final stage
# runs as non-root and sets COMPILATION_CACHE_DIR.

ARG GO_VERSION=1.26.8

# --- wasm: the committed engine, or one rebuilt from the QuickJS tarball ------
# One stage either way, so that it works with BuildKit and the classic builder
# alike; the C toolchain is installed only when a rebuild is asked for.
FROM golang:${GO_VERSION}-bookworm AS wasm
ARG QUICKJS_TARBALL_URL=""
ARG QUICKJS_SHA256=""
WORKDIR /src
COPY quickjs/ quickjs/
RUN set -eu; \
    if [ -z "$QUICKJS_TARBALL_URL" ]; then \
      echo "wasm: using the committed quickjs/sandbox.wasm ($(cut -d' ' -f1 quickjs/sandbox.wasm.sha256))"; \
      exit 0; \
    fi; \
    if [ -z "$QUICKJS_SHA256" ]; then \
      echo "wasm: QUICKJS_TARBALL_URL needs QUICKJS_SHA256, the sha256 of the tarball" >&2; \
      exit 1; \
    fi; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends \
      $(grep -v '^#' quickjs/debian-packages.txt) curl ca-certificates >/dev/null; \
    rm -rf /var/lib/apt/lists/*; \
    curl -fsSL --proto '=https' --tlsv1.2 -o /tmp/quickjs.tar.xz "$QUICKJS_TARBALL_URL"; \
    echo "$QUICKJS_SHA256  /tmp/quickjs.tar.xz" | sha256sum -c -; \
    committed=$(cut -d' ' -f1 quickjs/sandbox.wasm.sha256); \
    PATH=/usr/lib/llvm-14/bin:$PATH \
      QUICKJS_TARBALL=/tmp/quickjs.tar.xz QUICKJS_SHA256="$QUICKJS_SHA256" quickjs/build.sh; \
    rebuilt=$(cut -d' ' -f1 quickjs/sandbox.wasm.sha256); \
    if [ "$rebuilt" = "$committed" ]; then \
      echo "wasm: rebuilt engine $rebuilt is byte for byte the committed one"; \
    else \
      echo "wasm: rebuilt engine $rebuilt differs from the committed $committed; using the rebuilt one"; \
    fi; \
    rm -rf quickjs/build /tmp/quickjs.tar.xz

# --- build: static binary and the engine's compilation cache ---------------
FROM golang:${GO_VERSION}-bookworm AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The engine from the wasm stage (the committed one unless a rebuild was asked for).
COPY --from=wasm /src/quickjs/sandbox.wasm /src/quickjs/sandbox.wasm.sha256 quickjs/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /sandbox-cloudrun . \
    && /sandbox-cloudrun version
# Compile the engine into wazero's compilation cache, so that a cold instance
# loads machine code instead of compiling the wasm at start-up. wazero creates
# the cache's directories 0700; the runtime user (65532) must read them, and
# must not write them: at run time the cache is root-owned and read-only.
RUN /sandbox-cloudrun compile-cache /out/wazero-cache \
    && chmod -R u=rwX,go=rX /out/wazero-cache
# Smoke test of what the final image will run: serve as the runtime user, with
# no store and the baked cache, must turn ready; and the cache must have been a
# hit (a miss would add an entry: compile-cache and serve compiled differently).
COPY deploy/image-smoke.sh /usr/local/bin/image-smoke
RUN sh /usr/local/bin/image-smoke /sandbox-cloudrun /out/wazero-cache
# The runtime user, for tools that look the uid up; the binary needs no entry.
RUN mkdir -p /out/etc \
    && echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > /out/etc/passwd \
    && echo 'nonroot:x:65532:' > /out/etc/group

# --- final: nothing but the binary, CA certificates and the cache -----------
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/etc/passwd /out/etc/group /etc/
COPY --from=build /sandbox-cloudrun /sandbox-cloudrun
COPY --from=build /out/wazero-cache /var/cache/sandbox-cloudrun/wazero
# COMPILATION_CACHE_DIR: the baked cache (read-only at run time).
# STORE_URL=none: no store unless one is configured (Terraform sets gs://BUCKET);
# scripts by value through POST /v1/sandbox/evaluate still work.
ENV COMPILATION_CACHE_DIR=/var/cache/sandbox-cloudrun/wazero \
    STORE_URL=none \
    PORT=8080
EXPOSE 8080
USER 65532:65532
ENTRYPOINT ["/sandbox-cloudrun"]
CMD ["serve"]
