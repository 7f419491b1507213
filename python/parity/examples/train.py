"""A small training loop used by the tests, the demo and the benchmarks.

train(model, corpus, steps, ...) runs AdamW steps on deterministic batches, optionally under a
capture (logging loss, grad_norm and lr every step and calling cap.next_step()), and returns the loss
per step. `on_step(step, loss)` lets callers inject faults or stop early.
"""
import torch
import torch.nn.functional as F


def train(model, corpus, steps=3, batch_size=4, seq_len=16, lr=3e-3, capture=None, clip=1.0, on_step=None,
          optimizer=None):
    model.train()
    opt = optimizer or torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    losses = []
    for step in range(steps):
        x, y = corpus.batch(step, batch_size, seq_len)
        logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), clip) if clip else None
        opt.step()
        losses.append(float(loss.detach()))
        if capture is not None:
            capture.log(loss=loss, grad_norm=gn if gn is not None else float("nan"), lr=lr)
            capture.next_step()
        if on_step is not None:
            on_step(step, losses[-1])
    return losses
