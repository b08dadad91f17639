"""Three transformers models built from their configurations (no download; tiny: 2 layers,
hidden size 64) and called the way scripts call them: BERT and RoBERTa with `input_ids` and
`attention_mask` as keyword arguments, GPT-2 with its ids by position and the mask by keyword.
Needs transformers (`benchit transformers_models.py --with transformers`)."""

import torch
from transformers import AutoConfig, AutoModel, BertConfig, BertModel, GPT2Config, GPT2Model

torch.manual_seed(0)

SIZE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 64}

bert = BertModel(BertConfig(**SIZE)).eval()
roberta = AutoModel.from_config(AutoConfig.for_model("roberta", **SIZE, pad_token_id=1)).eval()
gpt2 = GPT2Model(GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=1000,
                            n_positions=64)).eval()

input_ids = torch.randint(2, 1000, (2, 16))
attention_mask = torch.ones(2, 16, dtype=torch.long)
with torch.no_grad():
    encoded = bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    roberta_encoded = roberta(input_ids=input_ids, attention_mask=attention_mask)[0]
    decoded = gpt2(input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
print("bert:", tuple(encoded.shape), "roberta:", tuple(roberta_encoded.shape),
      "gpt2:", tuple(decoded.shape))
