"""allure-pytest integration, registered only when allure is on (`--alluredir`).

Every hil test gets labels (target, backend, suite, operator or model), readable parameters and,
once its check ran, attachments: error metrics, outputs against the reference, latency against
the budget, the device log, the partition report and Vela summary, and the .pte hash. At the end
the run's tool versions go to environment.properties and categories.json separates
infrastructure errors from test failures.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import allure
import numpy as np
import pytest
from allure_commons.types import AttachmentType

from hil.plugin.report_hooks import RUN_KEY
from hil.plugin.state import Variant
from hil.report import allure_files, fmt
from hil.report.rows import suite_of
from hil.verdict.checks import Question
from hil.verdict.result import CheckResult

log = logging.getLogger("hil.plugin.allure")

# allure's dynamic API is untyped; reached through Any so the rest of this module stays checked.
DYNAMIC: Any = allure.dynamic


def _variant(item: pytest.Item) -> Variant | None:
    callspec = getattr(item, "callspec", None)
    variant = callspec.params.get("hil_variant") if callspec else None
    return variant if isinstance(variant, Variant) else None


def _target_reference(result: CheckResult) -> tuple[bool, float | None]:
    """Whether output 0 was judged against the quantized model, and its limit on |error|."""
    for check in result.of(Question.TARGET, Question.LOWERING):
        if check.subject != "output 0":
            continue
        limits = {lim.metric: lim.value for lim in check.limits}
        step = check.observed.get("step")
        if "max_steps" in limits and isinstance(step, float):
            return True, limits["max_steps"] * step
        return check.reference.startswith("the quantized"), limits.get("max_abs")
    return False, None


def _json(name: str, data: Any) -> None:
    allure.attach(
        json.dumps(data, indent=2, sort_keys=True, default=str), name, AttachmentType.JSON
    )


def _png(name: str, figure: Any) -> None:
    from hil.report import plots

    allure.attach(plots.render(figure, "png"), name, AttachmentType.PNG)


def _kind_label(suite: str | None) -> str:
    """The label naming what a case is: an operator, a model, or (elsewhere) a case."""
    for kind in ("operator", "model"):
        if suite and kind in suite:
            return kind
    return "case"


class AllureHooks:
    """Per-test labels, parameters and attachments."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Labels first, so a test skipped or broken in setup is still filed under its target."""
        variant = _variant(item)
        if variant is None:
            return
        suite = suite_of(item.nodeid) or "hil"
        DYNAMIC.label("target", variant.target)
        DYNAMIC.label("backend", variant.recipe)
        DYNAMIC.label(_kind_label(suite), variant.case_id)
        DYNAMIC.parent_suite(variant.target)
        DYNAMIC.suite(suite)
        DYNAMIC.sub_suite(variant.recipe)
        DYNAMIC.feature(suite)
        DYNAMIC.story(variant.case_id)
        DYNAMIC.tag(variant.target, variant.recipe)
        # replaces allure's repr of the Variant (which holds function addresses) and keeps it
        # out of the history id, so a case keeps its history from one run to the next
        DYNAMIC.parameter("hil_variant", variant.id, excluded=True)
        DYNAMIC.parameter("case", variant.case_id)
        DYNAMIC.parameter("target", variant.target)
        DYNAMIC.parameter("backend", variant.recipe)

    def pytest_hil_result(
        self, item: pytest.Item, result: CheckResult, record: dict[str, Any]
    ) -> None:
        # shown, but kept out of the history id: a case's history is its case, target and backend
        DYNAMIC.parameter("numerics", result.numerics, excluded=True)
        DYNAMIC.label("verdict", result.verdict)
        try:
            self._attach_result(result, record)
        except Exception:  # an attachment must never change a verdict
            log.exception("allure attachments for %s failed", item.nodeid)

    def _attach_result(self, result: CheckResult, record: Mapping[str, Any]) -> None:
        from hil.report import plots  # matplotlib only once a check has something to plot

        _json(
            "verdict checks",
            {
                "verdict": record["verdict"],
                "failure": record.get("failure"),
                "not_judged": record.get("not_judged"),
                "checks": record.get("checks"),
                "metrics against eager": record.get("metrics"),
                "quantized_agreement": record.get("quantized_agreement"),
            },
        )
        title = f"{result.case} on {result.target} [{result.recipe}]"
        if result.arrays_path.is_file():
            quantized, max_abs = _target_reference(result)
            group = "quantized_reference" if quantized else "reference"
            with np.load(result.arrays_path) as data:
                names = sorted(data.files)
                reference = [data[k] for k in names if k.startswith(group)]
                outputs = [data[k] for k in names if k.startswith("output")]
            if reference:
                against = "the quantized model" if quantized else "eager"
                _png(
                    f"outputs vs {against}",
                    plots.outputs_vs_reference(reference, outputs, title=title, max_abs=max_abs),
                )
        if record.get("latency"):
            _png(
                f"latency vs budget ({fmt.timing_label(record['latency'].get('timing'))})",
                plots.latency_against_budget(
                    record["latency"],
                    title=title,
                    budget=record.get("budget"),
                    eager=record.get("eager_latency"),
                ),
            )
            _json(
                "latency",
                {
                    k: record.get(k)
                    for k in ("latency", "eager_latency", "budget", "budget_breaches")
                },
            )
        if result.counters:
            _json("device counters", dict(result.counters))
        if result.log:
            allure.attach(result.log, "device log", AttachmentType.TEXT)
        details = dict(result.artifact.details)
        if details.get("partition"):
            _json("partition report", details["partition"])
        if details.get("vela"):
            _json("Vela summary", {"total": details["vela"], "delegates": details.get("delegates")})
        artifact = record["artifact"]
        allure.attach(
            f"sha256 {artifact['sha256']}\nsize {artifact['size']} bytes\n"
            f"path {artifact['path']}\n",
            ".pte sha256",
            AttachmentType.TEXT,
        )

    def pytest_hil_error(self, item: pytest.Item, record: dict[str, Any], error: Exception) -> None:
        DYNAMIC.label("verdict", str(record.get("verdict")))
        allure.attach(
            str(error), f"{record.get('verdict', 'error')}: what happened", AttachmentType.TEXT
        )
        log_tail = getattr(error, "log_tail", "")
        if log_tail:
            allure.attach(str(log_tail), "device log (tail)", AttachmentType.TEXT)


class AllureRunFiles:
    """environment.properties and categories.json, once per run, after run.json is final."""

    def __init__(self, config: pytest.Config, alluredir: Path) -> None:
        self.config = config
        self.alluredir = alluredir

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        run = self.config.stash.get(RUN_KEY, None)
        allure_files.write(self.alluredir, [run] if run else [])


def register(config: pytest.Config) -> None:
    """Only with allure on. The run-level files come from the controlling process only: xdist
    workers attach per test through allure's own listener."""
    alluredir = config.getoption("allure_report_dir", None)
    if not alluredir:
        return
    config.pluginmanager.register(AllureHooks(), "hil-allure")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(AllureRunFiles(config, Path(alluredir)), "hil-allure-files")
