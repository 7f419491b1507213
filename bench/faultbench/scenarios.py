"""The scenarios of the fault benchmark.

A scenario is a golden and a target run of one model family that differ by exactly one known cause,
both captured with ``parity.capture(model, dir, level="mix", mode="tensor")`` (``mode="statistics"`` for
the statistics-mode scenarios), seeded identically (``parity.seed_all``), normally one training step
(forward + backward, no optimizer: step 0's gradients are compared); the optimizer scenarios run three
steps and capture steps 0-2; the rank scenario captures two ranks into one run directory.

Each scenario declares what a careful expert would answer, independently of what parity does today:

- ``kind``: ``benign`` (numerically equivalent: rounding / summation order / a precision the user chose
  on purpose; ``parity compare`` must exit 0) or ``fault`` (must be judged ``fail``);
- ``location``: the module path of the injected change (the top suspect must be it or inside it), or
  ``None`` where the cause has no module (a loss scale applied to every gradient, an optimizer
  setting): location is then not scored, except that ``location_step`` (optimizer settings: 1, the
  first step whose inputs the optimizer changed) must be the top suspect's step; ``location_rank``
  (the rank scenario) must be its rank;
- ``expected``: diagnosis codes naming the cause; for a fault at least one must appear. For a benign
  scenario they are optional (``ACCUMULATION_NOISE``: "differences are rounding");
- ``allowed``: codes that are also true statements about this pair and therefore not false alarms
  (``CONFIG_DIFF`` only where the captured configuration really differs: dtypes, autocast);
  ``OUTLIERS`` (strength 1, a description of where error concentrates, not a cause) is allowed for
  every fault.

The ``why`` of each scenario says why the expectation is the right answer. Low precision is a fault only
where it is catastrophic (fp16 overflow of x², cancellation in a batch norm of uncentred data): a norm or
softmax merely computed in bf16 differs by bf16 rounding, like the benign autocast runs, and an expert
would not call that a different function.
"""
import contextlib
import dataclasses
import os
import typing

import torch

import parity

from . import faults as fx
from .models import FAMILIES, VOCAB

SEED = 1234


@dataclasses.dataclass
class Scenario:
    name: str
    family: str
    kind: str                      # "benign" | "fault"
    build: typing.Callable         # build(dir: pathlib.Path) -> None, writes dir/golden and dir/target
    expected: tuple = ()
    allowed: tuple = ()
    location: typing.Optional[str] = None
    location_rank: typing.Optional[int] = None
    location_step: typing.Optional[int] = None  # where the error must first be created (drift scenarios)
    mode: str = "tensor"
    fast: bool = False
    why: str = ""

    def acceptable(self):
        """Codes that are not false alarms here."""
        extra = ("OUTLIERS",) if self.kind == "fault" else ()
        return set(self.expected) | set(self.allowed) | set(extra)


SCENARIOS = []


def scenario(**kw):
    def register(build):
        SCENARIOS.append(Scenario(build=build, why=(build.__doc__ or "").strip(), **kw))
        return build
    return register


# ---- capturing one run --------------------------------------------------------------------------------------

# Where both runs compute: the CPU, or an accelerator named by $PARITY_FAULTBENCH_DEVICE ("cuda"): the same
# scenarios judged on GPU kernels (bench/gpu/).
DEVICE = os.environ.get("PARITY_FAULTBENCH_DEVICE", "cpu")


