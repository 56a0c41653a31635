"""Which tests a pytest run collected, and which of them ended, as seen by the process that
writes the results folder (pytest's own, or xdist's controller: never a worker).

Registered with the plugin's entry, before hil is active: an xdist controller may start hil
only when a worker's first hil record arrives (hil.plugin.Dormant), after the workers reported
their collection and other tests ended, and run.json must still say all of it. Light on
purpose (no torch): every pytest run in an environment with hil installed carries it.
"""

from __future__ import annotations

import pytest

SEEN = pytest.StashKey["TestsSeen"]()


class TestsSeen:
    """`collected`: the node ids pytest kept after deselection, in collection order (None
    until collection finished); `ended`: each test whose teardown report arrived, in the order
    they arrived. A test that never reached its teardown (the run was stopped, killed, or its
    xdist worker crashed) is collected and not ended: its result is missing, not passed."""

    __test__ = False  # a class named Test*: not a test class for pytest

    def __init__(self) -> None:
        self.collected: list[str] | None = None
        self.ended: list[str] = []
        self._ended: set[str] = set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = [item.nodeid for item in session.items]

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        """xdist's controller collects nothing itself: each worker reports its collection
        (after deselection), and xdist refuses to run unless they agree, so the first is it."""
        if self.collected is None:
            self.collected = list(ids)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and report.nodeid not in self._ended:
            self._ended.add(report.nodeid)
            self.ended.append(report.nodeid)


def register(config: pytest.Config) -> None:
    """Watch the run's tests, in the process that writes results (not in an xdist worker)."""
    if hasattr(config, "workerinput") or config.stash.get(SEEN, None) is not None:
        return
    seen = config.stash[SEEN] = TestsSeen()
    config.pluginmanager.register(seen, "hil-tests-seen")


def seen_in(config: pytest.Config) -> TestsSeen:
    """The run's TestsSeen, registered now if the entry's configure did not (a run where hil
    was started by hand)."""
    register(config)
    return config.stash.get(SEEN, None) or TestsSeen()
