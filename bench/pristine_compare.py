"""The compiler as shipped against hil's speed-ups, on the suites (issue #35): the same pytest
run with `--hil-pristine-export` and without, each from an empty cache, then every check's
verdict and `.pte` digest side by side. Printed, never asserted.

    .venv/bin/python bench/pristine_compare.py                       # host and u85-ref
    .venv/bin/python bench/pristine_compare.py --target host --select suites/operators

Each mode exports every artifact afresh (counted from the records' `exported_now`); a check
whose verdict or digest differs between the modes is listed, and the report's provenance says
which speed-up parts each run had on. A third run on the speed-ups' cache counts what a warm
run exports (issue #38: nothing). `--record` writes the figures to bench/figures.json for the docs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

REPO = Path(__file__).resolve().parent.parent

Key = tuple[str, str, str]


def run(
    mode: str, args: argparse.Namespace, work: Path
) -> tuple[dict[Key, dict], float, dict, int]:
    """One pytest run in `mode` ("pristine" or "speed-ups"): its records by check, its wall
    time, the speed-up parts its run.json declares and the programs its cache holds after."""
    results, cache = work / f"results-{mode}", work / f"cache-{mode}"
    command = [sys.executable, "-m", "pytest", *args.select, "-q", "-p", "no:cacheprovider"]
    command += [f"--target={t}" for t in args.target]
    command += [f"--hil-cache-dir={cache}", f"--hil-results-dir={results}"]
    if mode == "pristine":
        command.append("--hil-pristine-export")
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
    records = {}
    for line in (results / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        records[(record["case"], record["target"], record["recipe"])] = record
    declared = json.loads((results / "run.json").read_text()).get("speedups") or {}
    programs = len(list((cache / "artifacts").glob("*/model.pte")))
    return records, seconds, declared, programs


def _exported(record: dict) -> bool:
    return bool((record.get("artifact") or {}).get("exported_now"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", nargs="+", default=["host", "u85-ref"])
    parser.add_argument("--select", nargs="+", default=["suites"])
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    os.environ.pop("HIL_PRISTINE_EXPORT", None)
    with tempfile.TemporaryDirectory(prefix="hil-pristine-") as folder:
        work = Path(folder)
        pristine, pristine_s, pristine_parts, pristine_made = run("pristine", args, work)
        fast, fast_s, fast_parts, fast_made = run("speed-ups", args, work)
        again, again_s, _, again_made = run("speed-ups", args, work)  # its cache again: warm
    print(f"suites on {', '.join(args.target)}, each mode from an empty cache")
    for name, records, seconds, parts, made in (
        ("pristine", pristine, pristine_s, pristine_parts, pristine_made),
        ("speed-ups", fast, fast_s, fast_parts, fast_made),
    ):
        print(
            f"  {name:9} {len(records)} checks, {made} programs made in its empty cache "
            f"({sum(map(_exported, records.values()))} records say exported now), "
            f"{seconds:.0f} s; run.json: pristine={parts.get('pristine')}, parts "
            f"{', '.join(sorted(parts.get('parts') or {})) or 'none'}"
        )
    both = sorted(set(pristine) & set(fast))
    verdicts = [k for k in both if pristine[k]["verdict"] != fast[k]["verdict"]]
    digests = [
        k
        for k in both
        if (pristine[k].get("artifact") or {}).get("sha256")
        != (fast[k].get("artifact") or {}).get("sha256")
    ]
    only = sorted(set(pristine) ^ set(fast))
    print(
        f"  compared {len(both)} checks: {len(verdicts)} verdicts differ, "
        f"{len(digests)} .pte differ"
    )
    for key in verdicts:
        print(f"    verdict {'/'.join(key)}: {pristine[key]['verdict']} vs {fast[key]['verdict']}")
    for key in digests:
        print(f"    .pte {'/'.join(key)} differs")
    for key in only:
        print(f"    only in one mode: {'/'.join(key)}")
    if fast_s:
        print(f"  time pristine / speed-ups: {pristine_s / fast_s:.2f}")
    print(
        f"  warm run on the speed-ups cache: {len(again)} checks, "
        f"{again_made - fast_made} programs added, "
        f"{sum(map(_exported, again.values()))} records say exported now, {again_s:.0f} s"
    )
    if args.record:
        command = " ".join(["bench/pristine_compare.py", *sys.argv[1:]])
        for name, value, unit, what in (
            ("checks", len(both), "checks", "checks compared, each mode from an empty cache"),
            ("verdicts_differ", len(verdicts), "checks", "verdicts that differ between modes"),
            ("pte_differ", len(digests), "programs", ".pte digests that differ between modes"),
            ("time_x", round(pristine_s / fast_s, 2), "x", "pristine over speed-ups, cold"),
            ("warm_exported", again_made - fast_made, "programs", "a warm run's new programs"),
        ):
            record(f"pristine_compare.{name}", value, unit, what, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