def capture_run(path, model, family, *, mode="tensor", autocast=None, steps=1, optimizer=None, rank=0,
                edit_batch=None, reseed=None):
    """Train `model` for `steps` steps under a level="mix" capture of every step into `path`.

    autocast: a dtype to run the forward under torch.autocast("cpu", dtype) (capture starts inside it, so
    the fingerprint records the autocast state the run computes under); optimizer: params -> optimizer;
    its update for step k runs at the start of step k + 1 (the same arithmetic as a usual loop; step 0's
    capture then holds forward and backward only, and the update that uses step 0's gradients is in
    step 1, where its result is first used); edit_batch: inputs -> inputs, applied to the data before
    the capture starts; reseed: a torch seed set right before the forward (a generator state the golden
    does not have)."""
    fam = FAMILIES[family]
    parity.seed_all(SEED, deterministic=True)
    model.to(DEVICE).train()
    opt = optimizer(model.parameters()) if optimizer is not None else None

    def amp():
        return torch.autocast(DEVICE.split(":")[0], dtype=autocast) if autocast is not None else contextlib.nullcontext()

    # The data pipeline runs before the capture (as a data loader would): only the model's step is recorded.
    batches = [tuple(t.to(DEVICE) for t in fam.batch(step, rank)) for step in range(steps)]
    if edit_batch is not None:
        batches = [(edit_batch(x), y) for x, y in batches]
    cap = parity.capture(model, str(path), level="mix", mode=mode, steps=list(range(steps)), rank=rank)
    with amp():
        cap.start()
    try:
        for step, (x, y) in enumerate(batches):
            if opt is not None and step > 0:
                opt.step()
            model.zero_grad(set_to_none=True)
            if reseed is not None:
                torch.manual_seed(reseed + step)
            with amp():
                out = model(x)
            loss = fam.loss(out, y)
            loss.backward()
            cap.log(loss=loss)
            cap.next_step()
    finally:
        cap.stop()


def pair(d, family, make, golden=None, target=None, **common):
    """Capture d/golden from make() with golden(model) applied and d/target from make() with target(model)
    applied (each a function changing the model in place, or None); `common` goes to both captures,
    `golden_kw` / `target_kw` dicts in it to one."""
    gkw = dict(common.pop("golden_kw", {}))
    tkw = dict(common.pop("target_kw", {}))
    for sub, change, kw in (("golden", golden, gkw), ("target", target, tkw)):
        m = make()
        if change is not None:
            change(m)
        capture_run(d / sub, m, family, **{**common, **kw})


def mod(model, path):
    return dict(model.named_modules())[path]


def build(family, **kw):
    return FAMILIES[family].build(**kw)


BENIGN = ("ACCUMULATION_NOISE",)
CONFIG = ("CONFIG_DIFF",)


# =========================================================================================================
# Benign
# =========================================================================================================

@scenario(name="llama_autocast_bf16_mask1e4", family="llama", kind="benign", expected=BENIGN, allowed=CONFIG,
          fast=True)
def _(d):
    """Issue example (a). Both runs mask attention with masked_fill(-1e4) (a common "large negative");
    the target runs the forward under torch.autocast(cpu, bf16). Autocast is the standard mixed-precision
    recipe: matmuls in bf16, the rest in fp32; after the softmax -1e4 and -inf are both exactly 0, and
    -1e4 rounded to bf16 (-9984) is a rounding of the fill value, not an error. Equivalent up to bf16
    rounding: must pass. CONFIG_DIFF is true (autocast differs)."""
    pair(d, "llama", lambda: build("llama"), golden=fx.llama_mask_fill, target=fx.llama_mask_fill,
         target_kw={"autocast": torch.bfloat16})


@scenario(name="llama_bf16_vs_fp32", family="llama", kind="benign", expected=BENIGN, allowed=CONFIG)
def _(d):
    """The whole model in bf16 (parameters and activations) against fp32: the usual "is my bf16 port
    right" question for a correct port. Differences are bf16 rounding and its accumulation; CONFIG_DIFF
    (parameter dtypes) is true."""
    pair(d, "llama", lambda: build("llama"), target=lambda m: m.to(torch.bfloat16))


@scenario(name="llama_bf16_rerun_reordered_linears", family="llama", kind="benign", expected=BENIGN)
def _(d):
    """bf16 golden and bf16 target; the target computes every Linear with the reduction index permuted
    (x[..., perm] @ W[:, perm]^T): another summation order, as another BLAS or device gives. Same
    configuration, so no CONFIG_DIFF."""
    def target(m):
        m.to(torch.bfloat16)
        for x in m.modules():
            if isinstance(x, torch.nn.Linear):
                fx.reordered_linear(x)
    pair(d, "llama", lambda: build("llama"), golden=lambda m: m.to(torch.bfloat16), target=target)


