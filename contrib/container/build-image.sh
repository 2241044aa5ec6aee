#!/usr/bin/env bash
# Builds the Rollcall container image FROM scratch with buildah (no registry, no daemon):
# stages the broker, every shared library `ldd` lists for it and for libwebsockets' libev
# plugin (which the broker loads at start), the dynamic loader, the CA bundle, the demo and
# the operator's console, and contrib/container/config.json as /etc/rollcall/config.json,
# then runs `buildah build` on contrib/container/Containerfile.
#
#   contrib/container/build-image.sh [--binary PATH] [--tag NAME] [--stage-only DIR]
#
# --binary: the broker to put in (default .build-release/release/rollcall, else
#   .build/debug/rollcall). --tag: the image name (default localhost/rollcall:<version>).
# --stage-only DIR: stage the build context in DIR and stop (for `docker build`).
# BUILDAH_GLOBAL_OPTS: options put before buildah's command (e.g. `--root DIR --runroot DIR
# --storage-driver vfs`, as Tests/image/image-check.sh does to keep the image out of the
# machine's store).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
binary=""
tag=""
stage_only=""
while [ $# -gt 0 ]; do
    case $1 in
        --binary) binary=$2; shift 2 ;;
        --tag) tag=$2; shift 2 ;;
        --stage-only) stage_only=$2; shift 2 ;;
        *) echo "build-image: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$binary" ]; then
    for candidate in "$root/.build-release/release/rollcall" "$root/.build/debug/rollcall"; do
        [ -x "$candidate" ] && { binary=$candidate; break; }
    done
fi
[ -n "$binary" ] && [ -x "$binary" ] || { echo "build-image: no broker binary (make release, or --binary PATH)" >&2; exit 1; }
plugin=$(ls /usr/lib/*/libwebsockets-evlib_ev.so 2>/dev/null | head -1 || true)
[ -n "$plugin" ] || { echo "build-image: libwebsockets' libev plugin is missing (apt-get install libwebsockets-evlib-ev)" >&2; exit 1; }

context=${stage_only:-$(mktemp -d -t rollcall-image-XXXXXX)}
[ -n "$stage_only" ] || trap 'rm -rf "$context"' EXIT
rootfs=$context/rootfs
rm -rf "$rootfs" "$context/state"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/rollcall" "$rootfs/usr/share/rollcall" "$context/state"
mkdir -m 1777 "$rootfs/tmp"

# The binary, and every library the loader resolves for it and for the plugin (paths kept,
# links followed, modes kept: the loader must stay executable), the loader included.
install -m 0755 "$binary" "$rootfs/usr/local/bin/rollcall"
for library in "$plugin" $( { ldd "$binary"; ldd "$plugin"; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do
    mkdir -p "$rootfs$(dirname "$library")"
    cp -L "$library" "$rootfs$library"
done
# TLS to Redis, webhooks and a JWKS URL verifies against the host's CA bundle.
[ -f /etc/ssl/certs/ca-certificates.crt ] && install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
cp -RL "$root/examples/web" "$rootfs/usr/share/rollcall/web"
cp -RL "$root/examples/admin" "$rootfs/usr/share/rollcall/admin"
rm -f "$rootfs/usr/share/rollcall/web/package.json" "$rootfs/usr/share/rollcall/admin/package.json"
install -m 0644 "$root/contrib/container/config.json" "$rootfs/etc/rollcall/config.json"
cp "$root/contrib/container/Containerfile" "$context/Containerfile"

if [ -n "$stage_only" ]; then
    echo "build-image: context staged in $context"
    exit 0
fi
version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' "$root/Sources/RollcallCore/Broker/BrokerVersion.swift")
tag=${tag:-localhost/rollcall:${version:-dev}}
# shellcheck disable=SC2086  # the global options are words on purpose
buildah ${BUILDAH_GLOBAL_OPTS:-} build --quiet --layers=false -f "$context/Containerfile" -t "$tag" "$context"
echo "build-image: built $tag"
