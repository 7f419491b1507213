"""The architectures of the conformance matrix: every `transformers` model family (the pinned 5.24) that
builds offline from a tiny config, each as one data row.

A row names the config class, the model class (a head with a loss), the input kind and the config
arguments that make the model tiny: 2 layers, hidden size 64, at most 4 heads, vocabulary 128, every
dropout probability 0 (so golden and target compute the same function; `faults.py` puts a dropout back
on purpose). Weights are the model's own random initialisation under `torch.manual_seed(seed)`, so two
builds with the same seed hold bit-identical weights. Nothing is downloaded: configs are constructed,
never fetched (`from_pretrained` is not used).

`build(arch, attn="eager", seed=0)` returns a `Built` (model in train mode — dropout probabilities are 0,
so train and eval compute alike, and a training step is what is captured — its batch as keyword
arguments, and `loss(out)`).
`roles(model, arch)` names the modules the fault injectors act on (`faults.py`), found by structure:
the last block of the first stack, its shallowest norm, its first attention (innermost), its first linear,
the rotary embedding. A row may pin a role by name where discovery would pick the wrong module.
"""
import dataclasses

import torch

VOCAB, SEQ, BATCH = 128, 16, 2
HIDDEN, LAYERS, HEADS, FFN = 64, 2, 4, 128
IMAGE, PATCH, CHANNELS, LABELS = 32, 8, 3, 10


@dataclasses.dataclass(frozen=True)
class Arch:
    name: str              # short name used on the command line and in the tables
    config: str            # transformers config class
    model: str             # transformers model class with a loss head
    kind: str              # "causal" | "masked" | "seq2seq" | "image": which batch and labels
    kwargs: dict           # config arguments beyond the common ones of its style
    style: str = "llama"   # which common argument names the config uses (STYLES)
    attention: bool = True  # False: no attention at all (Mamba): attention recipes and faults are n/a
    pin: tuple = ()        # (role, module name) pairs overriding discovery


# Common config arguments per naming style: the same tiny shape under each family's own names.
STYLES = {
    "llama": dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, max_position_embeddings=64),
    "gpt2": dict(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=64),
    "bert": dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                 num_attention_heads=HEADS, max_position_embeddings=64, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0),
    "none": {},
}

NO_DROPOUT_LLAMA = dict(attention_dropout=0.0)