@scenario(name="llama_chunked_linear", family="llama", kind="benign", expected=BENIGN, fast=True)
def _(d):
    """Issue example (c). fp32; the target computes layers.1.mlp.w2 as a sum of four chunked matmuls
    (split-K): the same linear map, another summation order and other ops (the target has op records
    the golden lacks inside that Linear). Differences are fp32 rounding: must pass."""
    pair(d, "llama", lambda: build("llama"), target=lambda m: fx.chunked_linear(mod(m, "layers.1.mlp.w2")))


@scenario(name="llama_fused_attention", family="llama", kind="benign", expected=BENIGN)
def _(d):
    """fp32; the target's attention uses F.scaled_dot_product_attention (is_causal) where torch has it,
    else a manual variant with another op order (scale folded into q, where-mask, exp(s - max) / sum)
    against the golden's explicit softmax(QK^T / sqrt(d)) V. Fused vs eager attention is a summation
    order change: must pass."""
    def target(m):
        for x in m.modules():
            if type(x).__name__ == "Attention":
                fx.llama_fused_attention(x)
    pair(d, "llama", lambda: build("llama"), target=target)


@scenario(name="llama_stats_bf16_vs_fp32", family="llama", kind="benign", expected=BENIGN, allowed=CONFIG,
          mode="statistics")
def _(d):
    """llama_bf16_vs_fp32 captured in statistics mode (min/max/mean/norm only): the same benign
    rounding must not become a failure because only statistics are compared."""
    pair(d, "llama", lambda: build("llama"), target=lambda m: m.to(torch.bfloat16), mode="statistics")


@scenario(name="gpt2_autocast_bf16", family="gpt2", kind="benign", expected=BENIGN, allowed=CONFIG)
def _(d):
    """The 4-layer GPT-2-style model (the int8 scenario's model, same sharpened attention) under
    autocast bf16 against fp32: benign, and the reference that its bf16 noise is judged noise."""
    def make():
        m = build("gpt2", n_layers=4)
        fx.sharpen_attention(m, 6.0)
        return m
    pair(d, "gpt2", make, target_kw={"autocast": torch.bfloat16})


@scenario(name="encoder_autocast_bf16", family="encoder", kind="benign", expected=BENIGN, allowed=CONFIG)
def _(d):
    """The MultiheadAttention/LayerNorm/GELU encoder under autocast bf16 against fp32 (LayerNorm stays
    fp32 under autocast): benign."""
    pair(d, "encoder", lambda: build("encoder"), target_kw={"autocast": torch.bfloat16})


@scenario(name="encoder_eager_attention", family="encoder", kind="benign", expected=BENIGN)
def _(d):
    """fp32; the target computes every nn.MultiheadAttention eagerly from its own parameters
    (in-projection, softmax(QK^T / sqrt(d)) V, out-projection) instead of the fused
    F.multi_head_attention_forward (scaled_dot_product_attention inside on torch 2.x). An
    implementation swap with other ops: must pass."""
    def target(m):
        for b in m.blocks:
            fx.eager_mha(b.attn)
    pair(d, "encoder", lambda: build("encoder"), target=target)


@scenario(name="encoder_stats_autocast_bf16", family="encoder", kind="benign", expected=BENIGN,
          allowed=CONFIG, mode="statistics")
def _(d):
    """encoder_autocast_bf16 in statistics mode."""
    pair(d, "encoder", lambda: build("encoder"), mode="statistics", target_kw={"autocast": torch.bfloat16})


@scenario(name="cnn_autocast_bf16", family="cnn", kind="benign", expected=BENIGN, allowed=CONFIG)
def _(d):
    """The Conv2d/BatchNorm2d CNN under autocast bf16 (convolutions in bf16) against fp32: benign."""
    pair(d, "cnn", lambda: build("cnn"), target_kw={"autocast": torch.bfloat16})


@scenario(name="cnn_im2col_conv", family="cnn", kind="benign", expected=BENIGN)
def _(d):
    """fp32; the target computes blocks.1.conv as unfold + matmul (im2col) instead of F.conv2d: another
    algorithm and summation order for the same convolution. Must pass."""
    pair(d, "cnn", lambda: build("cnn"), target=lambda m: fx.im2col_conv(mod(m, "blocks.1.conv")))


