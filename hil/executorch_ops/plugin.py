"""The pytest hooks of `-p hil.executorch_ops`: pytest glue only.

collection   each test that builds one of their pipelines is parametrized over the run's
             --target values that answer it (hil.executorch_ops.mapping), or gets one
             parameter that skips naming why none does; their "no FVP" xfails are taken
             off (hil runs those cases) and their other expected failures noted, not
             applied, so hil's verdict stands on its own and the difference is listed
look-ahead   before the first test, every test body runs up to its pipeline's run(),
             which only notes the export; the exports start on every core
call         the test module's pipeline names are bound to hil's stand-ins for the call; a
             test that reads what the stand-ins do not keep (TheirSurface) runs again as
             their own test, the reason counted (OWN_TEST)
summary      hil's verdict beside what ExecuTorch's own rule says of the same outputs
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Generator, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
import torch

from hil.errors import HilError
from hil.executorch_ops import mapping, stages
from hil.executorch_ops.calls import TheirSurface
from hil.executorch_ops.pipelines import STAND_INS, bind
from hil.executorch_ops.runner import EXTRA, THEIR_PROGRAM, CaseRunner, Choice
from hil.plugin.state import RECORD_KEY, HilState

PARAM = "hil_executorch_target"
SKIPS = ("skip", "skipif", "xfail")
THEIR_XFAIL = pytest.StashKey[str]()
OWN_TEST = "hil_executorch_own_test"  # user property: why hil ran the case as their own test
# user property: the test's own assertion about the Arm lowering, on a target that lowers
# for another backend (not applicable there: the case is judged for its outputs)
ARM_ONLY = "hil_executorch_arm_only"
NEVER_RAN = (
    "{node} built no pipeline hil answers, or never called its run(): nothing was "
    "judged, so it cannot pass"
)


def _state(config: pytest.Config) -> HilState:
    from hil.plugin import state_of

    return state_of(config)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("hil").addoption(
        "--hil-their-program",
        action="store_true",
        dest=THEIR_PROGRAM,
        help="build every program their own pipeline can build for the target (TosaPipelineFP "
        "on tosa-fp-ref) with it, not only those the test edits beyond hil's recipe; each "
        "record then carries their serialize stage's .pte digest (executorch.their_pte_sha256)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """hil is in use from the start (its --target values, default host, say where)."""
    _state(config)


def _names_used(function: Any) -> tuple[set[str], dict[str, Any]]:
    """The global names a test function uses, with those of the helpers of its own module it
    calls (one level), and the module's globals: read from the code, not run."""
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None:
        return set(), {}
    scope = getattr(function, "__globals__", {})
    names = set(code.co_names)
    for name in code.co_names:
        helper = scope.get(name)
        if inspect.isfunction(helper) and helper.__module__ == function.__module__:
            names |= set(helper.__code__.co_names)
    return names, scope


def pipelines_of(function: Any) -> set[str]:
    """Their pipeline classes hil stands in for that a test builds, itself or in a helper."""
    return _names_used(function)[0] & set(STAND_INS)


def unanswered_pipelines(function: Any) -> set[str]:
    """Their pipeline classes hil does not stand in for (their MXFP ones) that a test builds,
    itself or in a helper of its module: its rows would pass on their harness's checks alone,
    which is not hil's verdict, so they are skipped by name."""
    import sys

    harness = sys.modules.get("executorch.backends.arm.test.tester.test_pipeline")
    base = getattr(harness, "BasePipeline", None)
    names, scope = _names_used(function)
    if base is None:
        return set()
    return {
        n
        for n in names - set(STAND_INS)
        if inspect.isclass(scope.get(n)) and issubclass(scope[n], base)
    }


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    used = pipelines_of(metafunc.function)
    if not used:
        _skip_unanswered(metafunc)
        return
    state = _state(metafunc.config)
    targets = list(state.options.targets)
    choices: list[Choice] = []
    for target in targets:
        spec = state.registry.get(target)
        for recipe in dict.fromkeys(r for p in sorted(used) for r in mapping.recipes_for(p, spec)):
            choices.append(Choice(target, recipe))
    if not choices:
        reason = "; ".join(mapping.fit_reason(p, targets) for p in sorted(used))
        choices.append(Choice("+".join(targets), None, reason))
    metafunc.fixturenames.append(PARAM)
    metafunc.parametrize(PARAM, choices, ids=[c.id for c in choices])


def _skip_unanswered(metafunc: pytest.Metafunc) -> None:
    unanswered = unanswered_pipelines(metafunc.function)
    if not unanswered:
        return  # no pipeline at all: their own test (an eager-only check, a pass's unit test)
    targets = "+".join(_state(metafunc.config).options.targets)
    generic = "a pipeline of theirs hil does not stand in for: its rows are not judged by hil"
    reason = "; ".join(f"{p}: {mapping.NOT_ANSWERED.get(p, generic)}" for p in sorted(unanswered))
    choice = Choice(targets, None, reason)
    metafunc.fixturenames.append(PARAM)
    metafunc.parametrize(PARAM, [choice], ids=[choice.id])


