"""Finding the FVP binary and the ExecuTorch install its runner links."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from hil.devices import parse_device
from hil.errors import TargetUnavailable
from hil.fvp import locate
from hil.fvp.config import fvp_config, runner_firmware


def config(tmp_path: Path, **connection: Any) -> Any:
    data = {
        "name": "fvp-x",
        "kind": "fvp",
        "npu": "ethos-u55-128",
        "recipes": [{"name": "ethos-u", "options": {"accelerator_config": "ethos-u55-128"}}],
        "connection": {"platform": "corstone-300", **connection},
    }
    return fvp_config(parse_device(data, tmp_path / "fvp-x.yaml"))


def executable(folder: Path, name: str = "FVP_Corstone_SSE-300_Ethos-U55") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\necho 'Fast Models [11.22.35 (Aug 18 2023)]'\n")
    path.chmod(0o755)
    return path


def test_missing_fvp_names_every_place_and_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv(locate.FVP_DIR_ENV, str(tmp_path / "env-dir"))
    with pytest.raises(TargetUnavailable) as caught:
        locate.find_fvp(config(tmp_path, fvp_dir=str(tmp_path / "conf-dir")))
    message = str(caught.value)
    assert "FVP_Corstone_SSE-300_Ethos-U55 (the corstone-300 FVP) is not installed" in message
    assert f"connection.fvp_dir ({tmp_path / 'conf-dir'})" in message
    assert f"$HIL_FVP_DIR ({tmp_path / 'env-dir'})" in message
    assert "PATH" in message
    assert caught.value.fix and "--i-agree-to-the-contained-eula" in caught.value.fix


def test_search_order_is_fvp_dir_then_env_then_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path = executable(tmp_path / "bin")
    in_env = executable(tmp_path / "env")
    in_conf = executable(tmp_path / "conf")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.delenv(locate.FVP_DIR_ENV, raising=False)
    assert locate.find_fvp(config(tmp_path)) == on_path
    monkeypatch.setenv(locate.FVP_DIR_ENV, str(in_env.parent))
    assert locate.find_fvp(config(tmp_path)) == in_env
    assert locate.find_fvp(config(tmp_path, fvp_dir=str(in_conf.parent))) == in_conf
    assert locate.fvp_version(in_conf) == "11.22.35 (Aug 18 2023)"


def install(tmp_path: Path, **connection: Any) -> Path | None:
    spec = parse_device(
        {
            "name": "fvp-x",
            "kind": "fvp",
            "npu": "ethos-u55-128",
            "recipes": [{"name": "ethos-u", "options": {"accelerator_config": "ethos-u55-128"}}],
            "connection": {"platform": "corstone-300", **connection},
        },
        tmp_path / "fvp-x.yaml",
    )
    settings = fvp_config(spec)
    return locate.executorch_install(settings, runner_firmware(spec, settings))


def test_executorch_install_is_checked_for_the_ethos_u_delegate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(locate.EXECUTORCH_ENV, raising=False)
    with pytest.raises(TargetUnavailable) as caught:
        install(tmp_path)
    assert "no SDK is built for it here and EXECUTORCH_ROOT is not set" in caught.value.message
    assert caught.value.fix is not None
    assert "hil sdk build --executorch <executorch checkout> --ethos-u-driver " in caught.value.fix
    assert "--board fvp-x" in caught.value.fix
    prefix = tmp_path / "et"
    monkeypatch.setenv(locate.EXECUTORCH_ENV, str(prefix))
    with pytest.raises(TargetUnavailable, match="is not an ExecuTorch install"):
        install(tmp_path)
    (prefix / "lib/cmake/ExecuTorch").mkdir(parents=True)
    (prefix / "lib/cmake/ExecuTorch/executorch-config.cmake").write_text("")
    with pytest.raises(TargetUnavailable, match="has no Ethos-U delegate"):
        install(tmp_path)
    (prefix / "lib/libexecutorch_delegate_ethos_u.a").write_bytes(b"!<arch>\n")
    assert install(tmp_path) == prefix.resolve()
    assert install(tmp_path, engine="echo") is None
    assert os.environ[locate.EXECUTORCH_ENV] == str(prefix)
