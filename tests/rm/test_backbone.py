"""The RM backbone goes through the same pinned-file check as the GGUF models."""

import hashlib
from types import SimpleNamespace

import pytest

from orchrm.errors import ChecksumMismatch, ConfigError, ModelError
from orchrm.rm import backbone
from orchrm.rm.backbone import DEFAULT_BACKBONE, resolve_backbone


def test_local_folder_is_recorded_by_its_weights_hash(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"w")
    found = resolve_backbone(str(tmp_path))
    assert (found.name, found.sha256) == (str(tmp_path.resolve()), hashlib.sha256(b"w").hexdigest())
    with pytest.raises(ModelError, match="no model.safetensors"):
        resolve_backbone(_empty(tmp_path))
    with pytest.raises(ConfigError, match="unknown backbone"):
        resolve_backbone("no-such-backbone")


def _empty(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    return str(folder)


def test_packaged_backbone_with_other_weights_is_refused(tmp_path, monkeypatch):
    (tmp_path / "model" / "model.safetensors").parent.mkdir()
    (tmp_path / "model" / "model.safetensors").write_bytes(b"swapped")
    monkeypatch.setattr(
        backbone.metadata, "distribution", lambda name: SimpleNamespace(locate_file=lambda p: tmp_path / "model")
    )
    with pytest.raises(ChecksumMismatch, match="model.safetensors has sha256 .* refusing to load it") as err:
        resolve_backbone(DEFAULT_BACKBONE)
    assert "--force-reinstall" in (err.value.hint or "")
