"""A certificate is evidence: signed with the lab's key over the exact bytes it vouches for,
refused with its reasons when a run is incomplete or altered, and gated by exit codes.

Each unfinished, torn, edited or forged input below is made from a real run's folder (run A of
report_lab.py) the way the failure happens in a lab: a killed run, a lost line, a hand edit.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from report_lab import Runs, run_all_skipped

from hil.cli import main
from hil.report import document
from hil.report.gate import ReportExit

Edit = Callable[[Path], None]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The lab's key pair and a stranger's, as PEM files (what openssl genpkey writes)."""
    folder = tmp_path_factory.mktemp("keys")
    found = {}
    for who in ("lab", "stranger"):
        private = Ed25519PrivateKey.generate()
        (folder / f"{who}.key").write_bytes(
            private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        )
        (folder / f"{who}.pub").write_bytes(
            private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        )
        found[who], found[f"{who}.pub"] = folder / f"{who}.key", folder / f"{who}.pub"
    return found


def hil_report(*args: str | Path) -> int:
    return main(["report", *map(str, args)])


def copy_of(folder: Path, tmp_path: Path, name: str = "results") -> Path:
    copied = tmp_path / name
    shutil.copytree(folder, copied, ignore=shutil.ignore_patterns("earlier", ".lock"))
    return copied


