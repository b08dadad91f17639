"""The loaders behind --loader: options, folders, and (with torch) the batches they give."""

import argparse

import pytest

from benchmate.dataloader import LOADERS, data_folder, dataloader_arguments, imagenet_dataloader


def parse(*argv):
    parser = argparse.ArgumentParser()
    dataloader_arguments(parser)
    return parser.parse_args(list(argv))


def test_options_and_their_defaults():
    args = parse()
    assert (args.batch_size, args.loader, args.num_workers, args.data) == (16, "pytorch", 8, None)
    args = parse("--batch-size", "4", "--loader", "synthetic_fixed", "--num-workers", "0", "--data", "/d")
    assert (args.batch_size, args.loader, args.num_workers, args.data) == (4, "synthetic_fixed", 0, "/d")
    with pytest.raises(SystemExit):
        parse("--loader", "dail")


def test_the_dataset_folder_is_data_or_the_prepared_one(monkeypatch):
    assert data_folder(parse("--data", "/d")) == "/d"
    monkeypatch.setenv("MILABENCH_DIR_DATA", "/base")
    assert data_folder(parse()) == "/base/FakeImageNet"
    monkeypatch.delenv("MILABENCH_DIR_DATA")
    with pytest.raises(SystemExit, match="pass --data or set MILABENCH_DIR_DATA"):
        data_folder(parse())


def test_an_unknown_loader_is_refused():
    args = argparse.Namespace(loader="nope", data="/d", batch_size=1, num_workers=0)
    with pytest.raises(ValueError, match="unknown loader 'nope'; choose one of " + ", ".join(LOADERS)):
        imagenet_dataloader(args, model=None)


def test_a_missing_dataset_says_to_prepare(tmp_path):
    pytest.importorskip("torchvision")
    args = parse("--data", str(tmp_path / "none"), "--num-workers", "0")
    with pytest.raises(SystemExit, match="run the benchmark's prepare step first"):
        imagenet_dataloader(args, model=None)


def test_synthetic_loaders_give_model_shaped_batches():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(5))
    fixed = imagenet_dataloader(parse("--loader", "synthetic_fixed", "--batch-size", "2"), model)
    assert len(fixed) == 1000
    first, second = next(iter(fixed)), list(zip(range(2), fixed))[1][1]
    assert [tuple(t.shape) for t in first] == [(2, 3, 244, 244), (2, 5)]
    assert all(a is b for a, b in zip(first, second))
    random = iter(imagenet_dataloader(parse("--loader", "synthetic_random", "--batch-size", "2"), model))
    one, two = next(random), next(random)
    assert [tuple(t.shape) for t in one] == [(2, 3, 244, 244), (2, 5)]
    assert not torch.equal(one[0], two[0])


def test_the_in_memory_fake_dataset():
    pytest.importorskip("torch")
    loader = imagenet_dataloader(
        parse("--loader", "pytorch_fakedataset", "--batch-size", "2", "--num-workers", "0"), None
    )
    images, labels = next(iter(loader))
    assert tuple(images.shape) == (2, 3, 224, 224) and tuple(labels.shape) == (2,)
    assert len(loader) == 60


def test_the_folder_loader_reads_the_prepared_dataset(tmp_path):
    pytest.importorskip("torchvision")
    from benchmate.datagen import generate_fakeimagenet

    generate_fakeimagenet(
        argparse.Namespace(
            batch_size=3,
            batch_count=2,
            device_count=1,
            image_size=[3, 32, 32],
            val=0,
            test=0,
            output=str(tmp_path),
        )
    )
    args = parse("--data", str(tmp_path / "FakeImageNet"), "--batch-size", "2", "--num-workers", "0")
    batches = list(imagenet_dataloader(args, model=None))
    assert [tuple(images.shape) for images, _ in batches] == [(2, 3, 224, 224)] * 3
    assert sorted(int(label) for _, labels in batches for label in labels) == list(range(6))
    ranked = imagenet_dataloader(args, model=None, rank=1, world_size=2)
    assert len(ranked.sampler) == 3
