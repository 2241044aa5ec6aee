"""Drives the browser demo (examples/web) in two headless Chromium sessions against the
real broker: both log in, join one channel, see each other, a state change, a custom
status and a leave. Run with `make test-browser` (or `python3 -m pytest Tests/browser`).

Needs Debian's `chromium` + `chromium-driver` and Selenium; `make browser-deps` installs
them. Saves screenshots to artifacts/ (demo.png: bob's view before alice leaves).
"""

import base64
import contextlib
import hashlib
import hmac
import json
import os
import queue
import re
import shutil
import socket
import sys
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
BROKER = Path(os.environ.get("ROLLCALL_BINARY", ROOT / ".build" / "debug" / "rollcall"))
ARTIFACTS = ROOT / "artifacts"
WAIT_SECONDS = 20
CHANNEL = "room:lobby"


def _find(*candidates):
    for candidate in candidates:
        path = shutil.which(candidate) or (candidate if os.path.exists(candidate) else None)
        if path:
            return path
    return None


@contextlib.contextmanager
def running_broker(**sections):
    """The real broker on a free port, in-memory storage, serving examples/web; `sections`
    are merged into its config. Yields the page URL; stops the broker (by its PID) after."""
    if not BROKER.exists():
        pytest.fail(f"{BROKER} is missing: run `swift build` first")
    workdir = tempfile.mkdtemp(prefix="rollcall-browser-")
    config = {
        "listen": {"host": "127.0.0.1"},
        "storage": {"path": None},
        "http": {"staticDir": str(ROOT / "examples" / "web")},
        "log": {"level": "warning"},
    }
    config.update(sections)
    config_path = Path(workdir) / "config.json"
    config_path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [str(BROKER), "--port", "0", "--config", str(config_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir,
    )
    lines = queue.Queue()

    def pump():
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        address = None
        output = []
        while address is None:
            try:
                line = lines.get(timeout=WAIT_SECONDS)
            except queue.Empty:
                break
            if line is None:
                break
            output.append(line)
            match = re.search(r"listening on (\S+):(\d+)", line)
            if match:
                address = f"{match.group(1)}:{match.group(2)}"
        if address is None:
            pytest.fail("broker did not start:\n" + "".join(output))
        yield f"http://{address}/"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def broker():
    with running_broker() as url:
        yield url


def _browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1360,900", "--lang=en-US", "--no-first-run"):
        options.add_argument(argument)
    binary = _find("chromium", "/usr/bin/chromium", "chromium-browser")
    if binary:
        options.binary_location = binary
    driver_path = _find("chromedriver", "/usr/bin/chromedriver")
    service = Service(executable_path=driver_path) if driver_path else Service()
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(WAIT_SECONDS)
    return driver


@pytest.fixture(scope="module")
def browsers():
    drivers = []
    try:
        drivers.append(_browser())
        drivers.append(_browser())
        yield drivers
    finally:
        for driver in drivers:
            driver.quit()


def wait(driver):
    return WebDriverWait(driver, WAIT_SECONDS)


def css(driver, selector):
    return driver.find_element(By.CSS_SELECTOR, selector)


def present(selector):
    """Wait condition: an element matching the selector exists (returns it)."""
    return EC.presence_of_element_located((By.CSS_SELECTOR, selector))


def absent(selector):
    return lambda driver: not driver.find_elements(By.CSS_SELECTOR, selector)


def log_in(driver, url, user, platform, token=None):
    driver.get(url)
    wait(driver).until(EC.element_to_be_clickable((By.ID, "login-button")))
    css(driver, "#login-user").send_keys(user)
    Select(css(driver, "#login-platform")).select_by_visible_text(platform)
    if token:
        css(driver, "#login-token").send_keys(token)
    css(driver, "#login-button").click()
    wait(driver).until(EC.text_to_be_present_in_element_attribute(
        (By.ID, "connection-state"), "data-state", "online"))
    wait(driver).until(EC.visibility_of_element_located((By.ID, "workspace")))
    wait(driver).until(present(f'[data-testid="own-status-record"][data-user-id="{user}"][data-status="online"]'))


def join(driver, channel, channel_type="message"):
    field = css(driver, "#join-channel")
    field.clear()
    field.send_keys(channel)
    Select(css(driver, "#join-type")).select_by_value(channel_type)
    css(driver, "#join-button").click()
    wait(driver).until(EC.text_to_be_present_in_element((By.ID, "channel-name"), channel))


def member(user):
    return f'#roster [data-testid="member"][data-user-id="{user}"]'


@pytest.fixture
def screenshots_on_failure(browsers, request):
    """Saves each browser's view to artifacts/failure-N.png when the test fails."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        for index, driver in enumerate(browsers):
            driver.save_screenshot(str(ARTIFACTS / f"failure-{index}.png"))


def test_two_browsers_see_each_other(broker, browsers, screenshots_on_failure):
    alice, bob = browsers
    log_in(alice, broker, "alice", "web")
    log_in(bob, broker, "bob", "macos")

    # Both join; each sees the other in the roster (alice by a join event, bob by the snapshot).
    join(alice, CHANNEL)
    join(bob, CHANNEL)
    wait(alice).until(present(member("bob")))
    wait(bob).until(present(member("alice")))
    wait(alice).until(present('#activity [data-kind="join"][data-user-id="bob"]'))
    assert css(bob, "#channel-occupancy").text == "2"
    assert css(bob, "#channel-mode").text == "announce"

    # bob follows alice and sees her online, on the web.
    css(bob, "#subscribe-user").send_keys("alice")
    css(bob, "#subscribe-button").click()
    wait(bob).until(present('#statuses [data-testid="status"][data-user-id="alice"][data-status="online"]'))
    assert "web" in css(bob, '#statuses [data-user-id="alice"]').text

    # alice sets state → bob sees the chip on her roster entry.
    css(alice, "#state-key").send_keys("mood")
    css(alice, "#state-value").send_keys("happy")
    css(alice, "#state-set").click()
    wait(alice).until(present('#own-state [data-testid="own-state-key"][data-key="mood"]'))
    wait(bob).until(present(member("alice") + ' [data-testid="chip"][data-key="mood"][data-value="happy"]'))
    wait(bob).until(present('#activity [data-kind="state"][data-user-id="alice"]'))

    # alice sets a custom status → bob (subscribed) sees it.
    css(alice, "#custom-status").send_keys("In a meeting")
    css(alice, "#custom-status-set").click()
    wait(bob).until(EC.text_to_be_present_in_element(
        (By.CSS_SELECTOR, '#statuses [data-user-id="alice"] [data-testid="custom-status"]'), "In a meeting"))

    # A message from bob reaches alice.
    css(bob, "#publish-text").send_keys("hello alice")
    css(bob, "#publish-button").click()
    wait(alice).until(EC.text_to_be_present_in_element((By.ID, "messages"), "hello alice"))

    # bob's own state: set from the editor, shown in his roster entry and reaching alice.
    css(bob, "#state-key").send_keys("role")
    css(bob, "#state-value").send_keys("host")
    css(bob, "#state-set").click()
    wait(bob).until(present(member("bob") + ' [data-testid="chip"][data-key="role"][data-value="host"]'))
    wait(alice).until(present(member("bob") + ' [data-testid="chip"][data-key="role"][data-value="host"]'))

    ARTIFACTS.mkdir(exist_ok=True)
    bob.save_screenshot(str(ARTIFACTS / "demo.png"))

    # Removing the key from the editor clears the chip for alice.
    css(bob, '#own-state [data-key="role"] [data-testid="remove-state"]').click()
    wait(alice).until(absent(member("bob") + ' [data-testid="chip"][data-key="role"]'))

    # alice leaves → bob sees the leave (not a timeout), and the occupancy drops.
    css(alice, "#leave-button").click()
    wait(bob).until(absent(member("alice")))
    wait(bob).until(present('#activity [data-kind="leave"][data-user-id="alice"]'))
    wait(bob).until(EC.text_to_be_present_in_element((By.ID, "channel-occupancy"), "1"))
    assert not bob.find_elements(By.CSS_SELECTOR, '#activity [data-kind="timeout"]')
    bob.save_screenshot(str(ARTIFACTS / "demo-after-leave.png"))

    # Nothing went wrong in either page.
    for driver in browsers:
        errors = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        assert errors == [], errors


ROSTER_SCRIPT = """
const done = arguments[arguments.length - 1];
import("./rollcall.js").then(({ Roster }) => {
  const roster = new Roster("stadium", "stream", "me");
  const applied = [];
  // An event that arrives before the first snapshot waits for it.
  applied.push(roster.apply({ type: "join", publisher: "zed", state: {}, seq: 5, occupancy: 4, mode: "interval" }));
  applied.push(roster.apply({ type: "snapshot", seq: 4, occupancy: 4, mode: "interval", snapshot: [
    { userId: "frank", state: {} }, { userId: "gina", state: { a: "1" } },
    { userId: "hank", state: {} }, { userId: "me", state: { role: "host" } }] }));
  // Net change: joins (empty state) → leaves/timeouts → states.
  applied.push(roster.apply({ type: "interval", seq: 6, occupancy: 7, mode: "interval", interval: {
    join: ["Zoe", "dave", "\\u00e9lan"], leave: ["frank"], timeout: ["gina"],
    stateChanged: [{ userId: "dave", state: { seat: "A12" } }, { userId: "hank", state: { cheer: "go" } }] } }));
  // Already shown (seq not above the roster's): ignored.
  applied.push(roster.apply({ type: "leave", publisher: "dave", seq: 6, occupancy: 6, mode: "interval" }));
  // Own state from a reply.
  roster.applySelfState({ role: "guest" });
  done({ applied, ids: roster.sortedUserIds(), members: Object.fromEntries(roster.members),
         seq: roster.seq, mode: roster.mode, occupancy: roster.occupancy });
}).catch((error) => done({ error: String(error) }));
"""


def test_roster_module_applies_snapshot_interval_and_seq(broker, browsers):
    """rollcall.js's Roster, run in the page: waiting for the snapshot, interval lists in
    order, stale events ignored, byte order of user ids."""
    driver = browsers[0]
    driver.get(broker)
    wait(driver).until(EC.element_to_be_clickable((By.ID, "login-button")))
    result = driver.execute_async_script(ROSTER_SCRIPT)
    assert "error" not in result, result
    assert result["applied"] == [False, True, True, False]
    assert result["ids"] == ["Zoe", "dave", "hank", "me", "zed", "\u00e9lan"]
    assert result["members"] == {
        "Zoe": {}, "dave": {"seat": "A12"}, "hank": {"cheer": "go"}, "me": {"role": "guest"},
        "zed": {}, "\u00e9lan": {},
    }
    assert (result["seq"], result["mode"], result["occupancy"]) == (6, "interval", 7)


class CuttableProxy:
    """A TCP proxy in front of the broker whose connections can be cut without a WebSocket
    close frame (what a network drop looks like), and which can refuse connections for a while."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.refusing = False
        self.lock = threading.Lock()
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source, destination):
        try:
            while data := source.recv(65536):
                destination.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, destination):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        """Drops every open connection, both ways."""
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self):
        self.listener.close()
        self.cut()


