"""`hil report`: write the certification report from results folders (and sign it), or verify
one; its exit code is the gate a CI job reads (hil.report.gate)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from hil.errors import HilError, ReportAltered, ReportError, SignatureInvalid
from hil.paths import default_results_dir
from hil.report.gate import ReportExit
from hil.signing import load_lab_key, load_trusted_key

DEFAULT_OUT = Path(".hil/report")


def add_parser(commands: Any) -> None:
    """Add the `report` subcommand to the `hil` command's subparsers."""
    report = commands.add_parser(
        "report",
        help="write the certification report (report.json + report.html), or --verify one",
        description="Merge the results of one or more runs (other targets, other machines) into "
        "one certification report; with --baseline, show what changed since an earlier one.",
        epilog="exit codes (a CI job gates on them; docs/reports.md):\n"
        + "\n".join(f"  {int(code)}  {code.meaning()}" for code in ReportExit),
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        metavar="REPORT",
        help="check a written report (its report.json or folder) and write nothing: its schema, "
        "content hash and certification; with --key, its signature and every signed file at "
        "hand",
    )
    report.add_argument(
        "--sign",
        metavar="KEY",
        help="sign the report with the lab's key (a PEM private key file, or a signer URI "
        "such as gnupg:, gcpkms:, awskms:, azurekms:, hsm: with --key): writes "
        "report.intoto.jsonl beside it; a report that is not certifiable is refused",
    )
    report.add_argument(
        "--key",
        type=Path,
        metavar="PUBLIC_KEY",
        help="the lab's public key (PEM or securesystemslib key JSON): verifies --verify's "
        "signature and signed input reports, and is the public half of a --sign URI",
    )
    report.add_argument(
        "--evidence",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="with --verify: a .pte, runner binary or results file that must be one the "
        "report vouches for (repeat)",
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
    """The report's exit code (hil.report.gate): a HilError becomes its code here, not 2."""
    logging.basicConfig(level=logging.WARNING, format="hil report: %(message)s")
    try:
        return int(_verify(args) if args.verify is not None else _write(args))
    except HilError as e:
        print(f"hil report: {e}", file=sys.stderr)
        return int(_code_of(e))


def _code_of(error: HilError) -> ReportExit:
    from hil.report.certify import NotCertifiable

    if isinstance(error, NotCertifiable):
        return ReportExit.NOT_CERTIFIABLE
    if isinstance(error, (ReportAltered, SignatureInvalid)):
        return ReportExit.ALTERED
    return ReportExit.BAD_INPUT


def _write(args: argparse.Namespace) -> ReportExit:
    from hil.report import allure_files, certify, regression

    trusted = load_trusted_key(args.key) if args.key is not None else None
    lab_key = load_lab_key(args.sign, args.key) if args.sign else None
    results = args.results or [default_results_dir()]
    threshold = (
        regression.DEFAULT_LATENCY_THRESHOLD
        if args.latency_threshold is None
        else args.latency_threshold
    )
    try:
        written = certify.write_report(
            results,
            args.out,
            baseline=args.baseline,
            title=args.title or certify.DEFAULT_TITLE,
            latency_threshold=threshold,
            command=_as_given(args, results),
            trusted=trusted,
            sign_with=lab_key,
        )
    except certify.NotCertifiable:
        print(f"report: {args.out / certify.HTML_NAME} (written, NOT signed)")
        raise
    if args.alluredir is not None:
        from hil.report import document

        allure_files.write(args.alluredir, document.read_json(written.json_path)["runs"])
        print(f"allure environment and categories: {args.alluredir}")
    counts = written.summary["categories"]
    print(
        f"{written.summary['total']} results: {counts['pass']} passed, "
        f"{counts['failure']} test failures, {counts['infrastructure']} infrastructure errors, "
        f"{counts['error']} errors, {counts['not-judged']} not judged, "
        f"{counts['expected']} expected failures, {counts['skipped']} skipped"
    )
    retried = written.summary.get("passed_after_retry") or []
    if retried:
        print(f"{len(retried)} passed only after a retry: " + "; ".join(retried[:3]))
    if written.regression is not None:
        r = written.regression
        print(
            f"since {r['baseline']['path']}: {len(r['new_failures'])} new failures, "
            f"{len(r['fixed'])} fixed, {len(r['latency'])} latency changes"
        )
    print(f"report.json content hash sha256 {written.digest}")
    print(f"report: {written.html_path}")
    if written.envelope_path is not None:
        print(f"signed by {lab_key.describe() if lab_key else '?'}: {written.envelope_path}")
    _say_certification(written.certification)
    _say_code(written.exit_code)
    return written.exit_code


def _verify(args: argparse.Namespace) -> ReportExit:
    """Schema, content hash, certification; with --key, the signature and the signed files."""
    from hil.report import attestation, certify, document, gate

    folder = args.verify if args.verify.is_dir() else args.verify.parent
    json_path = folder / certify.JSON_NAME if args.verify.is_dir() else args.verify
    report = document.read_report(json_path)
    check = document.verify(report)
    print(f"{json_path}: {check}")
    if not check.ok:
        return ReportExit.ALTERED
    if args.key is not None:
        verified = attestation.verify(folder, load_trusted_key(args.key), args.evidence)
        for line in verified.lines():
            print(line)
    elif args.evidence:
        raise ReportError("--evidence needs --key: files are checked against a signature")
    else:
        print("not signed, or not checked: give --key to verify who signed it")
    _say_certification(
        report.get("certification")
        or {
            "certifiable": False,
            "reasons": ["an older hil wrote it and judged nothing of its completeness"],
        }
    )
    code = gate.exit_code(report)
    _say_code(code)
    return code


def _say_certification(certification: dict[str, Any]) -> None:
    if certification.get("certifiable"):
        print("certifiable: every input complete and unaltered, every runner a known release")
        return
    reasons = certification.get("reasons") or []
    print(f"NOT CERTIFIABLE ({len(reasons)} reason(s)):", file=sys.stderr)
    for reason in reasons:
        print(f"  - {reason}", file=sys.stderr)


def _say_code(code: ReportExit) -> None:
    print(f"exit {int(code)}: {code.meaning()}")
