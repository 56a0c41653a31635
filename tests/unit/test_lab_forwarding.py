"""Leased = direct: whatever a target kind can do, a board of that kind leased through the lab
can do too. Structural, over every kind hil knows: each Capabilities field comes through
LabTarget unchanged, and every method a kind overrides beyond the lifecycle, LabTarget forwards
(a kind that gains one without the lab forwarding it fails here). The behaviour itself is shown
on the virtual rack (tests/integration/test_lab.py)."""

from __future__ import annotations

import importlib
from dataclasses import fields
from pathlib import Path

import pytest

from hil.devices import parse_device
from hil.lab.target import LabTarget
from hil.targets import TARGET_CLASSES
from hil.targets.base import Capabilities, Target

# each kind does these its own way; LabTarget does them through the lease (or the base suffices)
LIFECYCLE = {"_provision", "_deploy", "_run", "_teardown", "describe", "__init__"}


def kind_class(kind: str) -> type[Target]:
    module, name = TARGET_CLASSES[kind].split(":")
    cls: type[Target] = getattr(importlib.import_module(module), name)
    return cls


def lab_device(tmp_path: Path) -> LabTarget:
    spec = parse_device(
        {
            "name": "leased",
            "kind": "serial",
            "recipes": ["portable"],
            "connection": {"labgrid": {"coordinator": "127.0.0.1:1", "place": "p"}},
        },
        tmp_path / "leased.yaml",
    )
    return LabTarget(spec, lambda s: pytest.fail("no board is leased in this test"))


@pytest.mark.parametrize("kind", sorted(TARGET_CLASSES))
def test_every_capability_of_each_kind_comes_through_the_lab(kind: str, tmp_path: Path) -> None:
    cls = kind_class(kind)
    lab = lab_device(tmp_path)
    inner = object.__new__(cls)  # unprovisioned: only what the class says is read
    lab._inner = inner
    assert lab.capabilities == cls.CAPABILITIES
    assert {f.name for f in fields(Capabilities)} == set(vars(lab.capabilities).keys())


@pytest.mark.parametrize("kind", sorted(TARGET_CLASSES))
def test_every_method_a_kind_adds_the_lab_forwards(kind: str) -> None:
    cls = kind_class(kind)
    added = {
        name
        for klass in cls.__mro__
        if klass not in Target.__mro__ and issubclass(klass, Target)
        for name, value in vars(klass).items()
        if callable(value) and name in vars(Target) and name not in LIFECYCLE
    }
    missing = sorted(name for name in added if name not in vars(LabTarget))
    assert not missing, f"{cls.__name__} overrides {missing}; LabTarget must forward them"
