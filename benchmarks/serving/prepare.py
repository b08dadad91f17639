#!/usr/bin/env python
"""Prepare step of the serving benchmark: make the model the server loads.

The model is a small Llama-shaped causal language model with random weights and a word-level
tokenizer, built from a configuration on this machine: nothing is downloaded from a model hub.
It receives the benchmark's arguments (those of ``milabench load``) and reads only ``--model``,
the folder to write. Serving speed depends on the shapes (layers, width, vocabulary), not on
what the weights learned, so a random model measures the server and the machine honestly.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# The words the load generator's synthetic prompts are made of, so each is one token.
PROMPT_WORDS = [
    "the", "of", "and", "to", "in", "is", "that", "for",
    "it", "as", "was", "with", "on", "be", "at", "by",
]
SPECIAL = ["<unk>", "<s>", "</s>"]
SHAPE = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 4096,
}
VOCABULARY_SIZE = 2048


def vocabulary() -> dict[str, int]:
    """Special tokens, the prompt words, then made-up words up to the vocabulary size."""
    words = SPECIAL + PROMPT_WORDS
    words += [f"w{i}" for i in range(VOCABULARY_SIZE - len(words))]
    return {word: index for index, word in enumerate(words)}


def build(folder: Path) -> None:
    """Write the tokenizer and the model into ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = vocabulary()
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(vocab), bos_token_id=1, eos_token_id=None, pad_token_id=None, **SHAPE
    )
    model = LlamaForCausalLM(config)
    # No end-of-sequence token: every answer is as long as the request's max_tokens, so the
    # output lengths are the ones the load generator asked for.
    model.generation_config.eos_token_id = None
    model.save_pretrained(folder)
    fast.save_pretrained(folder)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="folder to write the model into")
    args, _ = parser.parse_known_args(argv)
    folder = Path(args.model)
    marker = folder / "milabench-model.json"
    wanted = {"shape": SHAPE, "vocabulary": VOCABULARY_SIZE}
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        print(f"model ready in {folder}")
        return
    folder.mkdir(parents=True, exist_ok=True)
    build(folder)
    marker.write_text(json.dumps(wanted))
    print(f"model written to {folder}")


if __name__ == "__main__":
    main()
