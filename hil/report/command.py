"""`hil report`: write the certification report from results folders, or verify a signed one."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from hil.paths import default_results_dir

DEFAULT_OUT = Path(".hil/report")


def add_parser(commands: Any) -> None:
    """Add the `report` subcommand to the `hil` command's subparsers."""
    report = commands.add_parser(
        "report",
        help="write the certification report (report.json + report.html), or --verify one",
        description="Merge the results of one or more runs (other targets, other machines) into "
        "one certification report; with --baseline, show what changed since an earlier one.",
    )
    report.add_argument(
        "--results",
        action="append",
        type=Path,
        metavar="DIR_OR_REPORT",
        help="a results folder (run.json + records.jsonl) or an earlier report.json; repeat to "
        "merge. Default: $HIL_RESULTS_DIR or .hil/results",
    )
    report.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})"
    )
    report.add_argument("--baseline", type=Path, help="an earlier report.json to compare with")
    report.add_argument(
        "--latency-threshold",
        type=float,
        default=None,
        metavar="FRACTION",
        help="relative change of a median latency that counts as moved (default 0.10)",
    )
    report.add_argument("--title", default=None, help="the report's title")
    report.add_argument(
        "--alluredir",
        type=Path,
        help="also write environment.properties and categories.json for the merged runs here",
    )
    report.add_argument(
        "--verify",
        type=Path,
        metavar="REPORT_JSON",
        help="check a report.json against its schema and its SHA-256 digest, write nothing",
    )
    report.set_defaults(run=run)


def _as_given(args: argparse.Namespace, results: list[Path]) -> list[str]:
    """The command line that wrote this report, as the report records it."""
    words = ["hil", "report", *(w for r in results for w in ("--results", str(r)))]
    words += ["--out", str(args.out)]
    if args.baseline:
        words += ["--baseline", str(args.baseline)]
    if args.latency_threshold is not None:
        words += ["--latency-threshold", str(args.latency_threshold)]
    return words


def run(args: argparse.Namespace) -> int:
    from hil.report import allure_files, certify, regression

    logging.basicConfig(level=logging.WARNING, format="hil report: %(message)s")

    if args.verify is not None:
        check = certify.verify_file(args.verify)
        print(f"{args.verify}: {check}")
        return 0 if check.ok else 1
    results = args.results or [default_results_dir()]
    threshold = (
        regression.DEFAULT_LATENCY_THRESHOLD
        if args.latency_threshold is None
        else args.latency_threshold
    )
    written = certify.write_report(
        results,
        args.out,
        baseline=args.baseline,
        title=args.title or certify.DEFAULT_TITLE,
        latency_threshold=threshold,
        command=_as_given(args, results),
    )
    if args.alluredir is not None:
        from hil.report import document

        allure_files.write(args.alluredir, document.read_json(written.json_path)["runs"])
        print(f"allure environment and categories: {args.alluredir}")
    counts = written.summary["categories"]
    print(
        f"{written.summary['total']} results: {counts['pass']} passed, "
        f"{counts['failure']} test failures, {counts['infrastructure']} infrastructure errors, "
        f"{counts['error']} errors, {counts['expected']} expected failures, "
        f"{counts['skipped']} skipped"
    )
    if written.regression is not None:
        r = written.regression
        print(
            f"since {r['baseline']['path']}: {len(r['new_failures'])} new failures, "
            f"{len(r['fixed'])} fixed, {len(r['latency'])} latency changes"
        )
    print(f"report.json sha256 {written.digest}")
    print(f"report: {written.html_path}")
    altered = written.summary.get("altered") or []
    if altered:
        print(
            f"NOT CERTIFIED: {len(altered)} result(s) of an altered run (the report is written "
            "to be studied, not signed): " + "; ".join(altered[:5]),
            file=sys.stderr,
        )
        return 1
    return 0
