"""benchit on real model code (issue 53): transformers and timm models built from their
configurations (tiny, nothing downloaded), exported with torchscript and timed on ONNX Runtime
and torch, and a script that downloads from the Hugging Face Hub told so.

Needs torch, onnx, onnxruntime and transformers or timm: ``cargo xtask e2e`` runs it in the
environment ``benchit --with transformers timm`` makes; skipped where a package is missing.
"""

from __future__ import annotations

import pathlib
import textwrap

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from benchit_driver import (  # noqa: E402 - after the skips
    build_replier,
    of_kind,
    run_in_process,
    run_worker,
    script_request,
)

EXTRA = pathlib.Path(__file__).resolve().parents[2] / "benchit" / "extra"


@pytest.mark.parametrize("script, package, models", [
    ("transformers_models.py", "transformers", 3),
    ("timm_models.py", "timm", 2),
])
def test_model_zoo_scripts_build_and_run(tmp_path: pathlib.Path, script: str, package: str,
                                         models: int) -> None:
    """Every model of the script exports with torchscript (BERT and RoBERTa are called with
    keyword arguments; no fallback to the dynamo exporter), optimises, and runs on ONNX Runtime
    and in torch."""
    pytest.importorskip(package)
    events, status = run_in_process(script_request(EXTRA / script), build_replier(
        tmp_path, runtimes=("ort", "torch-eager"), iterations=3, warmup=1, exporter="auto"))
    assert status == 0
    assert of_kind(events, "script_error") == []
    stages = of_kind(events, "stage")
    assert [(s["stage"], s["status"]) for s in stages] == [("export", "ok"), ("optimize", "ok")] \
        * models, stages
    assert all(s["message"] is None for s in stages if s["stage"] == "export"), stages
    benchmarks = of_kind(events, "benchmark")
    assert [(b["runtime"], b["status"]) for b in benchmarks] == \
        [("ort", "ok"), ("torch-eager", "ok")] * models, [b.get("message") for b in benchmarks]


def test_bert_with_keyword_arguments_runs_from_the_dynamo_export(tmp_path: pathlib.Path) -> None:
    """The dynamo exporter's BERT is a model whose ONNX Runtime optimisation, once saved, ONNX
    Runtime refuses to load ("Attempt to replace the existing tensor"): the build keeps the
    exported model, says so, and ONNX Runtime runs it."""
    pytest.importorskip("transformers")
    script = tmp_path / "bert.py"
    script.write_text(textwrap.dedent("""
        import torch
        from transformers import BertConfig, BertModel

        model = BertModel(BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, vocab_size=1000)).eval()
        ids = torch.randint(0, 1000, (2, 16))
        with torch.no_grad():
            model(input_ids=ids, attention_mask=torch.ones(2, 16, dtype=torch.long))
    """))
    events, status = run_in_process(script_request(script), build_replier(
        tmp_path / "builds", runtimes=("ort",), iterations=3, warmup=1, exporter="dynamo"))
    assert status == 0
    stages = of_kind(events, "stage")
    assert [(s["stage"], s["status"]) for s in stages] == [("export", "ok"), ("optimize", "ok")]
    (info,) = of_kind(events, "onnx_info")
    assert list(info["inputs"]) == ["input_ids", "attention_mask"], info
    assert [(b["runtime"], b["status"]) for b in of_kind(events, "benchmark")] == [("ort", "ok")], \
        of_kind(events, "benchmark")


def test_a_script_loading_pretrained_weights_says_it_tried_to_download(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``from_pretrained`` with the Hub out of reach (offline mode, an empty cache) fails the
    script with a message that says it tried to download from the Hugging Face Hub."""
    pytest.importorskip("transformers")
    script = tmp_path / "pretrained.py"
    script.write_text("from transformers import AutoModel\n"
                      "AutoModel.from_pretrained('bert-base-uncased')\n")
    # The worker runs in a process of its own: huggingface_hub reads these when imported.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    events, status, log = run_worker(script_request(script, analyze_only=True), timeout=300)
    assert status == 0, log
    (error,) = of_kind(events, "script_error")
    assert error["message"].startswith(
        "the script tried to download from the Hugging Face Hub"), error["message"]