def _their_tool_skips() -> list[Any]:
    """Their skips for a tool hil brings itself: the ML SDK's model-converter, which their
    `SkipIfNoModelConverter` looks for on PATH when their module is imported (hil's VGF recipes
    find it in hil's venv)."""
    import sys

    common = sys.modules.get("executorch.backends.arm.test.common")
    mark = getattr(getattr(common, "SkipIfNoModelConverter", None), "mark", None)
    return [mark] if mark is not None else []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Their xfails are for their harness: the FVP ones (raises FileNotFoundError) do not
    apply, since hil runs those cases; the others are kept as a note beside hil's verdict and
    excuse only their own stage assertions failing (runner.CaseRunner), never hil's verdict.
    Their skip for a missing model-converter does not apply either: hil brings one."""
    tool_skips = _their_tool_skips()
    for item in items:
        choice = _choice(item)
        if choice is None:
            continue
        if choice.recipe is None:  # no target answers it: said by hil, before their skips
            item.own_markers[:] = [m for m in item.own_markers if m.name not in SKIPS]
            item.add_marker(pytest.mark.skip(reason=choice.reason), append=False)
            continue
        kept, reasons = [], []
        for mark in getattr(item, "own_markers", []):
            if mark in tool_skips:
                continue
            if mark.name == "xfail":
                raises = mark.kwargs.get("raises")
                if raises is not FileNotFoundError:
                    reasons.append(str(mark.kwargs.get("reason") or (mark.args[1:2] or [""])[0]))
                continue
            kept.append(mark)
        item.own_markers[:] = kept
        if reasons:
            item.stash[THEIR_XFAIL] = "; ".join(r for r in reasons if r) or "xfail"


def _choice(item: pytest.Item) -> Choice | None:
    callspec = getattr(item, "callspec", None)
    choice = callspec.params.get(PARAM) if callspec is not None else None
    return choice if isinstance(choice, Choice) else None


def case_name(item: pytest.Item, choice: Choice) -> str:
    """Their test's own name and parameters (not the target, which the record names)."""
    callspec = getattr(item, "callspec", None)
    ids = callspec.id if callspec is not None else ""
    for edge in (f"-{choice.id}", f"{choice.id}-", choice.id):
        if ids.endswith(edge) or ids.startswith(edge):
            ids = ids[: -len(edge)] if ids.endswith(edge) else ids[len(edge) :]
            break
    function = getattr(item, "originalname", item.name)
    return f"{Path(str(item.path)).stem}::{function}" + (f"[{ids}]" if ids else "")


def _runner(item: pytest.Item, choice: Choice, noting: list[Any] | None = None) -> CaseRunner:
    return CaseRunner(
        item,
        _state(item.config),
        choice,
        case_name(item, choice),
        item.stash.get(THEIR_XFAIL, None),
        noting,
    )


@contextmanager
def _stand_ins(item: pytest.Item, runner: CaseRunner) -> Iterator[None]:
    """The test module's pipeline names bound to hil's stand-ins, for this one call."""
    module = getattr(item, "module", None)
    saved = {n: getattr(module, n) for n in STAND_INS if hasattr(module, n)}
    try:
        for name in saved:
            setattr(module, name, bind(name, runner, saved[name]))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)  # their factories call randn: the same inputs in every run
            yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    choice = _choice(item)
    if choice is None:
        return (yield)
    runner = _runner(item, choice)
    surface: TheirSurface | None = None
    with _stand_ins(item, runner):
        try:
            outcome = yield
        except TheirSurface as needed:
            surface = needed
        except (Exception, pytest.fail.Exception) as error:
            if _arm_expectation_elsewhere(item, error):
                return None
            if isinstance(error, Exception):
                _their_own_error(item, error)
            raise
    if surface is not None:
        return _as_their_own_test(item, surface)
    if not _judged(item):
        pytest.fail(NEVER_RAN.format(node=item.nodeid), pytrace=False)
    return outcome


def _as_their_own_test(item: pytest.Item, surface: TheirSurface) -> None:
    """The test again, with their pipeline classes and their harness's run and verdict: it
    reads a part of their harness hil does not stand in for. The reason is kept on the item
    (OWN_TEST) and counted in the summary; a verdict hil gave before stays recorded."""
    item.user_properties.append((OWN_TEST, surface.message))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        item.runtest()


