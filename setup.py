"""One thing pyproject.toml cannot say: hil's data packages, hil._devices and hil._firmware,
live outside hil/ (in devices/ and firmware/, mapped in pyproject.toml), so package discovery
cannot find them; they are named here beside the discovered ones."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["hil", "hil.*"]), "hil._devices", "hil._firmware"])
