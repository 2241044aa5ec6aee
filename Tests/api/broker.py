"""A real `rollcall` broker for the server API tests: the debug build (or $ROLLCALL_BINARY)
on a free loopback port (`--port 0`), a temporary config with an API key, in-memory storage."""

import http.client
import json
import os
import pathlib
import re
import subprocess
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
API_KEY = "test-key-0123456789abcdef"


def binary():
    return os.environ.get("ROLLCALL_BINARY") or str(ROOT / ".build" / "debug" / "rollcall")


class Broker:
    """Starts the broker; `stop()` sends SIGTERM and waits for exit 0."""

    def __init__(self, api=None, extra=None, env=None):
        config = {
            "listen": {"host": "127.0.0.1", "port": 0},
            "storage": {"path": None},
            "log": {"level": "warning"},
            "http": {"staticDir": None},
            "presence": {"timeoutSeconds": 30},
            "api": {"keys": [API_KEY]} if api is None else api,
        }
        config.update(extra or {})
        handle, self.config_path = tempfile.mkstemp(prefix="rollcall-api-", suffix=".json")
        with os.fdopen(handle, "w") as file:
            json.dump(config, file)
        environment = {k: v for k, v in os.environ.items() if k != "ROLLCALL_API_KEY"}
        environment.update(env or {})
        self.process = subprocess.Popen(
            [binary(), "--config", self.config_path, "--port", "0"], cwd=ROOT, env=environment,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.port = self._wait_for_port(timeout=15)
        self.stderr_lines = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _wait_for_port(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            match = re.match(r"listening on .*:(\d+)$", line.strip())
            if match:
                return int(match.group(1))
        self.process.kill()
        raise RuntimeError("the broker did not start: " + self.process.stderr.read())

    def _drain_stderr(self):
        for line in self.process.stderr:
            self.stderr_lines.append(line)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        os.unlink(self.config_path)
        return self.process.returncode

    @property
    def ws_url(self):
        return f"ws://127.0.0.1:{self.port}/v1"

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, key=API_KEY, headers=None):
        """One HTTP request on a new connection; returns (status, content type, parsed JSON)."""
        status, response_headers, answer = self.exchange(method, path, body, key, headers)
        return status, response_headers.get("Content-Type"), answer

    def exchange(self, method, path, body=None, key=API_KEY, headers=None):
        """One HTTP request on a new connection; returns (status, headers, parsed JSON)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            all_headers = {"Content-Type": "application/json"}
            if key is not None:
                all_headers["Authorization"] = f"Bearer {key}"
            all_headers.update(headers or {})
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            connection.request(method, path, body=body, headers=all_headers)
            response = connection.getresponse()
            raw = response.read()
            return response.status, response.headers, json.loads(raw)
        finally:
            connection.close()

    def api(self, op, body=None, **kwargs):
        return self.request("POST", f"/api/v1/{op}", {} if body is None else body, **kwargs)
