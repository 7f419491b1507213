"""parity.integrations.hf.ParityCallback on a real `transformers.Trainer` run (issue 12 §3): a tiny Llama
(random init, no downloads) trained 3 steps on CPU on a tiny in-memory dataset; the capture holds the
recorded step's module events and, per step, the Trainer's own loss / grad_norm / learning_rate."""
import json

import pytest
import torch

import parity

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

STEPS = 3


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n=STEPS * 2, seq=16, vocab=128):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def test_trainer_run_logs_scalars_per_step(tmp_path):
    from parity.integrations.hf import ParityCallback

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    model = transformers.LlamaForCausalLM(cfg)
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                                          max_steps=STEPS, logging_steps=1, learning_rate=1e-3, report_to=[],
                                          save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True)
    cap = parity.capture(model, str(tmp_path / "run"), level="module", steps=[0])
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[ParityCallback(cap)])
    with cap:
        trainer.train()
    run = parity.load(str(tmp_path / "run"))
    assert {r.step for r in run.records} == {0}  # steps=[0]: events of the first optimizer step only
    assert "model.layers.0.self_attn.q_proj/forward/output/0" in run.names(0, 0)
    assert "model.layers.0.self_attn.q_proj/backward/grad/weight" in run.names(0, 0)
    logged = [e for e in trainer.state.log_history if "loss" in e]
    assert len(logged) == STEPS
    for key in ("loss", "grad_norm", "learning_rate"):
        series = run.scalar_series(key)
        # one value per optimizer step, in the capture step that produced it (0, 1, 2)
        assert [s for s, _ in series] == list(range(STEPS)), (key, series)
        assert [v for _, v in series] == pytest.approx([e[key] for e in logged]), (key, series)
