#!/usr/bin/env bash
# Leak check (`make leak-check`, docs/testing.md "Leaks"): the release broker with a SQLite
# store runs under valgrind memcheck while `rollcall-bench soak` churns sessions against it,
# then gets SIGTERM. Fails when valgrind reports any memory definitely or indirectly lost,
# when the soak could not drive the broker, or when the broker does not exit cleanly.
#
#   LEAK_SECONDS   seconds of churn (default 20)
#   LEAK_SESSIONS  sessions kept open (default 200)
#   LEAK_RATE      churn operations per second (default 40)
#
# Needs `make release` first (.build-release/release/rollcall and Benchmarks/.build/release/rollcall-bench). The full
# valgrind report is kept in .build-release/leak-check.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

LEAK_SECONDS=${LEAK_SECONDS:-20}
LEAK_SESSIONS=${LEAK_SESSIONS:-200}
LEAK_RATE=${LEAK_RATE:-40}
BROKER=.build-release/release/rollcall
BENCH=Benchmarks/.build/release/rollcall-bench
REPORT=.build-release/leak-check.log
START_TIMEOUT=240  # valgrind starts a Swift binary slowly, more so on a busy machine
EXIT_TIMEOUT=240   # the leak search at exit takes a while too

fail() { echo "leak-check: FAIL: $*" >&2; exit 1; }

for tool in valgrind objcopy; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (make leak-check installs it)"
done
[[ -x $BROKER && -x $BENCH ]] || fail "$BROKER or $BENCH is missing; run \`make release\` first"

workdir=$(mktemp -d "${TMPDIR:-/tmp}/rollcall-leak.XXXXXX")
broker_pid=""
cleanup() {
    if [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then kill -KILL "$broker_pid" 2>/dev/null || true; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

# valgrind 3.19 cannot read the DWARF Swift 6.3 writes: check a copy without debug sections
# (the symbol table stays, so the stacks in the report are still named).
objcopy --strip-debug "$BROKER" "$workdir/rollcall"

cat > "$workdir/config.json" <<EOF
{
  "listen":  {"host": "127.0.0.1", "port": 0},
  "storage": {"path": "$workdir/status.db"},
  "log":     {"level": "warning"}
}
EOF

echo "leak-check: starting the release broker under valgrind memcheck (report: $REPORT)"
valgrind --leak-check=full --show-leak-kinds=all --num-callers=30 --log-file="$REPORT" \
    "$workdir/rollcall" --config "$workdir/config.json" --port 0 > "$workdir/broker.out" 2>&1 &
broker_pid=$!  # valgrind runs the program in its own process: this is the broker's PID

port=""
deadline=$((SECONDS + START_TIMEOUT))
while [[ -z $port ]]; do
    kill -0 "$broker_pid" 2>/dev/null || { cat "$workdir/broker.out" >&2; fail "the broker exited during start-up"; }
    (( SECONDS < deadline )) || fail "the broker did not report its port within ${START_TIMEOUT} s"
    port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$workdir/broker.out" | head -n 1)
    [[ -n $port ]] || sleep 0.5
done
echo "leak-check: broker pid $broker_pid on port $port; soak: $LEAK_SESSIONS sessions, $LEAK_SECONDS s, $LEAK_RATE ops/s"

# RSS under valgrind says nothing about the broker, so the soak's growth verdict is switched
# off (--max-growth); its exit status still fails the check when the sessions did not open.
"$BENCH" soak --url "ws://127.0.0.1:$port/v1" --pid "$broker_pid" \
    --sessions "$LEAK_SESSIONS" --duration "$LEAK_SECONDS" --rate "$LEAK_RATE" \
    --max-growth 100000 --json "$workdir/soak.json" \
    || fail "rollcall-bench soak failed (see above)"

echo "leak-check: SIGTERM to the broker; waiting for valgrind's leak search"
kill -TERM "$broker_pid"
deadline=$((SECONDS + EXIT_TIMEOUT))
while kill -0 "$broker_pid" 2>/dev/null; do
    (( SECONDS < deadline )) || fail "the broker did not exit within ${EXIT_TIMEOUT} s of SIGTERM"
    sleep 0.5
done
status=0
wait "$broker_pid" || status=$?
broker_pid=""
[[ $status -eq 0 ]] || { cat "$workdir/broker.out" >&2; fail "the broker exited with status $status"; }

# valgrind prints either a LEAK SUMMARY or "All heap blocks were freed".
lost_bytes() {  # $1: "definitely" or "indirectly"
    sed -n "s/.*$1 lost: \([0-9,]*\) bytes.*/\1/p" "$REPORT" | tail -n 1 | tr -d ,
}
if grep -q "All heap blocks were freed" "$REPORT"; then
    definitely=0 indirectly=0
else
    grep -q "LEAK SUMMARY" "$REPORT" || fail "no leak summary in $REPORT"
    definitely=$(lost_bytes definitely)
    indirectly=$(lost_bytes indirectly)
fi
sed -n '/HEAP SUMMARY/,$p' "$REPORT" | grep -E "in use at exit|lost:|reachable:|ERROR SUMMARY" | sed 's/^==[0-9]*== */    /'
if [[ ${definitely:-x} != 0 || ${indirectly:-x} != 0 ]]; then
    fail "definitely lost ${definitely:-?} bytes, indirectly lost ${indirectly:-?} bytes (stacks in $REPORT)"
fi
echo "leak-check: PASS: nothing definitely or indirectly lost ($LEAK_SESSIONS sessions, $LEAK_SECONDS s of churn)"