def test_page_resumes_its_session_after_a_network_drop(broker, browsers):
    """carol's connection is cut (no close frame): her page shows "reconnecting…" while the
    proxy refuses, then resumes the held session — dave sees no leave or timeout."""
    carol, dave = browsers
    broker_port = int(broker.rstrip("/").rsplit(":", 1)[1])
    proxy = CuttableProxy(broker_port)
    try:
        log_in(carol, f"http://127.0.0.1:{proxy.port}/", "carol", "linux")
        log_in(dave, broker, "dave", "android")
        join(carol, "room:resume")
        join(dave, "room:resume")
        wait(dave).until(present(member("carol")))
        wait(carol).until(present(member("dave")))

        proxy.refusing = True
        proxy.cut()
        wait(carol).until(EC.text_to_be_present_in_element_attribute(
            (By.ID, "connection-state"), "data-state", "reconnecting"))
        assert "reconnecting" in css(carol, "#connection-state").text

        proxy.refusing = False
        wait(carol).until(present('#activity [data-kind="reconnect"][data-resumed="true"]'))
        wait(carol).until(EC.text_to_be_present_in_element_attribute(
            (By.ID, "connection-state"), "data-state", "online"))
        wait(carol).until(present(member("dave")))
        assert dave.find_elements(By.CSS_SELECTOR, member("carol"))
        assert not dave.find_elements(By.CSS_SELECTOR, '#activity [data-user-id="carol"][data-kind="leave"]')
        assert not dave.find_elements(By.CSS_SELECTOR, '#activity [data-user-id="carol"][data-kind="timeout"]')

        # The resumed session works: a state change reaches dave.
        css(carol, "#state-key").send_keys("back")
        css(carol, "#state-value").send_keys("yes")
        css(carol, "#state-set").click()
        wait(dave).until(present(member("carol") + ' [data-testid="chip"][data-key="back"][data-value="yes"]'))
    finally:
        proxy.close()


