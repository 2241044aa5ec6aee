"""The operator's console (examples/admin, served at /admin) in headless Chromium against a
three-node cluster on one redis-server, all checks on that one cluster and one browser:

- a wrong key is refused and not kept; the right one is kept in sessionStorage only;
- the nodes with their sessions (getInfo), the channels with occupancy and mode, filtered by
  prefix and paged (getChannels), a channel's roster with states and `info` (getOnlineUsers),
  a user's status and channels (getUserStatus, getUserChannels), all read through the node
  that serves the page while the sessions sit on every node;
- the charts, drawn from that node's /metrics (read without credentials, as PROTOCOL §1
  serves it): they gain samples and follow new connections, deliveries and the webhook
  backlog;
- a disconnect from the page closes the user's WebSocket on another node with 4403 and the
  reason, and the user reads loggedOut.

Screenshots: artifacts/admin.png (the console), artifacts/admin-refused.png (a wrong key).
Run with `make test-browser` (or `python3 -m pytest Tests/browser/test_admin.py`).
"""

import json
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select

from cluster import API_KEY, free_port, running_cluster
from test_demo import ARTIFACTS, ROOT, SECRET, _browser, absent, css, mint, present, wait
from wsclient import Client  # Tests/api, on the path through cluster.py

# Webhooks point at a port nobody listens on, so their backlog grows and its chart has data.
CONFIG = {
    "http": {"staticDir": None, "adminDir": str(ROOT / "examples" / "admin")},
    "auth": {"mode": "jwt", "secret": SECRET},
    "webhooks": {"url": f"http://127.0.0.1:{free_port()}/hook", "secret": "admin-test-webhook-secret-0123"},
}


@pytest.fixture(scope="module")
def cluster():
    with running_cluster(3, CONFIG) as nodes:
        yield nodes


@pytest.fixture(scope="module")
def browser():
    driver = _browser()
    yield driver
    driver.quit()


@pytest.fixture
def screenshot_on_failure(browser, request):
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "admin-failure.png"))


def connect(node, user, name):
    """A session of `user` on `node`, with a token whose `info` names it."""
    return Client(node.ws_url, user, token=mint(user, info={"name": name}))


def chart(driver, name):
    """(samples, latest values) of a chart as the page drew it."""
    figure = css(driver, f'[data-testid="chart-{name}"]')
    samples = int(figure.get_attribute("data-samples") or 0)
    last = json.loads(figure.get_attribute("data-last") or "{}")
    return samples, last


def log_in(driver, node, key):
    driver.get(f"{node.base_url}/admin")
    wait(driver).until(EC.element_to_be_clickable((By.ID, "login-button")))
    field = css(driver, "#login-key")
    field.clear()
    field.send_keys(key)
    css(driver, "#login-button").click()


def test_a_wrong_key_is_refused_and_not_kept(cluster, browser, screenshot_on_failure):
    log_in(browser, cluster[0], "wrong-key-0123456789abcdef")
    assert browser.current_url == f"{cluster[0].base_url}/admin/"  # /admin redirects to /admin/
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "login-error"), "refused this key"))
    assert not css(browser, "#console").is_displayed()
    assert browser.execute_script("return sessionStorage.length + localStorage.length") == 0
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "admin-refused.png"))