@scenario(name="cnn_stats_bf16_vs_fp32", family="cnn", kind="benign", expected=BENIGN, allowed=CONFIG,
          mode="statistics")
def _(d):
    """The whole CNN in bf16 (inputs cast to bf16) against fp32, statistics mode."""
    pair(d, "cnn", lambda: build("cnn"), mode="statistics", target=lambda m: m.to(torch.bfloat16),
         target_kw={"edit_batch": lambda x: x.bfloat16()})


# =========================================================================================================
# Faults: low precision where it is not benign
# =========================================================================================================

def massive_activation(m, channel=5, value=300.0):
    """One residual channel carries a large constant (the "massive activations" of trained LLMs, hundreds
    to thousands in a few channels): embedding[:, channel] += value."""
    with torch.no_grad():
        m.embed.weight[:, channel] += value


@scenario(name="llama_rmsnorm_fp16_overflow", family="llama", kind="fault", location="layers.1.attn_norm",
          expected=("LOW_PRECISION_SENSITIVE_OP", "OVERFLOW"), allowed=("STRUCTURE_DIFF",))
def _(d):
    """The residual stream has a massive-activation channel (|x| = 300 > 255.9). The target computes
    layers.1.attn_norm as an fp16 RMSNorm kernel without the fp32 upcast: x² overflows fp16 (T5/Llama's
    known fp16 norm failure), the mean square is Inf and every normalised row collapses to 0. The golden
    is fp32. Both "a norm that needs fp32" (LOW_PRECISION_SENSITIVE_OP) and "Inf born at x²" (OVERFLOW)
    name the cause; either suffices. The kernel is written out as other ops than the golden's (x * x for
    pow, its own casts), as user code that drops the upcast is: "ops present in one run only"
    (STRUCTURE_DIFF) is a true statement about the pair."""
    def make():
        m = build("llama")
        massive_activation(m)
        return m
    pair(d, "llama", make, target=lambda m: fx.rmsnorm_fp16_no_upcast(mod(m, "layers.1.attn_norm")))


@scenario(name="llama_stats_rmsnorm_fp16_overflow", family="llama", kind="fault",
          location="layers.1.attn_norm", expected=("LOW_PRECISION_SENSITIVE_OP", "OVERFLOW"),
          allowed=("STRUCTURE_DIFF",), mode="statistics")
def _(d):
    """llama_rmsnorm_fp16_overflow in statistics mode: the collapse (norm, max, min of the output) and
    the Inf count are visible in statistics alone."""
    def make():
        m = build("llama")
        massive_activation(m)
        return m
    pair(d, "llama", make, mode="statistics",
         target=lambda m: fx.rmsnorm_fp16_no_upcast(mod(m, "layers.1.attn_norm")))


@scenario(name="encoder_layernorm_fp16_overflow", family="encoder", kind="fault", location="embed_ln",
          expected=("LOW_PRECISION_SENSITIVE_OP", "OVERFLOW"))
def _(d):
    """The token embeddings have a massive-activation channel (+300, as the outlier dimensions of BERT's
    LayerNorm inputs). The target computes embed_ln as an fp16 LayerNorm kernel without the fp32 upcast:
    (x - mean)² overflows fp16 in that channel, the variance is Inf and every row collapses to the
    LayerNorm bias. The golden is fp32. Either code names the cause."""
    def make():
        m = build("encoder")
        with torch.no_grad():
            m.tok.weight[:, 5] += 300.0
        return m
    pair(d, "encoder", make, target=lambda m: fx.layernorm_fp16_no_upcast(m.embed_ln))


def uncentred_images(x):
    """Un-normalised, low-contrast images (raw pixel scale, around 200): a convolution of them has a
    large per-channel mean and a small spread."""
    return 200.0 + 0.5 * x


@scenario(name="cnn_batchnorm_bf16", family="cnn", kind="fault", location="blocks.0.bn",
          expected=("LOW_PRECISION_SENSITIVE_OP",), allowed=CONFIG)
