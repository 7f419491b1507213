# One training step of an HF Llama (4 layers, d = 512, batch 4 x 128, 2 threads): median of 5 steps with no
# capture or with parity.capture (statistics) at the level given; run once per package to compare two versions
# of the capture (docs/benchmarks.md "Capture after issue 28"). Usage: capture_hf_step.py none|module|op
import sys, time, statistics, tempfile, torch, transformers
level = sys.argv[1]
torch.manual_seed(0); torch.set_num_threads(2)
cfg = transformers.LlamaConfig(vocab_size=1024, hidden_size=512, intermediate_size=1024, num_hidden_layers=4,
                               num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=256)
m = transformers.LlamaForCausalLM(cfg)
ids = torch.randint(0, 1024, (4, 128))
def step():
    out = m(input_ids=ids, labels=ids); out.loss.backward(); m.zero_grad(set_to_none=True)
step()
ts = []
for _ in range(5):
    t = time.perf_counter()
    if level == "none":
        step()
    else:
        import parity
        with tempfile.TemporaryDirectory() as d:
            with parity.capture(m, d, level=level, mode="statistics") as cap:
                step(); cap.next_step()
    ts.append(time.perf_counter() - t)
print(level, statistics.median(ts))
