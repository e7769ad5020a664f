"""`calibrate` without --name saves under this host's name, but never over another framework's profile.

Stop 46 calibrated torch on this VM and replaced its TensorFlow profile 'vm' without a word."""

from __future__ import annotations

import json

from whichdevice.analysis import deviceprofile


def _save(home, name: str, framework: str) -> None:
    src = deviceprofile.load("h100")  # a real shipped profile, renamed and re-framed
    data = json.loads(src.model_dump_json()) | {"name": name, "framework": framework}
    folder = home / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")


def test_the_host_name_until_another_framework_holds_it(tmp_path, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path))
    assert deviceprofile.default_name("torch", "vm") == "vm"  # nothing saved yet
    _save(tmp_path, "vm", "tensorflow 2.21.0")
    assert deviceprofile.default_name("tensorflow", "vm") == "vm"  # its own: replaced, as before
    assert deviceprofile.default_name("torch", "vm") == "vm-torch"
    assert deviceprofile.default_name("keras-jax", "my host!") == "my-host-"


def test_an_unreadable_saved_profile_is_replaced_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("WHICHDEVICE_HOME", str(tmp_path))
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "vm.json").write_text("{not json", encoding="utf-8")
    assert deviceprofile.default_name("torch", "vm") == "vm"