ARCHS = [
    # decoder-only, RMSNorm + RoPE
    Arch("llama", "LlamaConfig", "LlamaForCausalLM", "causal", dict(num_key_value_heads=2, **NO_DROPOUT_LLAMA)),
    Arch("mistral", "MistralConfig", "MistralForCausalLM", "causal",
         dict(num_key_value_heads=2, head_dim=16, **NO_DROPOUT_LLAMA)),
    Arch("qwen2", "Qwen2Config", "Qwen2ForCausalLM", "causal", dict(num_key_value_heads=2, **NO_DROPOUT_LLAMA)),
    Arch("qwen3", "Qwen3Config", "Qwen3ForCausalLM", "causal",
         dict(num_key_value_heads=2, head_dim=16, **NO_DROPOUT_LLAMA)),
    Arch("gemma", "GemmaConfig", "GemmaForCausalLM", "causal",
         dict(num_key_value_heads=2, head_dim=16, **NO_DROPOUT_LLAMA)),
    Arch("gemma2", "Gemma2Config", "Gemma2ForCausalLM", "causal",
         dict(num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16, sliding_window=8, **NO_DROPOUT_LLAMA)),
    Arch("olmo", "OlmoConfig", "OlmoForCausalLM", "causal", dict(num_key_value_heads=2, **NO_DROPOUT_LLAMA)),
    Arch("olmo2", "Olmo2Config", "Olmo2ForCausalLM", "causal", dict(num_key_value_heads=2, **NO_DROPOUT_LLAMA)),
    Arch("phi3", "Phi3Config", "Phi3ForCausalLM", "causal",
         dict(num_key_value_heads=2, resid_pdrop=0.0, embd_pdrop=0.0, pad_token_id=0, **NO_DROPOUT_LLAMA)),
    Arch("starcoder2", "Starcoder2Config", "Starcoder2ForCausalLM", "causal",
         dict(num_key_value_heads=2, residual_dropout=0.0, embedding_dropout=0.0, **NO_DROPOUT_LLAMA)),
    # mixture of experts
    Arch("mixtral", "MixtralConfig", "MixtralForCausalLM", "causal",
         dict(num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, **NO_DROPOUT_LLAMA)),
    Arch("qwen2_moe", "Qwen2MoeConfig", "Qwen2MoeForCausalLM", "causal",
         dict(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
              shared_expert_intermediate_size=64, **NO_DROPOUT_LLAMA)),
    Arch("qwen3_moe", "Qwen3MoeConfig", "Qwen3MoeForCausalLM", "causal",
         dict(num_key_value_heads=2, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
              **NO_DROPOUT_LLAMA)),
    Arch("deepseek_v3", "DeepseekV3Config", "DeepseekV3ForCausalLM", "causal",
         dict(num_key_value_heads=4, moe_intermediate_size=32, n_shared_experts=1, n_routed_experts=4,
              num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1, kv_lora_rank=16,
              q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, **NO_DROPOUT_LLAMA)),
    # decoder-only, LayerNorm
    Arch("phi", "PhiConfig", "PhiForCausalLM", "causal",
         dict(num_key_value_heads=4, resid_pdrop=0.0, embd_pdrop=0.0, **NO_DROPOUT_LLAMA)),
    Arch("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM", "causal",
         dict(hidden_dropout=0.0, **NO_DROPOUT_LLAMA)),
    Arch("gpt2", "GPT2Config", "GPT2LMHeadModel", "causal",
         dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0), style="gpt2"),
    Arch("gptj", "GPTJConfig", "GPTJForCausalLM", "causal",
         dict(rotary_dim=8, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0), style="gpt2"),
    Arch("gpt_neo", "GPTNeoConfig", "GPTNeoForCausalLM", "causal",
         dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS, num_heads=HEADS, max_position_embeddings=64,
              attention_types=[[["global", "local"], 1]], window_size=8, resid_dropout=0.0, embed_dropout=0.0,
              attention_dropout=0.0), style="none"),
    Arch("opt", "OPTConfig", "OPTForCausalLM", "causal",
         dict(ffn_dim=FFN, dropout=0.0, attention_dropout=0.0, layerdrop=0.0), style="llama"),
    Arch("bloom", "BloomConfig", "BloomForCausalLM", "causal",
         dict(vocab_size=VOCAB, hidden_size=HIDDEN, n_layer=LAYERS, n_head=HEADS, hidden_dropout=0.0,
              attention_dropout=0.0), style="none"),
    Arch("falcon", "FalconConfig", "FalconForCausalLM", "causal",
         dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
              max_position_embeddings=64, hidden_dropout=0.0, attention_dropout=0.0), style="none"),
    # state space
    Arch("mamba", "MambaConfig", "MambaForCausalLM", "causal",
         dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, state_size=8, expand=2, conv_kernel=4),
         style="none", attention=False),
    # encoders
    Arch("bert", "BertConfig", "BertForMaskedLM", "masked", {}, style="bert"),
    Arch("roberta", "RobertaConfig", "RobertaForMaskedLM", "masked", dict(pad_token_id=1), style="bert"),
    Arch("electra", "ElectraConfig", "ElectraForMaskedLM", "masked", dict(embedding_size=HIDDEN), style="bert"),
    Arch("distilbert", "DistilBertConfig", "DistilBertForMaskedLM", "masked",
         dict(vocab_size=VOCAB, dim=HIDDEN, hidden_dim=FFN, n_layers=LAYERS, n_heads=HEADS, max_position_embeddings=64,
              dropout=0.0, attention_dropout=0.0), style="none"),
    Arch("vit", "ViTConfig", "ViTForImageClassification", "image",
         dict(hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
              image_size=IMAGE, patch_size=PATCH, num_channels=CHANNELS, num_labels=LABELS, hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0), style="none"),
    # encoder-decoder
    Arch("t5", "T5Config", "T5ForConditionalGeneration", "seq2seq",
         dict(vocab_size=VOCAB, d_model=HIDDEN, d_kv=16, d_ff=FFN, num_layers=LAYERS, num_decoder_layers=LAYERS,
              num_heads=HEADS, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0), style="none"),
    Arch("bart", "BartConfig", "BartForConditionalGeneration", "seq2seq",
         dict(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=LAYERS,
              encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=FFN, decoder_ffn_dim=FFN,
              max_position_embeddings=64, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
              encoder_layerdrop=0.0, decoder_layerdrop=0.0), style="none"),
]
BY_NAME = {a.name: a for a in ARCHS}


