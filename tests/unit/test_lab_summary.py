"""The summary's lab section from records: retried cases with every attempt, boards taken out
of service (the board an attempt failed on and the next left), quarantined cases."""

from __future__ import annotations

from hil.plugin.lab_summary import failed_boards, render

RETRIED = {
    "case": "victim",
    "target": "rack",
    "recipe": "portable",
    "verdict": "PASS",
    "attempts": [
        {
            "attempt": 1,
            "board": "vb2",
            "verdict": "INFRA",
            "error_class": "TransportError",
            "failure": "the serial port server closed the connection\nmore",
            "recovery": "vb2 out of service; moved to vb1",
        },
        {"attempt": 2, "board": "vb1", "verdict": "PASS"},
    ],
}
POWER_CYCLED = {
    "case": "hung",
    "target": "rack",
    "recipe": "portable",
    "verdict": "PASS",
    "attempts": [
        {
            "attempt": 1,
            "board": "vb1",
            "verdict": "INFRA",
            "error_class": "LinkTimeout",
            "failure": "no reply",
            "recovery": "power-cycled vb1",
        },
        {"attempt": 2, "board": "vb1", "verdict": "PASS"},
    ],
}
QUARANTINED = {
    "case": "slow",
    "target": "host",
    "recipe": "portable",
    "verdict": "OVER BUDGET",
    "quarantine": {
        "case": "slow-*",
        "reason": "slow host",
        "issue": "HIL-1",
        "expires": "2027-01-01",
    },
}


def test_retried_cases_list_every_attempt_and_the_board_taken_out() -> None:
    lines = render([RETRIED, POWER_CYCLED, {"case": "ok", "verdict": "PASS"}])
    assert lines[0] == "retried after infrastructure errors: 2 case(s)"
    assert "  victim on rack [portable]: PASS after 2 attempts" in lines
    assert (
        "    1. vb2: INFRA TransportError: the serial port server closed the connection "
        "-> vb2 out of service; moved to vb1"
    ) in lines
    assert "    2. vb1: PASS" in lines
    assert "boards taken out of service: 1" in lines  # a power-cycled board stays in service
    assert failed_boards([RETRIED, POWER_CYCLED]) == {
        "vb2": "TransportError: the serial port server closed the connection"
    }


def test_a_board_lost_on_the_last_attempt_counts_too() -> None:
    lost = {**RETRIED, "verdict": "INFRA", "attempts": RETRIED["attempts"][:1]}
    assert set(failed_boards([lost])) == {"vb2"}


def test_quarantined_cases_are_listed_with_reason_and_issue() -> None:
    lines = render([QUARANTINED, {**QUARANTINED, "case": "fast", "verdict": "PASS"}])
    assert lines[0] == (
        "quarantined: 1 known failure(s), 1 quarantined case(s) passed (their entries can go)"
    )
    assert "  slow on host [portable]: OVER BUDGET; slow host (HIL-1, until 2027-01-01)" in lines
    assert "  fast on host [portable]: passed; slow host (HIL-1, until 2027-01-01)" in lines


def test_nothing_to_say_is_no_section() -> None:
    assert render([{"case": "ok", "verdict": "PASS"}]) == []