def _(d):
    """Un-normalised low-contrast images (200 + 0.5 x) through a CNN with replicate padding:
    blocks.0.conv's output channels have means of ~±100 and a spread of ~0.3. The target runs blocks.0.bn
    in bf16 (its input rounded to bf16, spacing 0.5 at 100): subtracting the batch mean cancels
    catastrophically and the normalised output is wrong by tens of percent, far beyond bf16 rounding of
    the result; the fp32 golden is exact. The rest of the model is fp32. A batch norm is a
    precision-sensitive op (its input must stay in fp32 on such data); CONFIG_DIFF (one module's
    parameters in bf16) is true."""
    from parity.examples.models import PrecisionPolicy, apply_precision
    pair(d, "cnn", lambda: build("cnn", padding_mode="replicate"), edit_batch=uncentred_images,
         target=lambda m: apply_precision(m, PrecisionPolicy(torch.float32, {"blocks.0.bn": torch.bfloat16})))


@scenario(name="llama_softmax_fp16_overflow", family="llama", kind="fault", location="layers.1.attn",
          expected=("OVERFLOW",), allowed=("LOW_PRECISION_SENSITIVE_OP", "STRUCTURE_DIFF"))
def _(d):
    """Layer 1's attention is sharp (scores ~15 > ln(65504) = 11.09); the target computes its softmax in
    fp16 without subtracting the row maximum (tests/python/test_fault_injection.py): exp overflows to Inf
    and NaN follows. OVERFLOW is the cause; "softmax needs fp32" is also true, and so is STRUCTURE_DIFF:
    the target's softmax is exp / sum, ops the golden's one softmax call does not run."""
    def make():
        m = build("llama")
        fx.sharpen_attention(m, 40.0, modules={"layers.1.attn"})
        return m
    pair(d, "llama", make, target=lambda m: fx.softmax_fp16_no_max(mod(m, "layers.1.attn")))


# ---- flush to zero ----------------------------------------------------------------------------------------

@scenario(name="llama_norm_ftz", family="llama", kind="fault", location="layers.0.attn_norm",
          expected=("FLUSH_TO_ZERO",))
def _(d):
    """Embeddings scaled by 1e-2 (activations ~2e-4, a quarter of them below fp16's smallest normal
    2^-14 = 6.1e-5); the target's layers.0.attn_norm is an FTZ/DAZ kernel: inputs below 2^-14 become 0
    before the normalisation. The golden keeps them."""
    def make():
        m = build("llama")
        with torch.no_grad():
            m.embed.weight.mul_(1e-2)
        return m
    pair(d, "llama", make, target=lambda m: fx.flush_to_zero_input(mod(m, "layers.0.attn_norm")))


@scenario(name="cnn_batchnorm_ftz", family="cnn", kind="fault", location="blocks.0.bn",
          expected=("FLUSH_TO_ZERO",))
def _(d):
    """Images at 1e-4 scale: blocks.0.conv's outputs are ~5e-5, half of them below 2^-14; the target's
    blocks.0.bn flushes those inputs to zero (an FTZ/DAZ kernel) before normalising: the zeros are in
    the batch norm's input, its output (x - mean) / std is not zero there."""
    pair(d, "cnn", lambda: build("cnn"), edit_batch=lambda x: 1e-4 * x,
         target=lambda m: fx.flush_to_zero_input(mod(m, "blocks.0.bn")))


# ---- op arguments ------------------------------------------------------------------------------------------

@scenario(name="encoder_layernorm_wrong_eps", family="encoder", kind="fault", location="blocks.1.ln_1",
          expected=("OP_ARGUMENT_MISMATCH",), fast=True)
def _(d):
    """Issue example (e). The target's blocks.1.ln_1 has eps 1.0 instead of 1e-5 (a config typo); the
    recorded F.layer_norm call differs in its eps argument. The input variance is ~1, so the output
    shrinks by ~1/sqrt(2). Not a precision problem: the op was called with another argument."""
    def target(m):
        mod(m, "blocks.1.ln_1").eps = 1.0
    pair(d, "encoder", lambda: build("encoder"), target=target)


@scenario(name="llama_rmsnorm_wrong_eps", family="llama", kind="fault", location="layers.0.mlp_norm",
          expected=("OP_ARGUMENT_MISMATCH",))
