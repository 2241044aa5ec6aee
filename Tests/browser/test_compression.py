"""`http.permessageDeflate` with a real browser: Chromium offers permessage-deflate on every
WebSocket; with the option on, the broker accepts it and the demo works over compressed
frames (two sessions see each other join); with it off (default) nothing is negotiated.
Run with `make test-browser` (or `python3 -m pytest Tests/browser/test_compression.py`).
Shares the broker and browser helpers of test_demo.py.
"""

import pytest

from test_demo import ROOT, _browser, join, log_in, member, present, running_broker, wait

STATIC_DIR = str(ROOT / "examples" / "web")

# Opens one more WebSocket from the page and reports the extensions the broker accepted.
NEGOTIATED_EXTENSIONS = """
const done = arguments[arguments.length - 1];
const socket = new WebSocket(location.origin.replace(/^http/, "ws") + "/v1");
socket.onopen = () => { done(socket.extensions); socket.close(); };
socket.onerror = () => done("error");
"""


@pytest.fixture
def two_browsers():
    drivers = []
    try:
        drivers.append(_browser())
        drivers.append(_browser())
        yield drivers
    finally:
        for driver in drivers:
            driver.quit()


def test_chromium_negotiates_deflate_and_the_demo_works_compressed(two_browsers):
    alice, bob = two_browsers
    with running_broker(http={"staticDir": STATIC_DIR, "permessageDeflate": True}) as url:
        log_in(alice, url, "alice", "web")
        log_in(bob, url, "bob", "macos")
        assert "permessage-deflate" in alice.execute_async_script(NEGOTIATED_EXTENSIONS)
        join(alice, "room:deflate")
        join(bob, "room:deflate")
        wait(alice).until(present(member("bob")))
        wait(bob).until(present(member("alice")))


def test_off_by_default_nothing_is_negotiated(two_browsers):
    with running_broker() as url:
        alice = two_browsers[0]
        log_in(alice, url, "alice", "web")
        assert alice.execute_async_script(NEGOTIATED_EXTENSIONS) == ""