def _arm_expectation_elsewhere(item: pytest.Item, error: BaseException) -> bool:
    """The test's own assertion after hil judged its outputs on a host target (XNNPACK,
    portable): `assert check.has_rejected_node()`, or `pytest.raises` around run() expecting
    an Arm stage check to fail ("DID NOT RAISE"). It is about the Arm lowering, which that
    target does not make: not applicable, named in each record of the test (stage_assertions)
    and counted (ARM_ONLY), the case judged for its outputs alone. Only where every check the
    test made lowered for another backend and passed, and the test had Arm assertions there:
    a failure of hil's own, or on an Arm lowering, stays the failure it is."""
    if isinstance(error, HilError):
        return False
    records = [r for k, r in item.user_properties if k == RECORD_KEY and isinstance(r, dict)]
    extras = [r.get(EXTRA) for r in records]
    if not records or any(
        not isinstance(e, dict) or e.get("arm_lowering") is not False for e in extras
    ):
        return False
    if any(r.get("verdict") != "PASS" for r in records):
        return False
    arm_only = [
        a
        for e in extras
        if isinstance(e, dict)
        for a in e.get("stage_assertions", ())
        if a.get("status") == stages.NOT_APPLICABLE
    ]
    if not arm_only:
        return False
    said = (str(error).splitlines() or [type(error).__name__])[0]
    note = (
        f"the test's own assertion after run() ({type(error).__name__}: {said}) is about the "
        "Arm lowering, which this target does not make: judged for its outputs only"
    )
    for extra in extras:
        assert isinstance(extra, dict)
        extra.setdefault("stage_assertions", []).append(
            {
                "check": "the test's own assertion",
                "after": "run",
                "expected": None,
                "status": stages.NOT_APPLICABLE,
                "found": said,
                "note": note,
            }
        )
    item.user_properties.append((ARM_ONLY, said))
    return True


def _judged(item: pytest.Item) -> bool:
    return any(k == RECORD_KEY for k, _ in item.user_properties)


def _their_own_error(item: pytest.Item, error: Exception) -> None:
    """Their test's own code failed before any pipeline ran (ExecuTorch 1.4 and 1.5's
    `test_tril_u55_INT_not_supported` reads an attribute its module does not have): where they
    expect the test to fail, that is their expected failure, as in their harness. hil judged
    nothing, so nothing of hil's is excused; without their xfail it stays a failure."""
    reason = item.stash.get(THEIR_XFAIL, None)
    if reason is None or _judged(item) or isinstance(error, HilError):
        return
    first = (str(error).splitlines() or [""])[0]
    pytest.xfail(
        f"ExecuTorch expects it ({reason}): their test raised {type(error).__name__}: {first} "
        "before any pipeline ran (hil judged nothing)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Each test body once with pipelines whose run() only notes the export; then hil's
    workers build them on every core while the tests run in order. A test the cache knows by
    name is not looked at (a warm run looks at none)."""
    if session.config.option.collectonly or getattr(session.config, "workerinput", None):
        return
    state = _state(session.config)
    noted: list[Any] = []
    for item in session.items:
        choice = _choice(item)
        if choice is None or choice.recipe is None:
            continue
        if state.session.probably_cached(case_name(item, choice), choice.target, choice.recipe):
            continue
        _look_ahead(item, _runner(item, choice, noting=noted))
    if noted:
        state.session.export_ahead(noted, state.options.export_workers)


def _look_ahead(item: pytest.Item, runner: CaseRunner) -> None:
    """Run `item`'s body with the noting runner, to its end or its first error (a line that
    reads a result). A test that needs a fixture is left out: its checks export themselves."""
    function = getattr(item, "obj", None)
    params = dict(getattr(getattr(item, "callspec", None), "params", {}))
    if function is None:
        return
    wanted = inspect.signature(function).parameters
    if any(name not in params for name in wanted):
        return
    # what ends the body early, the test reports itself when it runs
    with (
        _stand_ins(item, runner),
        suppress(Exception, pytest.skip.Exception, pytest.fail.Exception),
    ):
        function(**{name: params[name] for name in wanted})


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    from hil.executorch_ops.summary import render

    lines = render(_state(config).records)
    own = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for key, value in getattr(report, "user_properties", ())
        if key == OWN_TEST
    ]
    if own:
        lines.append(f"run as their own test (their harness's verdict, not hil's): {len(own)}")
        for reason, count in sorted(Counter(own).items()):
            lines.append(f"  {count} x {reason}")
    arm_only = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for key, value in getattr(report, "user_properties", ())
        if key == ARM_ONLY
    ]
    if arm_only:
        lines.append(
            "the test's own assertions about the Arm lowering, not applicable where hil "
            f"lowered for another backend (judged for outputs only): {len(arm_only)}"
        )
        for said, count in sorted(Counter(arm_only).items()):
            lines.append(f"  {count} x {said}")
    if lines:
        terminalreporter.section("ExecuTorch's operator tests: hil's verdict beside theirs")
        for line in lines:
            terminalreporter.write_line(line)
