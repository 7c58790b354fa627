# genload as a container image: one static binary with its plugins, corpus and tokenizer built
# in, on busybox for the /bin/sh the Kubernetes manifests of `genload k8s job` run it with.
#
#   docker build -t genload:dev --build-arg VERSION=$(git describe --always --dirty) .
#   mkdir -p results && sudo chown 10001:10001 results   # genload runs as uid 10001
#   docker run --rm --add-host=host.docker.internal:host-gateway -v "$PWD/results:/work/results" \
#       genload:dev genload run --target http://host.docker.internal:8000
#
# The results go to /work/results: without the -v mount they vanish with the --rm container,
# and a mounted host directory must be writable by uid 10001 (chown it, or chmod o+w; or run
# with --user "$(id -u):$(id -g)" to write as yourself, when the plugins' cache in
# /home/genload is then not writable and they compile in memory at each start).
#
# (host.docker.internal is the host's address under Docker Desktop; on Linux the --add-host
# flag above makes it so. A server in another container: its name on a shared network.)
#
# The build stage runs `make plugins` (the three plugins for wasip1, copied where go:embed takes
# them, with their SHA-256 in SHA256SUMS), then a static build of genload: CGO_ENABLED=0 (no
# libc: wazero, fasthttp and the rest are pure Go).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN make plugins \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/genload ./host/cmd/genload \
 && /out/genload version

# busybox's musl build is a few MB with /bin/sh; genload needs nothing of it but the shell
# (the pod scripts use shell builtins and genload only). CA certificates for https targets.
FROM busybox:1.37-musl
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/genload /usr/local/bin/genload
# genload runs as a user of its own (uid and gid 10001, as the Kubernetes manifests of
# `genload k8s job` run it), not root. Its home holds the one file genload writes outside its
# results: the compiled plugins' cache, $HOME/.cache/genload/wazero (without a writable home,
# as under a read-only root filesystem, it compiles them in memory at each start instead). The
# working directory /work, where results go by default, is the user's too.
RUN addgroup -g 10001 genload \
 && adduser -D -u 10001 -G genload -h /home/genload genload \
 && mkdir -p /work \
 && chown genload:genload /work
ENV HOME=/home/genload
USER 10001:10001
WORKDIR /work
ENTRYPOINT []
CMD ["genload", "--help"]
