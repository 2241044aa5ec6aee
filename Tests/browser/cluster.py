"""A throwaway cluster for the browser tests: one redis-server on a free loopback port (its
own folder, nothing saved) and N brokers on it, each started by the server API suite's
harness (Tests/api/broker.py: a temporary config, an API key, `--port 0`)."""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
import broker as api_broker  # noqa: E402  (Tests/api/broker.py)

API_KEY = api_broker.API_KEY


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers_ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def running_redis(timeout=10):
    """redis-server on a free port; yields its port, stops it (by its PID) after."""
    folder = tempfile.mkdtemp(prefix="rollcall-redis-")
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while not _answers_ping(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer on {port} (exit {process.poll()})")
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def running_cluster(nodes, config):
    """`nodes` brokers on one redis-server, each with `config` (sections) plus the cluster
    section; yields the Broker objects once every node sees them all. Each is stopped with
    SIGTERM after, and must exit 0."""
    with running_redis() as redis_port:
        cluster = {"redis": f"redis://127.0.0.1:{redis_port}", "keyPrefix": "rollcall-browser:",
                   "heartbeatSeconds": 1, "nodeTimeoutSeconds": 5}
        brokers = []
        failure = None
        try:
            # Started side by side: each waits for its Redis links before it says `listening`.
            with ThreadPoolExecutor(nodes) as pool:
                starting = [pool.submit(api_broker.Broker, extra={**config, "cluster": cluster}) for _ in range(nodes)]
                for future in starting:
                    try:
                        brokers.append(future.result())
                    except Exception as error:  # the others are stopped below
                        failure = error
            if len(brokers) < nodes:
                raise RuntimeError(f"a node did not start: {failure}")
            deadline = time.monotonic() + 15
            while any(len(b.api("getInfo")[2]["result"]["nodes"]) < nodes for b in brokers):
                if time.monotonic() > deadline:
                    raise RuntimeError("the nodes did not see each other")
                time.sleep(0.1)
            yield brokers
        finally:
            for node in brokers:  # SIGTERM to all at once; each hands its sessions over
                node.process.terminate()
            statuses = [b.stop() for b in brokers]
            errors = "".join(line for b in brokers for line in b.stderr_lines)
            assert all(status == 0 for status in statuses), f"exit statuses {statuses}: {errors}"
