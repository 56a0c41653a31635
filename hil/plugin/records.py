"""Result records for cases that did not produce a CheckResult (export failure, lost link)."""

from __future__ import annotations

from typing import Any

import hil.errors as errors
from hil.plugin.state import Variant
from hil.verdict import error_records


def error_record(variant: Variant, error: errors.HilError) -> dict[str, Any]:
    return error_records.error_record(variant.case_id, variant.target, variant.recipe, error)
