#!/usr/bin/env bash
# `make test-consumer` (docs/testing.md): proves an app can use RollcallClient as a versioned
# dependency. Clones the current commit into a temporary folder, tags the clone 1.2.0, and
# builds and runs Tests/consumer, whose manifest has `.package(url: file://…, from: "1.2.0")`.
# SwiftPM rejects unsafe flags in packages consumed by version, so an unsafe flag anywhere in
# RollcallClient's dependency closure fails this check. Only that closure gets built.
#
#   CONSUMER_KEEP=1  keep the temporary folder (its path is printed)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

fail() { echo "test-consumer: FAIL: $*" >&2; exit 1; }

commit=$(git rev-parse HEAD)
git diff --quiet HEAD -- Package.swift Sources || \
    echo "test-consumer: note: uncommitted changes are not checked, only commit ${commit:0:12}"

workdir=$(mktemp -d "${TMPDIR:-/tmp}/rollcall-consumer.XXXXXX")
if [[ -z ${CONSUMER_KEEP:-} ]]; then trap 'rm -rf "$workdir"' EXIT; else echo "test-consumer: keeping $workdir"; fi

# The clone's folder name is the package identity the consumer's manifest refers to.
git clone --quiet --no-checkout . "$workdir/Rollcall"
git -C "$workdir/Rollcall" -c advice.detachedHead=false checkout --quiet "$commit"
git -C "$workdir/Rollcall" tag 1.2.0 "$commit"

mkdir "$workdir/consumer"
cp -R Tests/consumer/Package.swift Tests/consumer/Sources "$workdir/consumer/"

echo "test-consumer: building Tests/consumer against file://$workdir/Rollcall from: 1.2.0 (commit ${commit:0:12})"
export ROLLCALL_PACKAGE_URL="file://$workdir/Rollcall"
swift build --package-path "$workdir/consumer" > "$workdir/build.log" 2>&1 || {
    cat "$workdir/build.log" >&2
    fail "the consumer package did not build against the tagged clone"
}
grep -q "Rollcall.*1\.1\.0" "$workdir/consumer/Package.resolved" 2>/dev/null || \
    grep -q '"version" : "1.2.0"' "$workdir/consumer/Package.resolved" || \
    fail "Package.resolved does not pin Rollcall at 1.2.0"
output=$("$workdir/consumer/.build/debug/rollcall-consumer") || fail "the consumer did not run"
echo "$output"
echo "test-consumer: PASS: RollcallClient builds as a versioned dependency (.package(url:from: \"1.2.0\")), ${SECONDS} s"