def _(d):
    """The target's layers.0.mlp_norm (RMSNorm: x * rsqrt(mean(x²) + eps) * w) has eps 1.0 instead of
    1e-5; the recorded add of eps differs in its scalar argument. With mean(x²) ~ 1e-3 the output is
    ~30x smaller."""
    def target(m):
        mod(m, "layers.0.mlp_norm").eps = 1.0
    pair(d, "llama", lambda: build("llama"), target=target)


@scenario(name="cnn_batchnorm_wrong_eps", family="cnn", kind="fault", location="blocks.1.bn",
          expected=("OP_ARGUMENT_MISMATCH",))
def _(d):
    """The target's blocks.1.bn has eps 1.0 instead of 1e-5; F.batch_norm's eps argument differs."""
    def target(m):
        mod(m, "blocks.1.bn").eps = 1.0
    pair(d, "cnn", lambda: build("cnn"), target=target)


@scenario(name="encoder_gelu_tanh", family="encoder", kind="fault", location="blocks.1.ff.act",
          expected=("OP_ARGUMENT_MISMATCH",), fast=True)
def _(d):
    """Issue example (b). fp32 encoder; the target's blocks.1.ff.act is nn.GELU(approximate="tanh")
    instead of the exact nn.GELU(): another function (|difference| up to ~5e-4 at O(1) inputs, far
    beyond fp32 rounding), visible as F.gelu's approximate argument."""
    def target(m):
        mod(m, "blocks.1.ff").act = torch.nn.GELU(approximate="tanh")
    pair(d, "encoder", lambda: build("encoder"), target=target)


@scenario(name="encoder_stats_gelu_tanh", family="encoder", kind="fault", location="blocks.1.ff.act",
          expected=("OP_ARGUMENT_MISMATCH",), mode="statistics")
def _(d):
    """encoder_gelu_tanh in statistics mode: op arguments are recorded in every mode."""
    def target(m):
        mod(m, "blocks.1.ff").act = torch.nn.GELU(approximate="tanh")
    pair(d, "encoder", lambda: build("encoder"), target=target, mode="statistics")


# ---- weights -----------------------------------------------------------------------------------------------

@scenario(name="llama_transposed_wq", family="llama", kind="fault", location="layers.1.attn.wq",
          expected=("WEIGHT_MISMATCH",))
def _(d):
    """The target's layers.1.attn.wq weight (32 x 32) is stored transposed (a checkpoint converted with
    the wrong layout): same values, other places."""
    pair(d, "llama", lambda: build("llama"), target=lambda m: fx.transpose_(mod(m, "layers.1.attn.wq").weight))


@scenario(name="encoder_transposed_out_proj", family="encoder", kind="fault", location="blocks.0.attn",
          expected=("WEIGHT_MISMATCH",))
def _(d):
    """The target's blocks.0.attn.out_proj.weight (32 x 32) is transposed. nn.MultiheadAttention never
    calls out_proj as a module (F.multi_head_attention_forward takes the weight as an argument), so the
    weight appears as an input of the attention's op, not as a module parameter: the location is the
    attention."""
    pair(d, "encoder", lambda: build("encoder"),
         target=lambda m: fx.transpose_(mod(m, "blocks.0.attn.out_proj").weight))


@scenario(name="llama_perturbed_embedding", family="llama", kind="fault", location="embed",
          expected=("WEIGHT_MISMATCH",))
def _(d):
    """The target's embedding table has 2 % multiplicative noise (w * (1 + 0.02 N(0,1)))."""
    pair(d, "llama", lambda: build("llama"), target=lambda m: fx.perturb(m.embed.weight))


@scenario(name="cnn_perturbed_conv", family="cnn", kind="fault", location="blocks.1.conv",
          expected=("WEIGHT_MISMATCH",))
def _(d):
    """The target's blocks.1.conv weight has 2 % multiplicative noise."""
    pair(d, "cnn", lambda: build("cnn"), target=lambda m: fx.perturb(mod(m, "blocks.1.conv").weight))


@scenario(name="encoder_perturbed_ff", family="encoder", kind="fault", location="blocks.1.ff.fc2",
          expected=("WEIGHT_MISMATCH",))