def records(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "records.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run_doc(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "run.json").read_text())
    return loaded


def write_run(folder: Path, run: dict[str, Any]) -> None:
    (folder / "run.json").write_text(json.dumps(run, indent=2))


def rewrite_as_the_run(folder: Path, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    """Records changed as if the run itself had written them so (run.json's count and sha256
    follow): what a writer that omits a field, or a lab's retry, leaves behind."""
    found = records(folder)
    edit(found)
    data = "".join(json.dumps(r) + "\n" for r in found).encode()
    (folder / "records.jsonl").write_bytes(data)
    run = run_doc(folder)
    run["records"] = {"count": len(found), "sha256": hashlib.sha256(data).hexdigest()}
    write_run(folder, run)


def report_of(out: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out / "report.json").read_text())
    return loaded


# -- a real run is certifiable, and its report is signed in the supply-chain convention -----


def test_a_whole_run_from_a_clean_checkout_is_certifiable(runs: Runs, tmp_path: Path) -> None:
    code = hil_report("--results", runs.a, "--out", tmp_path / "a")
    report = report_of(tmp_path / "a")
    assert report["certification"] == {"certifiable": True, "reasons": []}
    assert code == ReportExit.FAILURES  # run A holds an OVER BUDGET, an EXPORT FAILED, an INFRA
    kinds = sorted({e["kind"] for e in report["evidence"]})
    assert kinds == ["program", "records", "run"]


def test_signed_report_verifies_with_securesystemslib_itself(
    runs: Runs, tmp_path: Path, keys: dict[str, Path]
) -> None:
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    out = tmp_path / "signed"
    assert hil_report("--results", runs.c, "--out", out, "--sign", keys["lab"]) == 0
    line = (out / "report.intoto.jsonl").read_text().strip()
    envelope = Envelope.from_dict(json.loads(line))
    key = SSlibKey.from_crypto(load_pem_public_key(keys["lab.pub"].read_bytes()))
    assert key.keyid in envelope.verify([key], 1)  # the library's own verifier, not hil's
    statement = json.loads(envelope.payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    digests = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    for name in ("report.json", "report.html"):
        assert digests[name] == hashlib.sha256((out / name).read_bytes()).hexdigest()
    run_json = runs.c / "run.json"
    assert hashlib.sha256(run_json.read_bytes()).hexdigest() in digests.values()
    assert statement["predicate"]["certification"]["certifiable"] is True
    assert statement["predicate"]["exit_code"] == 0
    assert hil_report("--verify", out, "--key", keys["lab.pub"]) == 0


def test_a_resealed_report_fails_verify_with_the_key(
    runs: Runs, tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "signed"
    assert hil_report("--results", runs.a, "--out", out, "--sign", keys["lab"]) == 1
    report = report_of(out)
    failed = next(r for r in report["results"] if r["verdict"] == "OVER BUDGET")
    failed.update(verdict="PASS", category="pass", reason=None)
    report["summary"]["failing"] -= 1
    (out / "report.json").write_text(json.dumps(document.seal(report), indent=2))
    capsys.readouterr()
    # the content hash holds after re-sealing: it never said who wrote the report
    assert hil_report("--verify", out / "report.json") != ReportExit.ALTERED
    assert "content hash verified" in capsys.readouterr().out
    assert hil_report("--verify", out, "--key", keys["lab.pub"]) == ReportExit.ALTERED
    assert "is not the report.json that was signed" in capsys.readouterr().err
    assert hil_report("--verify", out, "--key", keys["stranger.pub"]) == ReportExit.ALTERED
    assert "no signature in the envelope verifies" in capsys.readouterr().err


def test_a_signed_run_file_that_changed_fails_verify(
    runs: Runs, tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results = copy_of(runs.c, tmp_path)
    out = tmp_path / "signed"
    assert hil_report("--results", results, "--out", out, "--sign", keys["lab"]) == 0
    pte = next(e for e in report_of(out)["evidence"] if e["kind"] == "program")
    assert hil_report("--verify", out, "--key", keys["lab.pub"], "--evidence", pte["path"]) == 0
    stranger = tmp_path / "other.pte"
    stranger.write_bytes(b"not the program that ran")
    assert (
        hil_report("--verify", out, "--key", keys["lab.pub"], "--evidence", stranger)
        == ReportExit.ALTERED
    )
    with (results / "records.jsonl").open("a") as f:
        f.write("\n")
    capsys.readouterr()
    assert hil_report("--verify", out, "--key", keys["lab.pub"]) == ReportExit.ALTERED
    assert "records.jsonl that was signed" in capsys.readouterr().err


def test_sign_refuses_a_report_that_is_not_certifiable(
    runs: Runs, tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    assert hil_report("--results", runs.b, "--out", out, "--sign", keys["lab"]) == 3
    assert not (out / "report.intoto.jsonl").exists()
    assert (out / "report.html").exists()  # written, to be studied
    err = capsys.readouterr().err
    assert "not certifiable, so it was written but not signed" in err
    assert "uncommitted changes" in err and "test_lab_ops.py" in err


# -- incomplete or altered inputs: not certifiable, a non-zero exit, the reason in the headline


def _unfinished(folder: Path) -> None:
    run = run_doc(folder)
    run.update(finished=None, exit_status=None)
    run.pop("records", None)
    write_run(folder, run)


def _torn(folder: Path) -> None:
    with (folder / "records.jsonl").open("a") as f:
        f.write('{"case": "relu", "target": "host", "verd')


def _no_run_json(folder: Path) -> None:
    (folder / "run.json").unlink()


def _collected_more(folder: Path) -> None:
    run = run_doc(folder)
    run["collected"] = [*run["collected"], "suites/operators/test_lab_ops.py::test_op[never-ran]"]
    write_run(folder, run)


def _dropped_record(folder: Path) -> None:
    lines = (folder / "records.jsonl").read_text().splitlines(keepends=True)
    (folder / "records.jsonl").write_text("".join(lines[1:]))


def _edited_record(folder: Path) -> None:
    found = records(folder)
    found[0]["verdict"] = "MISMATCH"
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in found))


def _test_runner(planted: bool) -> Edit:
    """A runner that is a test build, recorded by a writer that left out `altered`."""

    def edit(folder: Path) -> None:
        def forge(found: list[dict[str, Any]]) -> None:
            row = next(r for r in found if r["verdict"] == "PASS")
            info = {"build_id": "vboard-0123", "expected_build_id": "vboard-0123"}
            info["debug_commands"] = "refused" if planted else "accepted"
            if planted:
                info["planted_fault"] = "aten::add.out"
            row["target_info"] = {**(row.get("target_info") or {}), **info}
            row.pop("altered", None)

        rewrite_as_the_run(folder, forge)

    return edit


def _unexpected_build(folder: Path) -> None:
    def forge(found: list[dict[str, Any]]) -> None:
        row = next(r for r in found if r["verdict"] == "PASS")
        row["target_info"] = {
            "build_id": "board-aaaa",
            "expected_build_id": "board-bbbb",
            "build": "release",
        }

    rewrite_as_the_run(folder, forge)


INCOMPLETE: dict[str, tuple[Edit, str]] = {
    "unfinished": (_unfinished, "did not finish"),
    "torn-record": (_torn, "ends in a torn line"),
    "no-run-json": (_no_run_json, "has no run.json"),
    "collected-more": (_collected_more, "1 of "),
    "dropped-record": (_dropped_record, "records were dropped or added"),
    "edited-record": (_edited_record, "it was edited after the run"),
    "debug-runner": (_test_runner(planted=False), "obeys requests to hang or fault"),
    "planted-runner": (_test_runner(planted=True), "kernel wrong on purpose"),
    "unexpected-build": (_unexpected_build, "not board-bbbb"),
}


@pytest.mark.parametrize("name", sorted(INCOMPLETE))
def test_an_incomplete_or_altered_run_is_not_certifiable(
    name: str, runs: Runs, tmp_path: Path, keys: dict[str, Path]
) -> None:
    edit, reason = INCOMPLETE[name]
    results = copy_of(runs.c, tmp_path)
    edit(results)
    out = tmp_path / "report"
    assert hil_report("--results", results, "--out", out) == ReportExit.NOT_CERTIFIABLE
    certification = report_of(out)["certification"]
    assert certification["certifiable"] is False
    assert any(reason in r for r in certification["reasons"]), certification["reasons"]
    page = (out / "report.html").read_text()
    headline = page[page.index('id="not-certified"') : page.index("</ul>")]
    assert "NOT CERTIFIED" in headline and reason in headline
    assert hil_report("--verify", out / "report.json") == ReportExit.NOT_CERTIFIABLE
    assert hil_report("--results", results, "--out", out, "--sign", keys["lab"]) == 3


def test_a_test_runner_s_results_are_altered_whatever_the_record_says(
    runs: Runs, tmp_path: Path
) -> None:
    results = copy_of(runs.c, tmp_path)
    _test_runner(planted=True)(results)
    hil_report("--results", results, "--out", tmp_path / "report")
    rows = report_of(tmp_path / "report")["results"]
    (forged,) = [r for r in rows if r["target_info"].get("planted_fault")]
    assert any("HIL_PLANTED_FAULT=aten::add.out" in a for a in forged["altered"])


# -- merging earlier reports -------------------------------------------------------------------


def test_an_edited_input_report_is_refused_in_a_merge(
    runs: Runs, tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    signed = tmp_path / "signed"
    assert hil_report("--results", runs.a, "--out", signed, "--sign", keys["lab"]) == 1
    report = report_of(signed)
    edited = copy.deepcopy(report)
    row = next(r for r in edited["results"] if r["verdict"] == "OVER BUDGET")
    row["category"] = "pass"  # the verdict stays: a category is derived, never copied
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "report.json").write_text(json.dumps(edited))
    out = tmp_path / "merged"
    assert hil_report("--results", broken / "report.json", "--out", out) == ReportExit.ALTERED
    assert "was changed after it was written" in capsys.readouterr().err

    resealed = signed / "report.json"
    resealed.write_text(json.dumps(document.seal(edited)))
    code = hil_report("--results", resealed, "--out", out, "--key", keys["lab.pub"])
    assert code == ReportExit.ALTERED
    assert "is not the report.json its signature vouches for" in capsys.readouterr().err

    (signed / "report.intoto.jsonl").unlink()  # re-sealed, unsigned: the hash proves nothing
    assert hil_report("--results", resealed, "--out", out) == ReportExit.NOT_CERTIFIABLE
    merged = report_of(out)
    assert any("is not signed" in r for r in merged["certification"]["reasons"])
    again = next(r for r in merged["results"] if r["verdict"] == "OVER BUDGET")
    assert again["category"] == "failure"


def test_a_signed_input_report_merges_certifiably_with_the_key(
    runs: Runs, tmp_path: Path, keys: dict[str, Path]
) -> None:
    signed = tmp_path / "signed"
    assert hil_report("--results", runs.c, "--out", signed, "--sign", keys["lab"]) == 0
    out = tmp_path / "merged"
    args = ["--results", signed / "report.json", "--results", runs.a, "--out", out]
    assert hil_report(*args) == ReportExit.NOT_CERTIFIABLE  # signed, but no key to check it
    assert hil_report(*args, "--key", keys["lab.pub"]) == ReportExit.FAILURES
    assert report_of(out)["certification"]["certifiable"] is True


# -- retries, exit codes, bad input ------------------------------------------------------------


def test_a_pass_after_a_retry_shows_its_attempts(runs: Runs, tmp_path: Path) -> None:
    results = copy_of(runs.c, tmp_path)

    def retried(found: list[dict[str, Any]]) -> None:
        row = next(r for r in found if r["verdict"] == "PASS")
        row["attempts"] = [
            {"attempt": 1, "board": "host2-a", "verdict": "INFRA", "failure": "link lost"},
            {"attempt": 2, "board": "host2-b", "verdict": "PASS"},
        ]
        row["boards"] = ["host2-a", "host2-b"]

    rewrite_as_the_run(results, retried)
    out = tmp_path / "report"
    assert hil_report("--results", results, "--out", out) == 0
    report = report_of(out)
    (row,) = [r for r in report["results"] if r.get("attempts")]
    assert row["boards"] == ["host2-a", "host2-b"] and len(row["attempts"]) == 2
    (line,) = report["summary"]["passed_after_retry"]
    assert "after 2 attempts on host2-a, host2-b" in line
    page = (out / "report.html").read_text()
    assert 'id="passed-after-retry"' in page and "host2-a INFRA, host2-b PASS" in page


def test_nothing_judged_has_its_own_exit_code(
    runs: Runs, tmp_path: Path, shared_cache: Path
) -> None:
    clone = tmp_path / "clone"  # the lab's checkout at its commit: clean
    subprocess.run(["git", "clone", "-q", str(runs.project), str(clone)], check=True)
    skipped = run_all_skipped(runs, tmp_path, shared_cache, project=clone)
    assert hil_report("--results", skipped, "--out", tmp_path / "r") == ReportExit.NOTHING_JUDGED


def test_a_member_given_twice_is_bad_input(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = copy_of(runs.c, tmp_path)
    text = (results / "run.json").read_text()
    (results / "run.json").write_text(text.replace("{", '{"exit_status": 0, ', 1))
    assert hil_report("--results", results, "--out", tmp_path / "r") == ReportExit.BAD_INPUT
    assert "given twice" in capsys.readouterr().err


# -- the operator suite on host, signed, as a release engineer does it ---------------------------

REPO = Path(__file__).resolve().parents[2]


def test_the_operator_suite_on_host_is_signed_and_verified(
    tmp_path: Path, shared_cache: Path, keys: dict[str, Path]
) -> None:
    """`pytest suites/operators --target=host` in a clean checkout of the suites, then
    `hil report --sign`, then `--verify --key` and securesystemslib's own check."""
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    project = tmp_path / "checkout"
    (project / "suites").mkdir(parents=True)
    for name in ("__init__.py", "factories.py"):
        shutil.copy(REPO / "suites" / name, project / "suites" / name)
    shutil.copytree(
        REPO / "suites" / "operators",
        project / "suites" / "operators",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / ".gitignore").write_text("__pycache__/\n")
    git = ["git", "-c", "user.email=lab@example.invalid", "-c", "user.name=lab"]
    for step in (["init", "-q"], ["add", "."], ["commit", "-qm", "suites"]):
        subprocess.run([*git, *step], cwd=project, check=True)
    results = tmp_path / "results"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites/operators",
            "--target=host",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--hil-results-dir={results}",
            f"--hil-cache-dir={shared_cache}",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    out = tmp_path / "report"
    assert hil_report("--results", results, "--out", out, "--sign", keys["lab"]) == 0
    report = report_of(out)
    assert report["certification"]["certifiable"] and report["summary"]["categories"]["pass"] > 50
    assert hil_report("--verify", out, "--key", keys["lab.pub"]) == 0

    envelope = Envelope.from_dict(json.loads((out / "report.intoto.jsonl").read_text()))
    key = SSlibKey.from_crypto(load_pem_public_key(keys["lab.pub"].read_bytes()))
    envelope.verify([key], 1)
    names = {s["name"] for s in json.loads(envelope.payload)["subject"]}
    programs = [e for e in report["evidence"] if e["kind"] == "program"]
    assert len(programs) > 50 and {p["name"] for p in programs} <= names
