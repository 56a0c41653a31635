"""A pytest plugin that runs ExecuTorch's own Arm operator tests through hil.check.

ExecuTorch's tests (backends/arm/test/ops/test_*.py in the wheel) build a
`TosaPipelineINT(module, inputs, ...)` and call `run()`. With this plugin loaded (`-p
et_hil_plugin`, bench/ on the path, hil's own plugin off), each test module's TosaPipelineINT
is replaced by HilPipeline, which hands the same module and inputs to `hil.check` on the target
named by HIL_ET_TARGET (default u85-ref) and raises on a failed verdict. Their quantization
options map onto the ethos-u recipe's: `per_channel_quantization` and 16-bit activations
(`tosa_extensions=["int16"]`, or an a16w8 config set on `pipeline.quantizer`), each through a
variant of the target's device file. Their stage edits (pop_stage, change_args, count_tosa_ops,
...) check the lowering's operators, which hil does not re-check: they are accepted and ignored.

Each test's random inputs are drawn under a fixed seed, so a warm run finds its artifacts.

A cold run uses every core as hil's own plugin does: before the first test, each test body runs
once up to its pipeline's `run()`, which only notes the module and inputs it was given; those
cases' exports start in hil's worker processes (Session.export_ahead), and each test then runs
as usual, its check waiting only for its own artifact. The look-ahead builds the module again in
the test, so the check judges the module the test made; the artifact is the one made ahead when
the two fingerprint alike (the worker logs in HIL_RESULTS_DIR/export-workers say which). A
test the cache already knows by name is not looked ahead, so a warm run pays nothing for it.
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

import hil
from hil.case import Case, case_from_module
from hil.devices import DeviceRegistry
from hil.session import Session

REPO = Path(__file__).resolve().parent.parent
SESSION = pytest.StashKey[Session]()
DEVICES = pytest.StashKey[Path]()  # the variants' device files, removed at the end
_current: dict[str, Any] = {}  # the running test's node id and config (one test at a time)
_looked_ahead: list[tuple[Case, str, str | None]] = []  # filled while the look-ahead runs


class _Noted(Exception):
    """Ends a test body in the look-ahead once its pipeline's run() has noted the case."""


def _variants(target: str, folder: Path) -> DeviceRegistry:
    """The target and its per-tensor / a16w8 variants (TARGET, TARGET-pt, -a16w8, -a16w8-pt)."""
    base = yaml.safe_load((REPO / "devices" / f"{target}.yaml").read_text())
    for a16w8 in (False, True):
        for per_channel in (True, False):
            name = target + ("-a16w8" if a16w8 else "") + ("" if per_channel else "-pt")
            spec = {**base, "name": name}
            spec["recipes"] = [
                {
                    **r,
                    "options": {**r.get("options", {}), "a16w8": a16w8, "per_channel": per_channel},
                }
                for r in base["recipes"]
            ]
            (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    return DeviceRegistry.from_dirs([folder])


class _Ignored:
    """Their pipeline's stage edits and tester: any attribute, any call, nothing done."""

    def __getattr__(self, name: str) -> _Ignored:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _Ignored:
        return self


class _Quantizer:
    """Stands in for `pipeline.quantizer`: notes whether its config has 16-bit activations."""

    def __init__(self, pipeline: HilPipeline) -> None:
        self._pipeline = pipeline

    def set_global(self, config: Any) -> _Quantizer:
        activation = getattr(config, "input_activation", None)
        if getattr(activation, "dtype", None) == torch.int16:
            self._pipeline.a16w8 = True
        return self

    def __getattr__(self, name: str) -> Any:
        return _Ignored()


class HilPipeline:
    """TosaPipelineINT's constructor and run(), answered by hil.check."""

    def __class_getitem__(cls, _item: Any) -> type[HilPipeline]:
        return cls

    def __init__(
        self,
        module: torch.nn.Module,
        test_data: Any,
        *_ops: Any,
        per_channel_quantization: bool = True,
        tosa_extensions: list[str] | None = None,
        **_options: Any,
    ) -> None:
        self.module = module
        self.inputs = test_data if isinstance(test_data, tuple) else (test_data,)
        self.per_channel = per_channel_quantization
        self.a16w8 = "int16" in (tosa_extensions or [])
        self.quantizer = _Quantizer(self)

    def __getattr__(self, name: str) -> Any:
        return _Ignored()  # their stage edits: accepted, not re-checked

    def run(self) -> None:
        config: pytest.Config = _current["config"]
        target = os.environ.get("HIL_ET_TARGET", "u85-ref")
        name = target + ("-a16w8" if self.a16w8 else "") + ("" if self.per_channel else "-pt")
        if _current.get("looking_ahead"):
            _looked_ahead.append(
                (case_from_module(_current["nodeid"], self.module, self.inputs), name, None)
            )
            raise _Noted
        result = hil.check(
            self.module,
            self.inputs,
            target=name,
            name=_current["nodeid"],
            session=config.stash[SESSION],
        )
        result.raise_for_failures()
        if result.verdict == "NOT JUDGED":
            pytest.skip(result.not_judged_message() or "NOT JUDGED")


def pytest_configure(config: pytest.Config) -> None:
    folder = Path(tempfile.mkdtemp(prefix="hil-et-devices-"))
    target = os.environ.get("HIL_ET_TARGET", "u85-ref")
    config.stash[SESSION] = Session(devices=_variants(target, folder))
    config.stash[DEVICES] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None:
        session.close()
    if DEVICES in config.stash:
        shutil.rmtree(config.stash[DEVICES], ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "TosaPipelineINT"):
            module.TosaPipelineINT = HilPipeline


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """The look-ahead (module docstring), then pytest's own loop runs the tests. A test whose
    name the cache knows under any variant is not looked ahead (a warm run looks at none)."""
    _looked_ahead.clear()
    hil_session = session.config.stash[SESSION]
    variants = hil_session.devices.names
    for item in session.items:
        if not any(hil_session.probably_cached(item.nodeid, v) for v in variants):
            _look_ahead(item)
    _current.clear()
    hil_session.export_ahead(_looked_ahead)


def _look_ahead(item: pytest.Item) -> None:
    """Run `item`'s body up to its pipeline's run(), seeded as the test will be. A test that
    needs a fixture, or whose body fails before run(), is left out: its check exports itself."""
    function = getattr(item, "obj", None)
    params = getattr(getattr(item, "callspec", None), "params", {})
    if function is None or not hasattr(getattr(item, "module", None), "TosaPipelineINT"):
        return
    wanted = inspect.signature(function).parameters
    if any(name not in params for name in wanted):
        return
    _current.update(nodeid=item.nodeid, config=item.config, looking_ahead=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            function(**{name: params[name] for name in wanted})
        except _Noted:
            pass
        except (Exception, pytest.skip.Exception, pytest.fail.Exception):
            pass  # the test itself reports it when it runs


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    _current.update(nodeid=item.nodeid, config=item.config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # their factories call randn: the same inputs in every run
        return (yield)
