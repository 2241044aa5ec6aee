"""Property-based testing of the live broker against docs/api/openapi.yaml with schemathesis
4.32 and every check it has (`--checks all`): the examples, coverage, fuzzing and stateful
phases, seeded and bounded (`ROLLCALL_SCHEMATHESIS_EXAMPLES` examples per operation, default
40) so the run stays short, with Tests/api/schemathesis_hooks.py (the byte-limited name
formats; `getState`'s USER_NOT_PRESENT) loaded through SCHEMATHESIS_HOOKS.

The stateful phase follows the document's links, getChannels → getOnlineUsers → getState →
disconnectUser, so the broker holds members before the run: the test checks that the chain
reached disconnectUser with a member it found (their WebSockets are closed with 4403)."""

import os
import shutil
import subprocess
import sys
import tempfile

from broker import API_KEY, ROOT, Broker
from openapi_check import SPEC_PATH
from wsclient import Client

MAX_EXAMPLES = int(os.environ.get("ROLLCALL_SCHEMATHESIS_EXAMPLES", "40"))
SEED = os.environ.get("ROLLCALL_SCHEMATHESIS_SEED", "13")
HOOKS = ROOT / "Tests" / "api" / "schemathesis_hooks.py"
MEMBERS = ["alice", "bob", "carol", "dave"]


def schemathesis_command():
    found = shutil.which("schemathesis") or shutil.which("st")
    return [found] if found else [sys.executable, "-m", "schemathesis.cli"]


def run_schemathesis(broker, directory):
    return subprocess.run(
        schemathesis_command() + [
            "run", str(SPEC_PATH), "--url", broker.base_url,
            "--header", f"Authorization: Bearer {API_KEY}",
            "--checks", "all", "--max-examples", str(MAX_EXAMPLES), "--seed", SEED,
            "--phases", "examples,coverage,fuzzing,stateful", "--request-timeout", "10",
            "--generation-database", "none", "--no-color",
            # lws hangs up on a URL holding %00 before any route sees it: no NUL in paths.
            "--generation-allow-x00", "false",
        ],
        cwd=directory, env={**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS)}, capture_output=True, timeout=180)


def populate(broker):
    """Members in channels of both types, with state, for the stateful phase to find."""
    clients = []
    for index, user in enumerate(MEMBERS):
        client = Client(broker.ws_url, user)
        client.call("join", channel="room:lobby", state={"mood": "ok"})
        client.call("join", channel=f"room:{index}")
        client.call("join", channel="live", channelType="stream")
        clients.append(client)
    return clients


def test_schemathesis_finds_no_failure():
    # maxMessageBytes = maxFrameBytes: a body the broker reads never holds a message over it.
    broker = Broker(extra={"limits": {"maxFrameBytes": 65536, "maxMessageBytes": 65536}})
    # Its caches go to a throwaway folder, not the work tree.
    scratch = tempfile.TemporaryDirectory(prefix="rollcall-schemathesis-")
    clients = []
    try:
        clients = populate(broker)
        try:
            result = run_schemathesis(broker, scratch.name)
        except subprocess.TimeoutExpired as expired:
            partial = (expired.stdout or b"") + (expired.stderr or b"")
            raise AssertionError("schemathesis did not finish in time:\n" + partial.decode(errors="replace")[-8000:]
                                 + "\nbroker stderr:\n" + "".join(broker.stderr_lines)[-4000:])
        output = (result.stdout + result.stderr).decode(errors="replace")
        assert result.returncode == 0, output[-8000:]
        assert "Stateful" in output and "Stateful (not applicable)" not in output, output[-3000:]
        assert broker.process.poll() is None, "the broker died: " + "".join(broker.stderr_lines)
        # The chain reached disconnectUser with members it listed: only that logs them out.
        _, _, answer = broker.api("getUserStatus", {"userIds": MEMBERS})
        disconnected = [r["userId"] for r in answer["result"]["statuses"] if r["status"] == "loggedOut"]
        assert disconnected, "the stateful phase disconnected no member:\n" + output[-3000:]
        assert clients[MEMBERS.index(disconnected[0])].wait_for_close()[0] == 4403
    finally:
        for client in clients:
            client.close()
        scratch.cleanup()
        assert broker.stop() == 0