def _(d):
    """The target's blocks.1.ff.fc2 weight has 2 % multiplicative noise."""
    pair(d, "encoder", lambda: build("encoder"), target=lambda m: fx.perturb(mod(m, "blocks.1.ff.fc2").weight))


# ---- inputs -------------------------------------------------------------------------------------------------

def change_token(x, b=0, t=5):
    x = x.clone()
    x[b, t] = (x[b, t] + 1) % VOCAB
    return x


def change_pixel(x, b=0, i=4, j=7):
    x = x.clone()
    x[b, :, i, j] += 1.0
    return x


@scenario(name="llama_one_token_changed", family="llama", kind="fault", location="<root>",
          expected=("INPUT_MISMATCH",))
def _(d):
    """The target's batch differs in one token (sample 0, position 5): the data differ, the model does
    not. The location is the model's input (<root>)."""
    pair(d, "llama", lambda: build("llama"), target_kw={"edit_batch": change_token})


@scenario(name="encoder_one_token_changed", family="encoder", kind="fault", location="<root>",
          expected=("INPUT_MISMATCH",))
def _(d):
    """As llama_one_token_changed, on the encoder."""
    pair(d, "encoder", lambda: build("encoder"), target_kw={"edit_batch": change_token})


@scenario(name="cnn_one_pixel_changed", family="cnn", kind="fault", location="<root>",
          expected=("INPUT_MISMATCH",))
def _(d):
    """The target's images differ in one pixel (image 0, all channels, +1.0)."""
    pair(d, "cnn", lambda: build("cnn"), target_kw={"edit_batch": change_pixel})


# ---- quantisation -----------------------------------------------------------------------------------------

@scenario(name="gpt2_int8_attention_scores", family="gpt2", kind="fault", location="blocks.2.attn",
          expected=("QUANT_SENSITIVE_LAYER",), fast=True)
def _(d):
    """Issue example (d). 4-layer GPT-2-style model with sharpened attention (wq, wk x6: scores O(1));
    the target quantises blocks.2.attn's masked scores to int8 (per tensor, symmetric, the integers in a
    real int8 tensor, in a child module scores_fake_quant) before the softmax. The error is born in
    blocks.2.attn; the later layers' softmaxes only carry it, so the top suspect must be blocks.2.attn
    (or its quantiser), not a later softmax."""
    def make():
        m = build("gpt2", n_layers=4)
        fx.sharpen_attention(m, 6.0)
        return m
    pair(d, "gpt2", make, target=lambda m: fx.int8_attention_scores(mod(m, "blocks.2.attn")))


@scenario(name="encoder_int8_ff_weight", family="encoder", kind="fault", location="blocks.1.ff.fc1",
          expected=("QUANT_SENSITIVE_LAYER",))
def _(d):
    """The target's blocks.1.ff.fc1 computes with its weight quantised to int8 per tensor on the fly
    (weight_fake_quant child, straight-through gradient); the master weight is unchanged, so this is not
    a weight mismatch."""
    pair(d, "encoder", lambda: build("encoder"), target=lambda m: fx.int8_weight_linear(mod(m, "blocks.1.ff.fc1")))


@scenario(name="cnn_fp8_conv", family="cnn", kind="fault", location="blocks.1.conv",
          expected=("QUANT_SENSITIVE_LAYER",), fast=True)
def _(d):
    """The target's blocks.1.conv computes in fp8 e4m3 (input activations and weight scaled per tensor
    to 448 and rounded: torch.float8_e4m3fn where available, else the exact emulation): 3 mantissa
    bits, relative error up to 6 %."""
    pair(d, "cnn", lambda: build("cnn"), target=lambda m: fx.fp8_conv(mod(m, "blocks.1.conv")))


# ---- loss scale ---------------------------------------------------------------------------------------------

@scenario(name="llama_loss_scale_overflow", family="llama", kind="fault", location=None,
          expected=("GRAD_OVERFLOW",), fast=True)