def test_typing_indicator_appears_then_expires_by_itself(broker, browsers, screenshots_on_failure):
    """ivan types in the message box (without sending): judy sees "typing…" under ivan's
    roster entry — not a `typing` chip — and sees it go away by itself once the broker's
    3 s state TTL has passed (ivan's own row too: rollcall.js expires own keys locally)."""
    ivan, judy = browsers
    log_in(ivan, broker, "ivan", "web")
    log_in(judy, broker, "judy", "linux")
    join(ivan, "room:typing")
    join(judy, "room:typing")
    wait(judy).until(present(member("ivan")))
    wait(ivan).until(present(member("judy")))

    typing = member("ivan") + ' [data-testid="typing"]'
    css(ivan, "#publish-text").send_keys("hello, ju")
    typed = time.monotonic()
    wait(judy).until(present(typing))
    assert css(judy, typing).text == "typing…"
    assert not judy.find_elements(By.CSS_SELECTOR, member("ivan") + ' [data-testid="chip"][data-key="typing"]')
    wait(ivan).until(present(typing))
    assert not ivan.find_elements(By.CSS_SELECTOR, '#own-state [data-key="typing"]')

    # Nobody sends "stopped typing": the key expires in the broker 3 s after the last setState
    # (at most one a second while typing), and judy's roster loses it.
    wait(judy).until(absent(typing))
    assert time.monotonic() - typed >= 2.5, "gone before the TTL"
    assert judy.find_elements(By.CSS_SELECTOR, member("ivan"))
    wait(ivan).until(absent(typing))
    assert css(ivan, "#publish-text").get_attribute("value") == "hello, ju"

    # Typing again shows it again; sending the message clears it at once.
    css(ivan, "#publish-text").send_keys("dy")
    wait(judy).until(present(typing))
    css(ivan, "#publish-button").click()
    wait(judy).until(EC.text_to_be_present_in_element((By.ID, "messages"), "hello, judy"))
    WebDriverWait(judy, 2.5).until(absent(typing))


