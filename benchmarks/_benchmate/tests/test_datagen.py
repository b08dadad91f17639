"""The fake ImageNet of prepare.py scripts: sizes, names, labels, and preparing again."""

import argparse
import json
import sys

import pytest

from benchmate import datagen
from benchmate.datagen import device_count, fakeimagenet_args, generate_fakeimagenet, split_sizes


def options(tmp_path, **changes):
    values = dict(
        batch_size=4,
        batch_count=2,
        device_count=1,
        device=None,
        image_size=[3, 16, 24],
        val=0.5,
        test=0.25,
        output=str(tmp_path),
    )
    values.update(changes)
    return argparse.Namespace(**values)


def test_split_sizes_follow_batches_and_devices(monkeypatch):
    monkeypatch.delenv("MILABENCH_TESTING_PREPARE", raising=False)
    args = argparse.Namespace(batch_size=8, batch_count=10, device_count=2, val=0.1, test=0.25)
    assert split_sizes(args) == {"train": 160, "val": 16, "test": 40}
    monkeypatch.setenv("MILABENCH_TESTING_PREPARE", "2,3")
    assert split_sizes(args) == {"train": 12, "val": 1, "test": 3}


def test_arguments_come_from_the_command_line_and_the_environment(monkeypatch):
    monkeypatch.setenv("MILABENCH_DIR_DATA", "/data")
    args = fakeimagenet_args(
        ["--batch-size", "64", "--model", "resnet50", "--image-size", "3", "32", "32", "--device-count", "2"]
    )
    assert (args.batch_size, args.batch_count, args.device_count) == (64, 60, 2)
    assert args.image_size == [3, 32, 32] and args.output == "/data" and (args.val, args.test) == (0.1, 0.1)


def test_without_torch_there_is_one_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert device_count() == 1
    assert fakeimagenet_args([]).device_count == 1


def test_an_output_folder_is_required(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="pass --output or set MILABENCH_DIR_DATA"):
        generate_fakeimagenet(options(tmp_path, output=None))


def test_image_names_are_imagenets(tmp_path):
    assert datagen.image_path("/d/train", "train", 1234) == "/d/train/234/234_1234.JPEG"
    assert datagen.image_path("/d/val", "val", 3) == "/d/val/3/ILSVRC2012_val_00000003.JPEG"


def files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_tiny_dataset_is_written_and_completed_on_the_next_prepare(tmp_path, monkeypatch):
    image = pytest.importorskip("PIL.Image", reason="Pillow (which writes the images) is not installed")
    monkeypatch.delenv("MILABENCH_TESTING_PREPARE", raising=False)
    generate_fakeimagenet(options(tmp_path))
    root = tmp_path / "FakeImageNet"
    written = files(root)
    assert len([f for f in written if f.startswith("train/")]) == 8
    assert "train/7/7_7.JPEG" in written and "val/3/ILSVRC2012_val_00000003.JPEG" in written
    assert "test/1/ILSVRC2012_test_00000001.JPEG" in written
    assert len([f for f in written if f.startswith("val/")]) == 4
    assert len([f for f in written if f.startswith("test/")]) == 2
    assert (root / "labels.txt").read_text() == "".join(f"{i},{i}\n" for i in range(8))
    assert json.loads((root / "done").read_text()) == {"train": 8, "val": 4, "test": 2}
    with image.open(root / "train/5/5_5.JPEG") as picture:
        assert (picture.size, picture.mode) == ((24, 16), "RGB")

    first = {f: (root / f).stat().st_mtime_ns for f in written if f.endswith(".JPEG")}
    generate_fakeimagenet(options(tmp_path, batch_count=3))
    again = files(root)
    assert len([f for f in again if f.startswith("train/")]) == 12
    assert all((root / f).stat().st_mtime_ns == first[f] for f in first)  # nothing rewritten
    assert "train/11/11_11.JPEG" in again

    other = tmp_path / "other"
    generate_fakeimagenet(options(other))
    same = "train/5/5_5.JPEG"
    assert (other / "FakeImageNet" / same).read_bytes() == (root / same).read_bytes()


def test_image_shapes_must_be_channels_height_width(tmp_path):
    with pytest.raises(ValueError, match="CHANNELS HEIGHT WIDTH"):
        generate_fakeimagenet(options(tmp_path, image_size=[4, 8, 8]))