@dataclasses.dataclass
class Built:
    arch: Arch
    model: torch.nn.Module
    batch: dict            # keyword arguments of model(...)

    def loss(self, out):
        return out.loss


def config_of(arch, attn="eager"):
    import transformers
    kw = dict(STYLES[arch.style])
    kw.update(arch.kwargs)
    cfg = getattr(transformers, arch.config)(**kw)
    cfg._attn_implementation = attn
    return cfg


def batch_of(arch, generator_seed=1):
    """Deterministic inputs and labels for one training step of `arch` (the same for every recipe)."""
    g = torch.Generator().manual_seed(generator_seed)
    if arch.kind == "image":
        pixels = torch.randn(BATCH, CHANNELS, IMAGE, IMAGE, generator=g)
        return {"pixel_values": pixels, "labels": torch.randint(0, LABELS, (BATCH,), generator=g)}
    # token 0 .. 2 are pad / bos / eos in several configs; labels that are the pad id would be ignored
    ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
    if arch.kind == "seq2seq":
        return {"input_ids": ids, "labels": torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)}
    return {"input_ids": ids, "labels": ids.clone()}


def build(arch, attn="eager", seed=0):
    """The tiny model of `arch` with seeded random weights (fp32), and its batch. `attn` is the attention
    implementation ("eager" or "sdpa"); a model class that does not support it raises ValueError."""
    import transformers
    if isinstance(arch, str):
        arch = BY_NAME[arch]
    cfg = config_of(arch, attn)
    torch.manual_seed(seed)
    model = getattr(transformers, arch.model)(cfg)
    model.train()
    if arch.attention and model.config._attn_implementation != attn:
        raise ValueError("{} built with attention {!r}, asked for {!r}".format(
            arch.name, model.config._attn_implementation, attn))
    return Built(arch, model, batch_of(arch))


# ---- roles: the modules a fault is injected into ------------------------------------------------------------

def _is_norm(mod):
    return "norm" in type(mod).__name__.lower()


def _is_attention(mod):
    n = type(mod).__name__
    return n.endswith("Attention") or n.endswith("SelfAttention")


def _is_linear(mod):
    return isinstance(mod, torch.nn.Linear) or type(mod).__name__ == "Conv1D"


def _blocks(model):
    """Names of the blocks of the first stack of LAYERS identical blocks (decoder layers, encoder layers)."""
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and len(mod) == LAYERS:
            kinds = {type(m).__name__ for m in mod}
            if len(kinds) == 1 and sum(1 for _ in mod[0].modules()) > 3:
                return ["{}.{}".format(name, i) for i in range(len(mod))]
    raise LookupError("no stack of {} blocks".format(LAYERS))


def _first_inside(model, prefix, pred):
    for name, mod in model.named_modules():
        if name.startswith(prefix + ".") and pred(mod):
            return name
    return None


def _shallowest_inside(model, prefix, pred):
    """The module inside `prefix` satisfying `pred` nearest to it (fewest name components), first in
    registration order among equals: a block's own norm before a norm inside its attention (Qwen3's q_norm)."""
    found = [(name.count("."), i, name) for i, (name, mod) in enumerate(model.named_modules())
             if name.startswith(prefix + ".") and pred(mod)]
    return min(found)[2] if found else None


def _innermost(model, name, pred):
    """The deepest module at or under `name` satisfying `pred` along the first path: BertAttention ->
    BertSelfAttention, T5LayerSelfAttention -> T5Attention (where the scores and the softmax are)."""
    inner = _first_inside(model, name, pred)
    return _innermost(model, inner, pred) if inner else name


def roles(model, arch):
    """{role: module name} for the fault injectors: `block` (the last block of the first stack), `norm`
    (its shallowest norm), `attention` (its first attention module, innermost), `linear` (its first Linear /
    Conv1D), `rotary` (the first module holding an `inv_freq` buffer; None without RoPE)."""
    block = _blocks(model)[-1]
    attention = _first_inside(model, block, _is_attention) if arch.attention else None
    out = {
        "block": block,
        "norm": _shallowest_inside(model, block, _is_norm),
        "attention": _innermost(model, attention, _is_attention) if attention else None,
        "linear": _first_inside(model, block, _is_linear),
        "rotary": next((n for n, m in model.named_modules() if "inv_freq" in dict(m.named_buffers(recurse=False))),
                       None),
    }
    out.update(dict(arch.pin))
    return out