SECRET = "browser-test-secret-0123456789abcdef"


def mint(user, ttl=600, info=None):
    """An HS256 token for `user` (see docs/authentication.md), with the 1.1 `info` claim when
    given. Returns the token; its `exp` is `int(time.time()) + ttl`."""
    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    claims = {"sub": user, "iat": int(time.time()), "exp": int(time.time()) + ttl}
    if info is not None:
        claims["info"] = info
    head = b64(b'{"alg":"HS256","typ":"JWT"}') + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(hmac.new(SECRET.encode(), head.encode(), hashlib.sha256).digest())


def token_expiry_ms(token):
    """The `exp` of a token minted here, in ms (what the page shows as `data-expires-at`)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"] * 1000


def test_jwt_login_and_interval_mode(browsers):
    """With auth.mode jwt: a bad token is refused on the login form, good ones log in. With
    maxInstantEvents 1 the second member switches the channel to interval mode: the roster
    follows the interval events, and the leave shows up from one."""
    with running_broker(
        auth={"mode": "jwt", "secret": SECRET},
        presence={"maxInstantEvents": 1, "hysteresis": 0, "intervalSeconds": 0.2},
    ) as url:
        erin, frank = browsers
        erin.get(url)
        wait(erin).until(EC.element_to_be_clickable((By.ID, "login-button")))
        css(erin, "#login-user").send_keys("erin")
        css(erin, "#login-token").send_keys(mint("somebody-else"))
        css(erin, "#login-button").click()
        wait(erin).until(EC.text_to_be_present_in_element((By.ID, "login-error"), "UNAUTHORIZED"))
        assert css(erin, "#workspace").get_attribute("hidden") is not None

        log_in(erin, url, "erin", "web", token=mint("erin"))
        log_in(frank, url, "frank", "ios", token=mint("frank"))
        join(erin, "stadium", "stream")
        join(frank, "stadium", "stream")
        wait(erin).until(present(member("frank")))
        wait(erin).until(EC.text_to_be_present_in_element((By.ID, "channel-mode"), "interval"))
        wait(erin).until(present('#activity [data-kind="interval"]'))
        wait(frank).until(present(member("erin")))

        css(frank, "#leave-button").click()
        wait(erin).until(absent(member("frank")))
        wait(erin).until(present('#activity [data-kind="leave"][data-user-id="frank"]'))


SHORT_TOKEN_SECONDS = 20


def test_page_refreshes_an_expiring_token_without_a_leave(browsers, screenshots_on_failure):
    """Protocol 1.1 token lifecycle in the page (auth.mode jwt, no clock skew): hana logs in
    with a token that expires within seconds; the broker's refreshRequired makes the page ask
    for a new token (the token panel); she pastes one and stays connected past the first
    token's exp: ivo, in the channel with her, sees no leave. A third user, gus, whose page is
    never given a new token, is closed with 4401 at his exp, and ivo sees him leave — so the
    broker's expiry did run meanwhile. Tokens carry `info`: ivo's roster shows `info.name`."""
    with running_broker(auth={"mode": "jwt", "secret": SECRET, "clockSkewSeconds": 0}) as url:
        hana, ivo = browsers
        # Long enough for the logins and joins below; gus's token, minted later with the same
        # lifetime, expires no sooner than hana's first one.
        short = mint("hana", ttl=SHORT_TOKEN_SECONDS, info={"name": "Hana Example"})
        log_in(hana, url, "hana", "web", token=short)
        log_in(ivo, url, "ivo", "linux", token=mint("ivo", info={"name": "Ivo"}))
        assert css(hana, "#token-expiry").get_attribute("data-expires-at") == str(token_expiry_ms(short))

        # gus, in a second tab of ivo's browser, with a short token nobody renews.
        ivo_tab = ivo.current_window_handle
        ivo.switch_to.new_window("tab")
        gus_tab = ivo.current_window_handle
        log_in(ivo, url, "gus", "cli", token=mint("gus", ttl=SHORT_TOKEN_SECONDS))
        join(ivo, "room:tokens")
        ivo.switch_to.window(ivo_tab)

        join(ivo, "room:tokens")
        join(hana, "room:tokens")
        wait(ivo).until(present(member("hana")))
        wait(ivo).until(present(member("gus")))
        wait(hana).until(present(member("ivo")))

        # info.name in the roster, for others and for oneself; no name: the user id alone.
        assert css(ivo, member("hana") + ' [data-testid="display-name"]').text == "Hana Example"
        wait(ivo).until(EC.text_to_be_present_in_element(
            (By.CSS_SELECTOR, '#activity [data-kind="join"][data-user-id="hana"]'), "Hana Example"))
        assert css(hana, member("ivo") + ' [data-testid="display-name"]').text == "Ivo"
        assert css(hana, member("hana") + ' [data-testid="display-name"]').text == "Hana Example"
        assert not ivo.find_elements(By.CSS_SELECTOR, member("gus") + ' [data-testid="display-name"]')

        # Less than auth.refreshNoticeSeconds (60) left: the notice comes at once and the page
        # asks for a new token.
        wait(hana).until(EC.visibility_of_element_located((By.ID, "token-panel")))
        assert "expire" in css(hana, "#token-message").text
        fresh = mint("hana", ttl=600, info={"name": "Hana Example"})
        css(hana, "#token-input").send_keys(fresh)
        css(hana, "#token-button").click()
        wait(hana).until(EC.text_to_be_present_in_element_attribute(
            (By.ID, "token-expiry"), "data-expires-at", str(token_expiry_ms(fresh))))
        wait(hana).until(EC.invisibility_of_element_located((By.ID, "token-panel")))

        # gus's token runs out: the broker closes his session (4401) and ivo sees him leave.
        wait(ivo).until(present('#activity [data-kind="leave"][data-user-id="gus"]'))
        wait(ivo).until(absent(member("gus")))
        assert time.time() * 1000 > token_expiry_ms(short), "past hana's first token's exp"

        # hana is still there, never dropped: no leave, timeout or rejoin for ivo, nor for her.
        assert css(hana, "#connection-state").get_attribute("data-state") == "online"
        assert ivo.find_elements(By.CSS_SELECTOR, member("hana"))
        for kind in ("leave", "timeout"):
            assert not ivo.find_elements(By.CSS_SELECTOR, f'#activity [data-kind="{kind}"][data-user-id="hana"]')
        assert len(ivo.find_elements(By.CSS_SELECTOR, '#activity [data-kind="join"][data-user-id="hana"]')) == 1
        assert not hana.find_elements(By.CSS_SELECTOR, '#activity [data-kind="reconnect"]')

        # The refreshed session works: a state change reaches ivo.
        css(hana, "#state-key").send_keys("still")
        css(hana, "#state-value").send_keys("here")
        css(hana, "#state-set").click()
        wait(ivo).until(present(member("hana") + ' [data-testid="chip"][data-key="still"][data-value="here"]'))

        # gus's page asks for a token to reconnect with (rollcall.js calls getToken after 4401).
        ivo.switch_to.window(gus_tab)
        wait(ivo).until(EC.visibility_of_element_located((By.ID, "token-panel")))
        assert "expired" in css(ivo, "#token-message").text
        ivo.close()
        ivo.switch_to.window(ivo_tab)

        # Nothing went wrong in the pages of this broker (the log may still hold the previous
        # test's pages failing to reconnect to their stopped broker).
        address = url.split("//", 1)[1].rstrip("/")
        for driver in browsers:
            errors = [entry for entry in driver.get_log("browser")
                      if entry.get("level") == "SEVERE" and address in entry.get("message", "")]
            assert errors == [], errors


@contextlib.contextmanager
def running_issuer(ttl):
    """examples/issuer/issuer.py's demo endpoint (`GET /token?user=ID`) on a free port, signing
    with SECRET, tokens valid `ttl` seconds. Yields its /token URL; stops it (by its PID) after."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "issuer" / "issuer.py"), "--serve", "0", "--ttl", str(ttl)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "ROLLCALL_JWT_SECRET": SECRET},
    )
    try:
        line = process.stdout.readline()
        match = re.search(r"listening on (\S+):(\d+)", line)
        if not match:
            pytest.fail("issuer did not start: " + line + process.stdout.read())
        yield f"http://{match.group(1)}:{match.group(2)}/token"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_page_renews_tokens_from_an_issuer_without_a_leave(browsers, screenshots_on_failure):
    """Logged in with a token issuer URL (examples/issuer's demo endpoint, 6-second tokens) and
    no pasted token, the page fetches a new token for the login and on each refreshRequired
    (auth.refreshNoticeSeconds 4): it stays connected well past its first token's exp, and
    the other user sees no leave. The issuer's `info` ({"name": "Kai"}) shows in her roster."""
    with running_issuer(ttl=6) as issuer, running_broker(
        auth={"mode": "jwt", "secret": SECRET, "clockSkewSeconds": 0, "refreshNoticeSeconds": 4},
    ) as url:
        kai, lee = browsers
        kai.get(url)
        wait(kai).until(EC.element_to_be_clickable((By.ID, "login-button")))
        css(kai, "#login-user").send_keys("kai")
        css(kai, "#login-issuer").send_keys(issuer)
        css(kai, "#login-button").click()
        wait(kai).until(EC.text_to_be_present_in_element_attribute((By.ID, "connection-state"), "data-state", "online"))
        wait(kai).until(present('#token-expiry:not([data-expires-at=""])'))
        first_expiry = int(css(kai, "#token-expiry").get_attribute("data-expires-at"))
        log_in(lee, url, "lee", "linux", token=mint("lee"))
        join(lee, "room:issuer")
        join(kai, "room:issuer")
        wait(lee).until(present(member("kai")))
        assert css(lee, member("kai") + ' [data-testid="display-name"]').text == "Kai"

        # Renewed until a second past the first token's exp; kai never dropped.
        wait(kai).until(lambda driver: time.time() * 1000 > first_expiry + 1000
                        and int(css(driver, "#token-expiry").get_attribute("data-expires-at") or 0) > time.time() * 1000)
        assert css(kai, "#connection-state").get_attribute("data-state") == "online"
        assert css(kai, "#token-panel").get_attribute("hidden") is not None, "nobody was asked to paste a token"
        assert not kai.find_elements(By.CSS_SELECTOR, '#activity [data-kind="reconnect"]')
        for kind in ("leave", "timeout"):
            assert not lee.find_elements(By.CSS_SELECTOR, f'#activity [data-kind="{kind}"][data-user-id="kai"]')
        assert lee.find_elements(By.CSS_SELECTOR, member("kai"))
        css(kai, "#publish-text").send_keys("still here")
        css(kai, "#publish-button").click()
        wait(lee).until(EC.text_to_be_present_in_element((By.ID, "messages"), "still here"))
