"""Fixtures: the session, the current variant's target, and `hil_check` that runs the case."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from hil.errors import HilError, TargetUnavailable
from hil.plugin.state import RECORD_KEY, Variant, state_in

if TYPE_CHECKING:  # imported when a fixture runs: the plugin's entry stays light
    from hil.artifacts.store import Artifact
    from hil.session import Session
    from hil.targets import Target
    from hil.verdict.result import CheckResult


@pytest.fixture(scope="session")
def hil_session(pytestconfig: pytest.Config) -> Session:
    """The run's hil Session: one provisioned instance per target, one artifact cache."""
    return state_in(pytestconfig).session


@pytest.fixture
def hil_variant(request: pytest.FixtureRequest) -> Variant:
    """The (case, target, recipe) of this test; set by @pytest.mark.hil_cases."""
    variant = getattr(request, "param", None)
    if not isinstance(variant, Variant):
        raise pytest.UsageError(
            f"{request.node.nodeid} uses hil fixtures but has no @pytest.mark.hil_cases(TABLE)"
        )
    return variant


@pytest.fixture
def hil_case(hil_variant: Variant) -> Any:
    return hil_variant.case


@pytest.fixture
def hil_target(
    request: pytest.FixtureRequest, hil_variant: Variant, hil_session: Session
) -> Target:
    """The provisioned target. Unavailable here: skipped with the fix (an error under
    --hil-require). Broken earlier in this run: skipped with the first cause."""
    name = hil_variant.target
    earlier = hil_session.broken_cause(name)
    try:
        return hil_session.target(name)
    except TargetUnavailable as e:
        if state_in(request.config).options.require:
            pytest.fail(f"target {name} is required but unavailable: {e}", pytrace=False)
        pytest.skip(f"target {name} unavailable: {e}")
    except HilError as e:
        if earlier is not None:
            pytest.skip(f"target {name} is out of service since an earlier failure: {earlier}")
        _report_error(request, hil_variant, e)
        raise


@pytest.fixture
def hil_artifact(hil_variant: Variant, hil_session: Session) -> Artifact:
    """The compiled .pte of this variant (exported now or taken from the cache), made as its
    check makes it: the session resolves the recipe (with the shared quantized store)."""
    return hil_session.export(hil_variant.case, hil_variant.target, hil_variant.recipe)


@pytest.fixture
def hil_check(
    request: pytest.FixtureRequest, hil_variant: Variant, hil_target: Target, hil_session: Session
) -> Callable[[], CheckResult]:
    """Call it to export, deploy, run and judge this variant; it raises on a failed verdict."""

    hook = request.config.hook

    def check() -> CheckResult:
        try:
            result = hil_session.check(hil_variant.case, hil_variant.target, hil_variant.recipe)
        except HilError as e:
            _report_error(request, hil_variant, e)
            raise
        record = result.to_record()
        request.node.user_properties.append((RECORD_KEY, record))
        hook.pytest_hil_result(item=request.node, result=result, record=record)
        # NOT JUDGED is the outcome hook's to report (a skip, or a failure under --hil-require)
        result.raise_for_failures(allow_not_judged=True)
        return result

    return check


def _report_error(request: pytest.FixtureRequest, variant: Variant, error: HilError) -> None:
    """The error's record on the test, and the hil_error hook (allure, lab summary)."""
    from hil.plugin.records import error_record

    record = error_record(variant, error)
    request.node.user_properties.append((RECORD_KEY, record))
    request.config.hook.pytest_hil_error(item=request.node, record=record, error=error)
