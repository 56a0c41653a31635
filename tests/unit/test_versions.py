"""Which torch and ExecuTorch hil runs beside, said in one sentence, and refused outside the
tested range before any work starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hil.compat import versions
from hil.compat.versions import Installed, require_supported
from hil.errors import UsageError


def installed_as(executorch: str, source: str | None = None) -> Installed:
    return Installed("2.13.0", executorch, "3b60683923245cf4" if source else None, source)


@pytest.mark.parametrize("release", ["1.4.1", "1.4.0", "1.5.1", "1.5.1+cpu"])
def test_the_tested_releases_are_supported(release: str) -> None:
    found = installed_as(release)
    assert found.supported
    assert f"ExecuTorch {release}" in found.sentence() and "tested" in found.sentence()


@pytest.mark.parametrize("release", ["1.2.0", "1.6.0", "1.6.0a0+git3b60683", "banana", "2"])
def test_anything_else_is_outside_and_says_what_to_do(release: str) -> None:
    found = installed_as(release)
    assert not found.supported
    sentence = found.sentence()
    assert f"ExecuTorch {release} is outside" in sentence
    assert "1.4.x or 1.5.x" in sentence and versions.ALLOW_UNTESTED in sentence


def test_a_source_checkout_is_supported_and_named_with_its_commit() -> None:
    found = installed_as("1.6.0a0", source="/src/executorch")
    assert found.supported
    assert "commit 3b6068392324" in found.sentence() and "/src/executorch" in found.sentence()
    assert found.as_record()["executorch_source"] == "/src/executorch"


def test_an_unsupported_version_is_refused_unless_asked_to_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(versions, "installed", lambda: installed_as("1.2.0"))
    monkeypatch.delenv(versions.ALLOW_UNTESTED, raising=False)
    with pytest.raises(UsageError, match=r"ExecuTorch 1\.2\.0 is outside"):
        require_supported()
    monkeypatch.setenv(versions.ALLOW_UNTESTED, "1")
    assert require_supported().executorch == "1.2.0"


def test_this_environment_is_supported() -> None:
    assert versions.installed().supported, versions.installed().sentence()


def test_a_source_builds_key_part_follows_its_files_not_only_its_commit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An operator author edits a pass in the checkout, or rebuilds with other options: the
    commit is the same, the installed package is not, and its digest says so (a cached program
    or a remembered failure of the earlier code is then not served)."""
    import executorch

    package = tmp_path / "executorch"
    (package / "backends").mkdir(parents=True)
    (package / "backends" / "pass_.py").write_text("SCALE = 1\n")
    binding = package / "backends" / "_cmsis_nn.so"
    binding.write_bytes(b"\0" * 8)
    monkeypatch.setattr(executorch, "__path__", [str(package)])

    def digest(found: Installed) -> str | None:
        monkeypatch.setattr(versions, "installed", lambda: found)
        versions.source_tree_digest.cache_clear()
        return versions.source_tree_digest()

    source = installed_as("1.5.0+cff6f4d", source="/src/executorch")
    first = digest(source)
    assert first is not None and digest(source) == first  # the same files, the same digest
    (package / "backends" / "pass_.py").write_text("SCALE = 2\n")
    edited = digest(source)
    assert edited != first
    os.utime(binding, ns=(1, 1))  # rebuilt with other options: another binary in place
    assert digest(source) not in (first, edited)
    assert digest(installed_as("1.5.1")) is None  # a release: its version says it all
    # an editable install: the package folder links to the checkout's own folders
    checkout = tmp_path / "checkout"
    (checkout / "src" / "executorch").mkdir(parents=True)
    (checkout / "exir").mkdir()
    (checkout / "exir" / "pass_.py").write_text("SCALE = 1\n")
    (checkout / "src" / "executorch" / "exir").symlink_to(checkout / "exir")
    monkeypatch.setattr(executorch, "__path__", [str(checkout / "src" / "executorch")])
    linked = digest(source)
    (checkout / "exir" / "pass_.py").write_text("SCALE = 2\n")
    assert digest(source) != linked
    versions.source_tree_digest.cache_clear()
