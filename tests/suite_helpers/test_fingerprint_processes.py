"""A suite model's cache key is the same in every process: a warm run exports nothing.

A fingerprint that picked up a value following the hash seed (transformers' GenerationConfig
keeps `hash(self)` in `_original_object_hash`) gave tiny_opt a new key in every Python process,
so every run re-exported it and the cache grew by a copy a run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FINGERPRINT_EVERY_SUITE_MODEL = """
import json, sys
from hil.artifacts.fingerprint import model_fingerprint
from hil.sdk_command.suite_programs import collect_checks

cases = {case.name: case for case, _, _ in collect_checks(["suites"], "host", ["--hil-full"])}
print(json.dumps({name: model_fingerprint(case.build().module) for name, case in cases.items()}))
"""


def fingerprints_with_hash_seed(seed: str, tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "HIL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", FINGERPRINT_EVERY_SUITE_MODEL],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_every_suite_model_has_the_same_fingerprint_under_two_hash_seeds(tmp_path: Path) -> None:
    first = fingerprints_with_hash_seed("1", tmp_path)
    second = fingerprints_with_hash_seed("2", tmp_path)
    assert len(first) > 80 and "tiny_opt" in first  # the whole suite, its full sweep too
    assert {n for n in first if first[n] != second.get(n)} == set()


def exported_now(results: Path) -> list[bool]:
    records = [json.loads(line) for line in (results / "records.jsonl").read_text().splitlines()]
    return [r["artifact"]["exported_now"] for r in records if r.get("artifact")]


def test_a_second_run_of_the_opt_suite_exports_nothing(tmp_path: Path) -> None:
    """The model that carried the seeded hash, run as a user runs it, in two processes."""
    runs = []
    for n, seed in enumerate(("1", "2")):
        results = tmp_path / f"results-{n}"
        env = {
            **os.environ,
            "PYTHONHASHSEED": seed,
            "HIL_CACHE_DIR": str(tmp_path / "cache"),
            "HIL_RESULTS_DIR": str(results),
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "suites/models/test_models.py",
                "-k",
                "test_opt and tiny_opt",
                "--target=host",
                "-q",
                "-p",
                "no:cacheprovider",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:]
        runs.append(exported_now(results))
    assert runs[0] and all(runs[0])  # the first run exported every artifact it judged
    assert len(runs[1]) == len(runs[0]) and not any(runs[1])
