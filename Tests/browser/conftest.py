"""pytest hooks for the browser test: keep each phase's report on the test item so a
fixture can tell whether the test failed (and save screenshots)."""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
