"""The plugin's per-run state, kept in the pytest config stash (never in module globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the plugin's entry stays free of torch until hil is used
    from hil.devices import DeviceRegistry
    from hil.plugin.options import HilOptions
    from hil.results.writer import ResultsFolder
    from hil.session import Session


@dataclass(frozen=True)
class Variant:
    """One parametrized combination: a case on a target with a recipe."""

    case_id: str
    case: Any  # hil.Case; Any keeps pytest's id machinery away from its fields
    target: str
    recipe: str

    @property
    def id(self) -> str:
        return f"{self.case_id}-{self.target}-{self.recipe}"

    def __repr__(self) -> str:  # stable across runs: reports key their history on it
        return self.id


@dataclass(frozen=True)
class HilState:
    options: HilOptions
    registry: DeviceRegistry
    session: Session
    # the run's results folder, written by the controlling process only (not xdist's workers)
    results: ResultsFolder
    records: list[dict[str, Any]] = field(default_factory=list)


STATE = pytest.StashKey[HilState]()  # set once hil is active in the run
SESSION_KEY = pytest.StashKey[pytest.Session]()  # the pytest session, once it has started
RECORD_KEY = "hil"  # name of the user_properties entry carrying a result record


def state_in(config: pytest.Config) -> HilState:
    """hil's state in an active run. A test that asks for a hil fixture activated hil when it
    was collected (hil.plugin), so a fixture always finds it."""
    state = config.stash.get(STATE, None)
    if state is None:
        raise pytest.UsageError(
            "hil is not active in this run: a hil fixture was requested outside a collected "
            "test's fixtures (request.getfixturevalue?); give --target to activate hil at start"
        )
    return state
