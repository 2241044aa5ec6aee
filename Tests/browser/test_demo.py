"""Drives the browser demo (examples/web) in two headless Chromium sessions against the
real broker: both log in, join one channel, see each other, a state change, a custom
status and a leave. Run with `make test-browser` (or `python3 -m pytest Tests/browser`).

Needs Debian's `chromium` + `chromium-driver` and Selenium; `make browser-deps` installs
them. Saves screenshots to artifacts/ (demo.png: bob's view before alice leaves).
"""

import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
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


@pytest.fixture(scope="module")
def broker():
    """The real broker on a free port, in-memory storage, serving examples/web."""
    if not BROKER.exists():
        pytest.fail(f"{BROKER} is missing: run `swift build` first")
    workdir = tempfile.mkdtemp(prefix="rollcall-browser-")
    config_path = Path(workdir) / "config.json"
    config_path.write_text(json.dumps({
        "listen": {"host": "127.0.0.1"},
        "storage": {"path": None},
        "http": {"staticDir": str(ROOT / "examples" / "web")},
        "log": {"level": "warning"},
    }))
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


def log_in(driver, url, user, platform):
    driver.get(url)
    wait(driver).until(EC.element_to_be_clickable((By.ID, "login-button")))
    css(driver, "#login-user").send_keys(user)
    Select(css(driver, "#login-platform")).select_by_visible_text(platform)
    css(driver, "#login-button").click()
    wait(driver).until(EC.text_to_be_present_in_element_attribute(
        (By.ID, "connection-state"), "data-state", "online"))
    wait(driver).until(EC.visibility_of_element_located((By.ID, "workspace")))
    wait(driver).until(present(f'[data-testid="own-status-record"][data-user-id="{user}"][data-status="online"]'))


def join(driver, channel):
    field = css(driver, "#join-channel")
    field.clear()
    field.send_keys(channel)
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

    ARTIFACTS.mkdir(exist_ok=True)
    bob.save_screenshot(str(ARTIFACTS / "demo.png"))

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