def test_the_console_shows_the_cluster_and_disconnects_a_user(cluster, browser, screenshot_on_failure):
    first, second, third = cluster
    alice = connect(third, "alice", "Alice Liddell")
    bob = connect(second, "bob", "Bob")
    carol = connect(first, "carol", "Carol")
    alice.call("join", channel="room:lobby", state={"mood": "curious"})
    bob.call("join", channel="room:lobby", state={"role": "host"})
    carol.call("join", channel="room:lobby")
    bob.call("join", channel="live:1", channelType="stream")
    for index in range(12):
        carol.call("join", channel=f"room:p{index:02d}")

    log_in(browser, first, API_KEY)
    wait(browser).until(EC.visibility_of_element_located((By.ID, "console")))
    storage = browser.execute_script(
        "return [sessionStorage.getItem('rollcall.admin.apiKey'), localStorage.length, document.cookie]")
    assert storage == [API_KEY, 0, ""]
    Select(css(browser, "#refresh-every")).select_by_value("1")

    # Nodes: three, one session each, read through the first node.
    wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="node"][data-sessions="1"]')) == 3)
    assert css(browser, "#info-sessions").text == "3"
    assert css(browser, "#info-channels").text == "14"

    # Channels: filtered by prefix and paged.
    lobby = '[data-testid="channel"][data-channel="room:lobby"]'
    wait(browser).until(present(lobby + '[data-occupancy="3"][data-mode="announce"]'))
    css(browser, "#channels-prefix").send_keys("room:p")
    Select(css(browser, "#channels-page-size")).select_by_visible_text("10")
    css(browser, "#channels-filter").click()
    wait(browser).until(absent(lobby))
    wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="channel"]')) == 10)
    css(browser, "#channels-next").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "channels-page"), "page 2"))
    wait(browser).until(lambda d: [e.get_attribute("data-channel") for e in d.find_elements(By.CSS_SELECTOR, '[data-testid="channel"]')]
                        == ["room:p10", "room:p11"])
    assert not css(browser, "#channels-next").is_enabled()
    field = css(browser, "#channels-prefix")
    field.clear()
    field.send_keys("live")
    css(browser, "#channels-filter").click()
    wait(browser).until(present('[data-testid="channel"][data-channel="live:1"][data-channel-type="stream"]'))
    field.clear()
    css(browser, "#channels-filter").click()

    # The roster of room:lobby: members from every node, with their states and info.
    wait(browser).until(EC.element_to_be_clickable((By.CSS_SELECTOR, lobby + ' [data-testid="open-roster"]'))).click()
    alice_row = '#roster [data-testid="member"][data-user-id="alice"]'
    wait(browser).until(present(alice_row + ' [data-testid="chip"][data-key="mood"][data-value="curious"]'))
    wait(browser).until(present('#roster [data-user-id="bob"] [data-testid="chip"][data-key="role"][data-value="host"]'))
    assert json.loads(css(browser, alice_row + ' [data-testid="info"]').text) == {"name": "Alice Liddell"}
    assert css(browser, "#roster-occupancy").text == "3"

    # The charts: samples accumulate, and they follow new connections and deliveries on this node.
    wait(browser).until(lambda d: chart(d, "connections")[0] >= 2)
    samples_before, connections = chart(browser, "connections")
    watchers = [connect(first, f"watcher{i}", f"Watcher {i}") for i in range(3)]
    for watcher in watchers:
        watcher.call("join", channel="room:lobby", messages=True)
    wait(browser).until(lambda d: chart(d, "connections")[1]["connections"] == connections["connections"] + 3)

    def published_and_drawn(driver):
        """Publishes while waiting, so some sample interval always holds deliveries."""
        first.api("publish", {"channel": "room:lobby", "message": {"at": time.monotonic()}})
        return (chart(driver, "deliveries")[1]["deliveriesPerSecond"] or 0) > 0
    wait(browser).until(published_and_drawn)
    wait(browser).until(lambda d: (chart(d, "webhooks")[1]["webhookBacklog"] or 0) > 0)
    assert chart(browser, "connections")[0] > samples_before
    assert chart(browser, "sessions")[1]["liveSessions"] == 4

    # A user: status and channels, then a disconnect from the page (alice is on the third node).
    css(browser, alice_row + ' [data-testid="open-user"]').click()
    wait(browser).until(present('[data-testid="user-status"][data-status="online"]'))
    wait(browser).until(present('#user-channels [data-channel="room:lobby"]'))
    assert css(browser, "#user-platforms").text == "cli"
    ARTIFACTS.mkdir(exist_ok=True)
    browser.set_window_size(1360, 1500)  # every panel, the user's included
    browser.save_screenshot(str(ARTIFACTS / "admin.png"))
    css(browser, '[data-testid="disconnect-ask"]').click()
    css(browser, "#disconnect-reason").send_keys("maintenance")
    css(browser, '[data-testid="disconnect-button"]').click()
    wait(browser).until(present('[data-testid="disconnect-result"][data-sessions="1"]'))
    assert alice.wait_for_close() == (4403, "maintenance")
    wait(browser).until(present('[data-testid="user-status"][data-status="loggedOut"]'))
    wait(browser).until(absent(alice_row))

    # Nothing went wrong in the page (the refused key's 401 was the first test's).
    errors = [entry for entry in browser.get_log("browser")
              if entry.get("level") == "SEVERE" and "401 (Unauthorized)" not in entry.get("message", "")]
    assert errors == [], errors
    for client in [bob, carol, *watchers]:
        client.close()
