"""Deterministic training data that needs no download.

SyntheticCorpus: tokens from a fixed random bigram language model (a sparse, peaked transition table
drawn from a seeded generator), so a model can actually learn something in a few dozen steps and the
loss curve means something. text_corpus: bytes of text files the machine already has (licences under
/usr/share/common-licenses), as a vocabulary-256 corpus; falls back to the synthetic one.
"""
import glob

import torch


class SyntheticCorpus:
    def __init__(self, vocab_size=256, n_tokens=1 << 16, seed=1234, branching=4):
        g = torch.Generator().manual_seed(seed)
        # each token has `branching` likely successors with geometric weights
        succ = torch.randint(0, vocab_size, (vocab_size, branching), generator=g)
        weights = torch.tensor([0.5 ** i for i in range(branching)])
        choice = torch.multinomial(weights.expand(n_tokens, -1), 1, replacement=True, generator=g).squeeze(1)
        noise = torch.rand(n_tokens, generator=g) < 0.05
        rand_tok = torch.randint(0, vocab_size, (n_tokens,), generator=g)
        toks = torch.empty(n_tokens, dtype=torch.long)
        toks[0] = 0
        succ_l, choice_l, noise_l, rand_l = succ.tolist(), choice.tolist(), noise.tolist(), rand_tok.tolist()
        prev = 0
        out = [0] * n_tokens
        for i in range(1, n_tokens):
            prev = rand_l[i] if noise_l[i] else succ_l[prev][choice_l[i]]
            out[i] = prev
        toks = torch.tensor(out, dtype=torch.long)
        self.tokens = toks
        self.vocab_size = vocab_size

    def batch(self, step, batch_size, seq_len):
        """(inputs, targets) of `step`: the same step always gives the same batch."""
        return batch_from(self.tokens, step, batch_size, seq_len)


def batch_from(tokens, step, batch_size, seq_len):
    n = tokens.numel() - seq_len - 1
    g = torch.Generator().manual_seed(10007 * step + 17)
    starts = torch.randint(0, n, (batch_size,), generator=g)
    idx = starts[:, None] + torch.arange(seq_len + 1)[None, :]
    chunk = tokens[idx]
    return chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()


class _TextCorpus:
    def __init__(self, tokens):
        self.tokens = tokens
        self.vocab_size = 256

    def batch(self, step, batch_size, seq_len):
        return batch_from(self.tokens, step, batch_size, seq_len)


def text_corpus(pattern="/usr/share/common-licenses/*", min_bytes=1 << 16):
    data = bytearray()
    for f in sorted(glob.glob(pattern)):
        try:
            with open(f, "rb") as fh:
                data += fh.read()
        except OSError:
            continue
    if len(data) < min_bytes:
        return SyntheticCorpus(256)
    return _TextCorpus(torch.tensor(list(data), dtype=torch.long))