def _(d):
    """Issue example (f). The target's parameter gradients pass through fp16 with a static loss scale of
    2**40 (scaled, rounded to fp16, unscaled): they overflow to Inf. The cause is the loss scale, which
    acts on every gradient: no single module is the location (not scored)."""
    pair(d, "llama", lambda: build("llama"), target=lambda m: fx.fp16_grads_with_loss_scale(m, 2.0 ** 40))


@scenario(name="encoder_loss_scale_underflow", family="encoder", kind="fault", location=None,
          expected=("GRAD_UNDERFLOW",))
def _(d):
    """The target's parameter gradients pass through fp16 with a loss scale of 2**-30: scaled below
    fp16's smallest subnormal they become 0 (or a few subnormal steps)."""
    pair(d, "encoder", lambda: build("encoder"), target=lambda m: fx.fp16_grads_with_loss_scale(m, 2.0 ** -30))


# ---- randomness ---------------------------------------------------------------------------------------------

@scenario(name="encoder_unseeded_dropout", family="encoder", kind="fault", location="blocks.1.drop",
          expected=("NONDETERMINISM",))
def _(d):
    """Both runs have dropout p = 0.1 after layer 1's attention (the only random op); the target's
    generator is re-seeded differently before the forward (an unseeded run), so its dropout mask
    differs. Fingerprints are identical (both seeded the same at start)."""
    pair(d, "encoder", lambda: build("encoder", dropout=(0.0, 0.1)), target_kw={"reseed": 98765})


# ---- optimizer ----------------------------------------------------------------------------------------------

def adamw(eps):
    return lambda params: torch.optim.AdamW(params, lr=1e-3, eps=eps, weight_decay=0.0)


@scenario(name="llama_adamw_eps", family="llama", kind="fault", location=None, location_step=1,
          expected=("DRIFT_AFTER_STEPS",), allowed=("OP_ARGUMENT_MISMATCH",), fast=True)
def _(d):
    """Issue example (g). Three AdamW steps, captured at steps 0, 1, 2; the target's AdamW eps is 1e-6
    instead of 1e-8. Step 0 (forward + backward before any update) is identical; the first update (in
    step 1's capture) differs, so steps 1-2 diverge: DRIFT_AFTER_STEPS from step 1. The optimizer's
    eps is a recorded argument of its add op, so OP_ARGUMENT_MISMATCH is also true. No module is the
    location; the top suspect must be in step 1 (the optimizer's first update, <global> ops)."""
    pair(d, "llama", lambda: build("llama"), steps=3, golden_kw={"optimizer": adamw(1e-8)},
         target_kw={"optimizer": adamw(1e-6)})


def sgd(lr):
    return lambda params: torch.optim.SGD(params, lr=lr, momentum=0.9)


@scenario(name="cnn_sgd_lr", family="cnn", kind="fault", location=None, location_step=1,
          expected=("DRIFT_AFTER_STEPS",), allowed=("OP_ARGUMENT_MISMATCH",))
def _(d):
    """Three SGD-momentum steps of the CNN; the target's learning rate is 0.05 instead of 0.1 (step 0
    identical, steps 1-2 diverge). The lr is a recorded argument of the update op."""
    pair(d, "cnn", lambda: build("cnn"), steps=3, golden_kw={"optimizer": sgd(0.1)},
         target_kw={"optimizer": sgd(0.05)})


# ---- ranks --------------------------------------------------------------------------------------------------

@scenario(name="llama_rank1_tf32", family="llama", kind="fault", location="layers.1.mlp.w2", location_rank=1,
          expected=("RANK_INCONSISTENT",))
def _(d):
    """Two data-parallel ranks (each its own batch), captured into one run directory by two captures
    (rank=0, rank=1). In the target, rank 1 alone computes layers.1.mlp.w2 with TF32 inputs (10 mantissa
    bits: a node whose TF32 setting differs). Rank 0 is identical; rank 1 departs at that Linear."""
    for sub in ("golden", "target"):
        for rank in (0, 1):
            m = build("llama")
            if sub == "target" and rank == 1:
                fx.tf32_linear(mod(m, "layers.1.mlp.w2"))
            capture_run(d / sub, m, "llama", rank=rank)


def by_name():
    return {s.name: s for s in SCENARIOS}


def fast_names():
    return [s.name for s in SCENARIOS if s.fast]
