#!/usr/bin/env python3
"""Operator-facing checks against the real broker (`make test-ops`, part of `make test`).

- `promtool check metrics` reports nothing on `/metrics` of a single node (webhooks and the
  server API on, one API request made), of a node in jwt mode with a JWK Set (`auth.jwksFile`
  made by examples/issuer/issuer.mjs, one login refused: the key set and refusal families) and
  of a cluster node (two nodes on a throwaway redis-server).
- The Python and JavaScript receivers of docs/webhooks.md ("Checking the signature"), run as
  written (Python here, JavaScript under Node), accept a real batch of a broker signing with
  `webhooks.secret` and `webhooks.secrets` with either secret, and refuse it with another.
- contrib/: `systemd-analyze verify` finds nothing in the systemd unit (a copy whose ExecStart
  is the built binary); `promtool check rules` accepts the alert rules; every `rollcall_*` and
  `process_*` name the alert rules and the Grafana dashboard use is on a live broker's
  `/metrics` (the single node's and the cluster node's pages together).

Prints one PASS line per check and exits non-zero at the first failure. Standard library only;
needs `promtool` (Debian's `prometheus`), `systemd-analyze` (Debian's `systemd`), `redis-server`
and `node` (the Makefile installs them).
"""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fail(message):
    print(f"test-ops: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


sys.path.insert(0, os.path.join(ROOT, "Tests", "api"))
import broker as api_broker  # noqa: E402  (Tests/api/broker.py: the server API suite's harness)

BINARY = api_broker.binary()


class Broker(api_broker.Broker):
    """The server API suite's broker (Tests/api/broker.py: temporary config, an API key,
    `stop()`), plus plain GETs and a WebSocket login. `config` sections are merged into its
    defaults one level deep."""

    def __init__(self, config):
        extra = {"api": {"keys": [api_broker.API_KEY]}}
        for key, value in config.items():
            extra[key] = value
        super().__init__(extra=extra)
        if self.process.poll() is not None:  # the harness returns the exit status then, not a port
            fail(f"broker did not start (exit {self.process.returncode}): {''.join(self.stderr_lines)}")

    def get(self, path):
        with urllib.request.urlopen(f"{self.base_url}{path}", timeout=5) as answer:
            return answer.read().decode()

    def api(self, op, body):
        status, _, answer = super().api(op, body)
        return answer if status == 200 else {"ok": False, "status": status}

    def login(self, user_id):
        """Logs `user_id` in over a minimal WebSocket (stdlib sockets) and returns the socket:
        the user's status goes online, a webhook event."""
        connection, reply = self.send_login(user_id)
        if b'"ok":true' not in reply:
            fail(f"login of {user_id} failed")
        return connection

    def login_refused(self, user_id):
        """Sends a login without a token; the error code of the reply (the socket is closed)."""
        connection, reply = self.send_login(user_id)
        connection.close()
        match = re.search(rb'"code":"([A-Z_]+)"', reply)
        return match.group(1).decode() if match else None

    def send_login(self, user_id):
        """A minimal WebSocket (stdlib sockets) and its `login` reply frame."""
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        connection.sendall((f"GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nUpgrade: websocket\r\n"
                            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += connection.recv(4096)
        if not head.startswith(b"HTTP/1.1 101"):
            fail(f"WebSocket upgrade refused: {head[:80]!r}")
        payload = json.dumps({"id": 1, "op": "login", "userId": user_id}).encode()
        mask = os.urandom(4)
        connection.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        return connection, connection.recv(4096)


class Receiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver that acknowledges everything and keeps (header, body) of each batch."""
    batches = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Receiver.batches.append((self.headers.get("Rollcall-Signature", ""), body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *arguments):
        pass


def promtool_metrics(page, where):
    result = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    report = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or report:
        fail(f"promtool check metrics on {where} reported:\n{report}")


def doc_block(path, heading, language):
    """The first ```language block after `heading` in a Markdown file."""
    text = open(os.path.join(ROOT, path)).read()
    section = text[text.index(heading):]
    start = section.index(f"```{language}\n") + len(f"```{language}\n")
    return section[start:section.index("```", start)]


def check_documented_receivers(header, body, workdir):
    """Runs the receivers of docs/webhooks.md on one real batch signed with `new` and `old`."""
    cases = [(["new"], True), (["old"], True), (["old", "new"], True), (["other"], False)]
    namespace = {}
    exec(doc_block("docs/webhooks.md", "## Checking the signature", "python"), namespace)
    for secrets, accepted in cases:
        if namespace["verify"]([s.encode() for s in secrets], header, body) != accepted:
            fail(f"the Python receiver of docs/webhooks.md with {secrets} did not {'accept' if accepted else 'refuse'} {header}")
        if namespace["verify"]([s.encode() for s in secrets], header, body + b" "):
            fail("the Python receiver of docs/webhooks.md accepted a changed body")
    module = os.path.join(workdir, "verify.mjs")
    with open(module, "w") as handle:
        handle.write(doc_block("docs/webhooks.md", "## Checking the signature", "js"))
    driver = (f"import {{ verify }} from {json.dumps(module)};\n"
              f"const header = {json.dumps(header)}, body = Buffer.from({json.dumps(body.decode())});\n"
              f"console.log(JSON.stringify({json.dumps([c[0] for c in cases])}.map((s) => verify(s, header, body))"
              f".concat([verify(['new'], header, Buffer.concat([body, Buffer.from(' ')]))])));\n")
    result = subprocess.run(["node", "--input-type=module", "-e", driver], capture_output=True, text=True)
    expected = [c[1] for c in cases] + [False]
    if result.returncode != 0 or json.loads(result.stdout or "null") != expected:
        fail(f"the JavaScript receiver of docs/webhooks.md answered {result.stdout.strip()} {result.stderr.strip()}, expected {expected}")


def sample_names(page):
    """The sample names of a text-format page (`rollcall_x_bucket`, `process_open_fds` …)."""
    names = set()
    for line in page.splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def check_contrib(pages, workdir):
    """The systemd unit, the alert rules and the dashboard of contrib/ (see the module doc)."""
    unit = open(os.path.join(ROOT, "contrib/systemd/rollcall.service")).read()
    if "ExecStart=/usr/local/bin/rollcall " not in unit:
        fail("contrib/systemd/rollcall.service: ExecStart is not /usr/local/bin/rollcall")
    copy = os.path.join(workdir, "rollcall.service")
    with open(copy, "w") as handle:
        handle.write(unit.replace("ExecStart=/usr/local/bin/rollcall ", f"ExecStart={os.path.abspath(BINARY)} "))
    result = subprocess.run(["systemd-analyze", "verify", copy], capture_output=True, text=True)
    report = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or report:
        fail(f"systemd-analyze verify contrib/systemd/rollcall.service reported:\n{report}")
    print("test-ops: PASS: systemd-analyze verify finds nothing in contrib/systemd/rollcall.service")

    rules = os.path.join(ROOT, "contrib/prometheus/rollcall-alerts.yml")
    result = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"promtool check rules contrib/prometheus/rollcall-alerts.yml:\n{result.stdout}{result.stderr}")
    alerts = open(rules).read()
    for needed in ["up{job=\"rollcall\"}", "rollcall_redis_connected", "rollcall_webhook_events_dropped_total",
                   "rollcall_storage_healthy", "rollcall_slow_consumer_cuts_total"]:
        if needed not in alerts:
            fail(f"the alert rules do not watch {needed}")
    print("test-ops: PASS: promtool check rules accepts contrib/prometheus/rollcall-alerts.yml "
          f"({result.stdout.strip().splitlines()[-1].strip()})")

    live = set().union(*(sample_names(page) for page in pages))
    dashboard = json.load(open(os.path.join(ROOT, "contrib/grafana/rollcall-dashboard.json")))
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    expressions += [variable["query"] for variable in dashboard["templating"]["list"]]
    pattern = re.compile(r"\b(?:rollcall|process)_[a-z0-9_]+\b")
    for where, text in [("contrib/grafana/rollcall-dashboard.json", "\n".join(expressions)),
                        ("contrib/prometheus/rollcall-alerts.yml", alerts)]:
        used = set(pattern.findall(text))
        missing = sorted(used - live)
        if missing:
            fail(f"{where} uses metric names a live broker does not have: {missing}")
        print(f"test-ops: PASS: every metric name of {where} is on a live broker's /metrics ({len(used)} names)")


def jwt_node_page(workdir, brokers):
    """/metrics of a broker in jwt mode whose `auth.jwksFile` holds a key the example issuer
    made, after one refused login (a token without a known key): the `rollcall_jwks_*` and
    `rollcall_logins_refused_total` families."""
    issuer = os.path.join(ROOT, "examples", "issuer", "issuer.mjs")
    key, jwks = os.path.join(workdir, "ops-key.pem"), os.path.join(workdir, "ops-jwks.json")
    with open(key, "w") as file:
        subprocess.run(["node", issuer, "--new-key", "EdDSA"], stdout=file, check=True)
    with open(jwks, "w") as file:
        subprocess.run(["node", issuer, "--jwks", "--key", key], stdout=file, check=True)
    node = Broker({"auth": {"mode": "jwt", "secretEnv": None, "jwksFile": jwks}})
    brokers.append(node)
    if node.login_refused("ops-user") != "UNAUTHORIZED":
        fail("a login without a token was not refused in jwt mode")
    page = node.get("/metrics")
    for sample in ['rollcall_jwks_refreshes_total{source="file"} 1', 'rollcall_jwks_keys{source="file"} 1',
                   'rollcall_logins_refused_total{reason="missing_token"} 1']:
        if sample not in page:
            fail(f"/metrics of the jwt node lacks {sample}")
    return page


def main():
    if not os.access(BINARY, os.X_OK):
        fail(f"no broker binary at {BINARY} (swift build --product rollcall)")
    for tool in ["promtool", "systemd-analyze", "redis-server", "node"]:
        if not shutil.which(tool):
            fail(f"{tool} not found (make ops-deps)")
    workdir = tempfile.mkdtemp(prefix="rollcall-ops-")
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    brokers, redis = [], None
    try:
        single = Broker({"webhooks": {"url": f"http://127.0.0.1:{receiver.server_address[1]}/hooks", "secret": "new",
                                      "secrets": ["old"], "batchMaxDelaySeconds": 0.05}})
        brokers.append(single)
        if not single.api("publish", {"channel": "ops", "message": {"hello": 1}}).get("ok"):
            fail("the server API publish failed")
        session = single.login("ops-user")
        page = single.get("/metrics")
        pages = [page]
        promtool_metrics(page, "a single node")
        print(f"test-ops: PASS: promtool check metrics reports nothing on a single node ({page.count(chr(10))} lines)")

        page = jwt_node_page(workdir, brokers)
        pages.append(page)
        promtool_metrics(page, "a node in jwt mode with a key set")
        print(f"test-ops: PASS: promtool check metrics reports nothing on a node in jwt mode with a key set ({page.count(chr(10))} lines)")

        wait_until(lambda: Receiver.batches, 10, "a webhook batch (ops-user online)")
        session.close()
        header, body = Receiver.batches[0]
        if header.count("v1=") != 2:
            fail(f"a batch signed with webhooks.secret and one of webhooks.secrets carries {header}")
        check_documented_receivers(header, body, workdir)
        print("test-ops: PASS: the Python and JavaScript receivers of docs/webhooks.md accept a real batch with either secret")

        redis_port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def redis_answers():
            try:
                with socket.create_connection(("127.0.0.1", redis_port), timeout=0.2) as connection:
                    connection.sendall(b"PING\r\n")
                    return connection.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        wait_until(redis_answers, 10, "redis-server")
        cluster = {"cluster": {"redis": f"redis://127.0.0.1:{redis_port}", "keyPrefix": "ops:", "heartbeatSeconds": 0.2,
                               "nodeTimeoutSeconds": 1}}
        nodes = [Broker({**cluster, "cluster": {**cluster["cluster"], "nodeId": f"n{index}"}}) for index in (1, 2)]
        brokers.extend(nodes)
        wait_until(lambda: "rollcall_cluster_nodes 2" in nodes[0].get("/metrics"), 10, "two cluster nodes")
        page = nodes[0].get("/metrics")
        pages.append(page)
        promtool_metrics(page, "a cluster node")
        print(f"test-ops: PASS: promtool check metrics reports nothing on a cluster node ({page.count(chr(10))} lines)")
        check_contrib(pages, workdir)
    finally:
        for broker in brokers:
            broker.stop()
        if redis:
            redis.kill()
            redis.wait()
        receiver.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
