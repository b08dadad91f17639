#!/usr/bin/env python
"""Transformer language-model training with Hugging Face transformers, random weights.

Models are built from configurations written here (nothing is downloaded): ``bert`` (masked
LM, BERT-base shape), ``gpt2`` (causal LM, GPT-2 small shape), ``llama-tiny`` (Llama-style causal
LM, 4 layers of width 512), ``t5`` (encoder-decoder, T5-small shape). ``--num-layers`` and
``--hidden-size`` shrink them (the CPU suite does). Batches are random tokens; a small fixed set of
them is cycled, so the loss falls as the model memorises it. Throughput is in sequences per
second.
"""

from __future__ import annotations

import argparse
import itertools

import torch

from benchmate.observer import BenchObserver
from benchmate.options import add_common_arguments, optimizer_step, pick_device, precision_for

MODELS = ("bert", "gpt2", "llama-tiny", "t5")


def parse_args() -> argparse.Namespace:
    """The options of this benchmark."""
    parser = argparse.ArgumentParser(description="Transformer language-model training.")
    add_common_arguments(parser, batch_size=8)
    parser.add_argument("--model", default="bert", choices=MODELS)
    parser.add_argument("--seq-len", type=int, default=512, help="tokens per sequence")
    parser.add_argument("--num-layers", type=int, default=None, help="layers (default: the model's)")
    parser.add_argument("--hidden-size", type=int, default=None, help="width (default: the model's)")
    parser.add_argument("--vocab-size", type=int, default=32000, help="vocabulary size")
    parser.add_argument("--num-workers", type=int, default=0, help="unused: batches are synthetic")
    parser.add_argument("--lr", type=float, default=1e-4, help="AdamW learning rate")
    parser.add_argument("--distinct-batches", type=int, default=4, help="random batches cycled")
    parser.add_argument("--steps", type=int, default=100000, help="upper bound on steps")
    return parser.parse_args()


def build_model(args: argparse.Namespace) -> torch.nn.Module:
    """The model named by ``--model`` with random weights."""
    import transformers as tf

    layers, width, vocab = args.num_layers, args.hidden_size, args.vocab_size

    def heads(default_width: int, default_heads: int) -> int:
        return max(1, (width or default_width) // (default_width // default_heads))

    if args.model == "bert":
        config = tf.BertConfig(
            vocab_size=vocab, num_hidden_layers=layers or 12, hidden_size=width or 768,
            num_attention_heads=heads(768, 12), intermediate_size=4 * (width or 768),
            max_position_embeddings=max(512, args.seq_len),
        )
        return tf.BertForMaskedLM(config)
    if args.model == "gpt2":
        config = tf.GPT2Config(
            vocab_size=vocab, n_layer=layers or 12, n_embd=width or 768, n_head=heads(768, 12),
            n_positions=max(1024, args.seq_len),
        )
        return tf.GPT2LMHeadModel(config)
    if args.model == "llama-tiny":
        config = tf.LlamaConfig(
            vocab_size=vocab, num_hidden_layers=layers or 4, hidden_size=width or 512,
            num_attention_heads=heads(512, 8), num_key_value_heads=heads(512, 8),
            intermediate_size=(width or 512) * 8 // 3, max_position_embeddings=max(2048, args.seq_len),
        )
        return tf.LlamaForCausalLM(config)
    config = tf.T5Config(
        vocab_size=vocab, num_layers=layers or 6, num_decoder_layers=layers or 6,
        d_model=width or 512, d_kv=64, num_heads=heads(512, 8), d_ff=4 * (width or 512),
        decoder_start_token_id=0, pad_token_id=0,
    )
    return tf.T5ForConditionalGeneration(config)


def make_batch(args: argparse.Namespace, device: torch.device, generator: torch.Generator) -> dict:
    """One batch of random tokens with the labels the model's objective needs."""
    shape = (args.batch_size, args.seq_len)
    tokens = torch.randint(1, args.vocab_size, shape, generator=generator)
    if args.model == "bert":
        labels = tokens.clone()
        masked = torch.rand(shape, generator=generator) < 0.15
        labels[~masked] = -100
        inputs = tokens.masked_fill(masked, 1)
        batch = {"input_ids": inputs, "labels": labels}
    elif args.model == "t5":
        targets = torch.randint(1, args.vocab_size, (args.batch_size, max(8, args.seq_len // 4)), generator=generator)
        batch = {"input_ids": tokens, "labels": targets}
    else:
        batch = {"input_ids": tokens, "labels": tokens}
    return {key: value.to(device) for key, value in batch.items()}


def main() -> None:
    """Trains until the observer has its observations."""
    args = parse_args()
    device = pick_device(args.device)
    precision = precision_for(args.precision, device)
    torch.manual_seed(0)
    model = build_model(args).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = precision.grad_scaler()
    generator = torch.Generator().manual_seed(0)
    batches = [make_batch(args, device, generator) for _ in range(args.distinct_batches)]
    observer = BenchObserver(device=device, batch_size_fn=lambda b: len(b["input_ids"]))
    for batch in observer.loader(itertools.islice(itertools.cycle(batches), args.steps)):
        with precision.autocast():
            loss = observer.record_loss(model(**batch).loss)
        optimizer_step(loss, optimizer, scaler)
        if observer.done:
            break


if __name__ == "__main__":
    main()
