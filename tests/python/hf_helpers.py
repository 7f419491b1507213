"""What the tests of a real `transformers.Trainer` run share: a tiny in-memory causal-LM dataset and a tiny
random-init Llama config (no downloads, CPU)."""
import torch


class TokenDataset(torch.utils.data.Dataset):
    """`n` random token sequences of length `seq` (seeded), each its own labels."""

    def __init__(self, n, seq=16, vocab=128, seed=0):
        self.ids = torch.randint(0, vocab, (n, seq), generator=torch.Generator().manual_seed(seed))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def tiny_llama_config(transformers, vocab=128, hidden=32, layers=1, kv_heads=1, positions=32):
    return transformers.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                                    num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=kv_heads,
                                    max_position_embeddings=positions)
