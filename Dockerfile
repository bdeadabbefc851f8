# tsload in a container: a multi-stage build (the toolchain stays in the first stage), a
# slim Debian runtime, and a non-root user.
#
#   docker build -t tsload --build-arg TSLOAD_COMMIT=$(git rev-parse --short=12 HEAD) .
#   docker run --rm --network host tsload run --target http://127.0.0.1:8428 -d 30s
#
# Netem needs CAP_NET_ADMIN (`--cap-add NET_ADMIN`); ICMP probes need CAP_NET_RAW or the
# group in net.ipv4.ping_group_range. Everything else runs unprivileged.
#
# Where no image registry can be reached, the runtime stage alone is built from a local
# Debian base and an already built binary (the build stage is then skipped):
#
#   podman build --build-arg RUNTIME_IMAGE=localhost/tsload-base:bookworm \
#       --build-context build=DIR_WITH_out/tsload -t tsload .
#
# crates/cli/tests/container.rs does exactly that (see README, "In a container").

ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM rust:1-slim-bookworm AS build
WORKDIR /src
# The commit for `tsload --version` (.git is not sent to the build).
ARG TSLOAD_COMMIT=unknown
ENV TSLOAD_COMMIT=${TSLOAD_COMMIT}
COPY . .
RUN cargo build --release --locked -p tsload \
 && install -D -m 0755 target/release/tsload /out/tsload

FROM ${RUNTIME_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /work --create-home tsload
COPY --from=build /out/tsload /usr/local/bin/tsload
COPY configs /usr/share/tsload/configs
USER tsload
WORKDIR /work
ENTRYPOINT ["tsload"]
CMD ["--help"]
