#!/usr/bin/env bash
# `make test-image`: builds the container image FROM scratch (contrib/container/build-image.sh,
# buildah, no registry) from the debug broker, runs it with podman and checks it serves:
# /livez and /readyz answer 200, the console and the demo are served, the server API answers
# with the key from the environment, the log lines are JSON, libwebsockets' libev loop was
# loaded (no fallback warning), and `podman stop` (SIGTERM) ends it with status 0.
#
# Everything goes to a throwaway store (buildah/podman --root, --runroot, vfs driver) that is
# removed at the end; the machine's own image store is not touched. How this machine runs
# containers, and why with these options, is in docs/operations.md ("Container image").
# Variables: ROLLCALL_BINARY (default .build/debug/rollcall), IMAGE_KEEP=1 keeps the store.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
binary=${ROLLCALL_BINARY:-$root/.build/debug/rollcall}
for tool in buildah podman runc curl python3; do
    command -v "$tool" >/dev/null || { echo "test-image: $tool is missing (make test-image installs it)" >&2; exit 1; }
done
[ -x "$binary" ] || { echo "test-image: $binary is missing: swift build first" >&2; exit 1; }

store=$(mktemp -d -t rollcall-image-store-XXXXXX)
name=rollcall-image-check-$$
global=(--root "$store/storage" --runroot "$store/run" --storage-driver vfs)
fail() { echo "test-image: FAIL: $*" >&2; podman "${global[@]}" logs "$name" 2>&1 | tail -20 >&2 || true; exit 1; }
cleanup() {
    podman "${global[@]}" rm -f "$name" >/dev/null 2>&1 || true
    if [ "${IMAGE_KEEP:-0}" = 1 ]; then echo "test-image: store kept in $store"; else rm -rf "$store"; fi
}
trap cleanup EXIT

started=$(date +%s)
BUILDAH_GLOBAL_OPTS="${global[*]}" "$root/contrib/container/build-image.sh" --binary "$binary" --tag localhost/rollcall:check >/dev/null
size=$(podman "${global[@]}" image inspect localhost/rollcall:check --format '{{.Size}}')
echo "test-image: built localhost/rollcall:check FROM scratch ($((size / 1000000)) MB) in $(( $(date +%s) - started )) s"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
key=image-check-key-0123456789abcdef
# runc, the host's network, and limits no higher than this process's own: see docs/operations.md.
podman "${global[@]}" --runtime runc run -d --name "$name" --network host \
    --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096 \
    -e ROLLCALL_JWT_SECRET=image-check-secret-0123456789abcdef -e ROLLCALL_API_KEY=$key \
    localhost/rollcall:check --config /etc/rollcall/config.json --port "$port" >/dev/null \
    || fail "podman could not start the image"

url=http://127.0.0.1:$port
deadline=$(( $(date +%s) + 20 ))
until [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")" = 200 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "/readyz did not answer 200 within 20 s"
    sleep 0.2
done
[ "$(curl -s "$url/livez")" = ok ] || fail "/livez"
# Read whole before matching: `grep -q` quitting early would fail curl under pipefail.
[[ $(curl -s "$url/admin/") == *"operator's console"* ]] || fail "the console is not served at /admin/"
[[ $(curl -s "$url/") == *"presence demo"* ]] || fail "the demo is not served at /"
answer=$(curl -s -H "Authorization: Bearer $key" -d '{}' "$url/api/v1/getInfo")
[[ $answer == *'"nodeId":"standalone"'* ]] || fail "getInfo answered $answer"
logs=$(podman "${global[@]}" logs "$name" 2>&1)
echo "$logs" | python3 -c '
import json, sys
lines = [json.loads(line) for line in sys.stdin if line.strip()]
assert any(line["msg"].startswith("listening on 0.0.0.0:") for line in lines), lines
assert not any("poll loop" in line["msg"] for line in lines), "the libev plugin was not loaded"
' || fail "the log is not JSON lines with the announcement, or libev was not loaded"

podman "${global[@]}" stop -t 10 "$name" >/dev/null
status=$(podman "${global[@]}" inspect "$name" --format '{{.State.ExitCode}}')
[ "$status" = 0 ] || fail "exit status $status after SIGTERM"
echo "test-image: PASS: the image served /livez, /readyz, /admin/, / and the server API, logged JSON, stopped with 0 ($(( $(date +%s) - started )) s in all)"
