"""pytest integration: `pytest -p permcheck.pytest_plugin` (registered as the `permcheck` plugin when the
package is installed by pip).

    --permcheck-reports DIR   keep the report of every failing audit in DIR/<test>/ (the assertion message
                              names that path)

Each audit a test runs adds its verdict line to a "permcheck audits" section of pytest's terminal summary.
"""

import os
import re
import shutil

import pytest

from permcheck import _audit

_state = {"test": None, "lines": [], "reports": None, "counts": {}}


def pytest_addoption(parser):
    group = parser.getgroup("permcheck")
    group.addoption("--permcheck-reports", metavar="DIR", default=None,
                    help="keep the report of every failing permcheck audit in DIR/<test name>/")


def pytest_configure(config):
    directory = config.getoption("permcheck_reports")
    _state["reports"] = os.path.abspath(directory) if directory else None
    if _on_result not in _audit._listeners:
        _audit._listeners.append(_on_result)
        _audit._report_directories.append(_report_directory)


def pytest_unconfigure(config):
    if _on_result in _audit._listeners:
        _audit._listeners.remove(_on_result)
        _audit._report_directories.remove(_report_directory)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _state["test"] = item.nodeid
    try:
        yield
    finally:
        _state["test"] = None


def _kept_name(nodeid):
    """A directory name for a test's report: its node id with what a file name cannot hold replaced."""
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", nodeid).strip("_") or "audit"
    count = _state["counts"][name] = _state["counts"].get(name, 0) + 1
    return name if count == 1 else "%s-%d" % (name, count)


def _report_directory(layer_name):
    """Where an audit without a report of its own writes it: DIR/<test>/, removed again when it holds."""
    if not _state["reports"]:
        return None
    target = os.path.join(_state["reports"], _kept_name(_state["test"] or "outside-a-test"))
    shutil.rmtree(target, ignore_errors=True)  # a report of an earlier run of this test
    return target


def _on_result(result):
    test = _state["test"] or "(outside a test)"
    line = "%s: %s" % (test, result.summary)
    if not result.holds and result.report:
        line += " [report: %s]" % result.report
    _state["lines"].append(line)


def pytest_terminal_summary(terminalreporter):
    if not _state["lines"]:
        return
    terminalreporter.section("permcheck audits")
    for line in _state["lines"]:
        terminalreporter.write_line(line)
