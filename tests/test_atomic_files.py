"""The one way sembed writes a file whole (`io/atomic_files.py`) and the one checkpoint policy of training."""

from __future__ import annotations

import json
import os

import pytest

from sembed_cli.io import atomic_path, write_json_atomic


def test_a_file_is_replaced_whole_and_no_temporary_stays(tmp_path):
    path = tmp_path / "meta.json"
    path.write_text("old")
    write_json_atomic(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path):
    path = tmp_path / "cache.npz"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(path) as partial:
        partial.write_text("half")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["cache.npz"]


def test_durable_syncs_the_file_and_its_directory(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda descriptor: synced.append(descriptor) or real(descriptor))
    write_json_atomic(tmp_path / "a.json", {})
    assert synced == []
    write_json_atomic(tmp_path / "b.json", {}, durable=True)
    assert len(synced) == 2  # the file before the rename, the directory after


def test_checkpoints_keep_the_newest_two(tmp_path):
    pytest.importorskip("torch")
    from sembed_cli.training import checkpoints
    from sembed_cli.training.epoch_loop import EpochLoop

    loop = EpochLoop(tmp_path, None, total=4, state=lambda: {"n": loop.step}, counted="epoch")
    for _epoch, _done in loop.epochs():
        loop.advance()
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["checkpoint-2", "checkpoint-3"]  # none after the last epoch: the model is written next
    assert json.loads((tmp_path / "checkpoint-3" / checkpoints.STATE_FILE).read_text()) == {"epoch": 3}
    resumed = EpochLoop(tmp_path, checkpoints.latest(tmp_path), total=4, state=dict)
    assert resumed.step == 3 and resumed.saved == {"n": 3} and next(resumed.epochs()) == (3, 0)
