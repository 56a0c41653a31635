"""pytest entry point of hil (registered through `pytest11`): options and markers at once,
everything else when the run first uses hil.

Installing hil must not make every pytest run in that environment import torch and
executorch. So this module is light, and hil becomes active (hil.plugin.active) only when
    - a hil option is given on the command line or in the ini file (--target, --hil-*),
    - a conftest imported hil's library before the run was configured,
    - a collected test carries @pytest.mark.hil_cases or asks for a hil fixture, or
    - (an xdist controller) a worker reports a hil record.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from hil.plugin.fixtures import (
    hil_artifact,
    hil_case,
    hil_check,
    hil_session,
    hil_target,
    hil_variant,
)
from hil.plugin.options import OPT_IN_TAGS, add_options, hil_options_given
from hil.plugin.state import RECORD_KEY, SESSION_KEY, STATE
from hil.plugin.tests_seen import register as watch_tests

if TYPE_CHECKING:
    from hil.plugin.state import HilState

__all__ = ["hil_artifact", "hil_case", "hil_check", "hil_session", "hil_target", "hil_variant"]

MARKERS = (
    "hil_not_applicable: set by hil on a test none of whose cases applies to the run's targets "
    "(deselected)",
    "hil_cases(cases): run the test once per case x target x recipe; cases is an iterable of "
    "hil.Case or a mapping of id -> hil.Case",
    "hil_targets(*names): restrict the test to these targets",
    "hil_recipes(*names): restrict the test to these recipes",
    *(f"{tag}: hil case tag, run only with {flag}" for tag, flag in OPT_IN_TAGS.items()),
)
HIL_FIXTURES = frozenset(__all__)
LIBRARY_MODULES = ("hil.api", "hil.case", "hil.session")  # a conftest that imported these uses hil


def state_of(config: pytest.Config) -> HilState:
    """hil's state in this run, activating hil first if it is not yet active."""
    state = config.stash.get(STATE, None)
    if state is None:
        from hil.plugin.active import activate

        state = activate(config)
    return state


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from hil.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    watch_tests(config)  # before hil starts: run.json lists every collected and ended test
    if hil_options_given(config) or any(name in sys.modules for name in LIBRARY_MODULES):
        state_of(config)
    else:
        config.pluginmanager.register(Dormant(config), "hil-dormant")


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[SESSION_KEY] = session


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marked = metafunc.definition.get_closest_marker("hil_cases") is not None
    if marked or HIL_FIXTURES & set(metafunc.fixturenames):
        state = state_of(metafunc.config)
        if "hil_variant" in metafunc.fixturenames:
            from hil.plugin.active import parametrize

            parametrize(state, metafunc)


class Dormant:
    """Waits, in a run not yet using hil, for a worker's hil record (an xdist controller
    collects nothing, so it meets no hil test): hil starts then, and the hooks that keep
    records get that first report too."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.config.stash.get(STATE, None) is not None:
            return
        if any(name == RECORD_KEY for name, _ in report.user_properties):
            manager = self.config.pluginmanager
            before = manager.get_plugins()
            state_of(self.config)
            manager.subset_hook_caller("pytest_runtest_logreport", before)(report=report)
