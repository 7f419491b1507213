"""parity for Hugging Face `transformers.Trainer` runs (docs/capture.md "Hugging Face Trainer").

With no `with` block — the callback makes, starts and closes the capture itself:

    trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ev,
                      callbacks=[ParityCallback(path="runs/golden", level="module", steps=[1],
                                                eval_logits=True)])
    trainer.train()

or around a capture the caller made and entered (`ParityCallback(cap)`, steps numbered by the capture).

A capture the callback makes is numbered with the Trainer's `state.global_step`: the step that the
Trainer logs as step N (log_history's "step") is capture step N — its forward and backward, its
loss / grad_norm / learning_rate (`on_log`), the eval metrics (`on_evaluate`) and eval logits of an
evaluation after it. The Trainer reports a step's scalars after `on_step_end`, so the capture advances at
the *beginning* of each step (to global_step + 1). `logging_steps=1` gives the scalars of every step.

transformers is imported when `ParityCallback` is first looked up, not when parity is.
"""

# The Trainer's log keys written as scalars of the step, under the Trainer's own names (`parity curve`
# maps learning_rate to lr, docs/curves.md).
SCALAR_KEYS = ("loss", "grad_norm", "learning_rate")
# Eval metrics that measure the machine, not the model: they differ between any two runs.
TIMING_SUFFIXES = ("_runtime", "_samples_per_second", "_steps_per_second", "_model_preparation_time")


def eval_scalars(metrics):
    """The numeric eval metrics (`eval_loss`, `eval_accuracy`, ...) without timings and `epoch`."""
    out = {}
    for k, v in (metrics or {}).items():
        if k == "epoch" or k.endswith(TIMING_SUFFIXES) or isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[k] = v
    return out


def _output_logits(output):
    logits = getattr(output, "logits", None)
    if logits is None and isinstance(output, dict):
        logits = output.get("logits")
    return logits


_CALLBACK_DOC = """A `transformers.TrainerCallback` capturing a Trainer run into a parity run directory.

ParityCallback(path=..., level="module", steps=(1,), eval_logits=False, logits_top_k=256,
optimizer=False, **capture_options): the callback makes the capture (`parity.capture(model, path, ...)`) on train
begin and closes it on train end, numbering steps with the Trainer's global_step (`steps` are
Trainer steps; the first optimizer step is 1). `eval_logits`: True (every evaluation) or the
Trainer steps whose evaluation writes its logits (causal LMs: logits[..., :-1] scored against
labels[..., 1:], as their loss does) to the run's logits file for `parity eval ppl`. `optimizer=True`:
the Trainer's optimizer states too (docs/capture.md "Optimizer states"; `optimizer_update=True` adds the
updates).

ParityCallback(cap): writes into `cap`, a capture the caller made and entered; one capture step
per optimizer step, numbered by the capture (0, 1, ...)."""


class _CallbackMethods:
    """What ParityCallback does, apart from the transformers base class it is built on (_make_class):
    importing this module does not import transformers."""

    def __init__(self, cap=None, *, path=None, level="module", steps=(1,), eval_logits=False,
                 logits_top_k=256, optimizer=False, **capture_options):
        if (cap is None) == (path is None):
            raise TypeError("ParityCallback: give either a capture you started (ParityCallback(cap)) or "
                            "path=... for a capture the callback makes, not both and not neither")
        self.cap = cap
        self._owned = cap is None
        self._options = dict(capture_options, level=level, steps=steps)
        self._path = path
        self._eval_logits = eval_logits if isinstance(eval_logits, bool) else frozenset(int(s) for s in eval_logits)
        if eval_logits is not False and cap is not None:
            raise TypeError("ParityCallback: eval_logits needs a capture the callback makes (path=...)")
        self._top_k = int(logits_top_k)
        self._optimizer = bool(optimizer)  # record the Trainer's optimizer states (it exists from train begin on)
        self._hook = None
        self._steps_begun = 0

    # ---- the capture the callback owns --------------------------------------------------------
    def close(self):
        """Stop the capture this callback made (idempotent). on_train_end calls it; after an exception
        out of trainer.train() call it yourself (else the next train() or interpreter exit does)."""
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._owned and self.cap is not None:
            cap, self.cap = self.cap, None
            cap.stop()

    def _open(self, model, global_step):
        import parity

        self.close()  # a capture an exception left open in an earlier train()
        self.cap = parity.capture(model, self._path, **self._options).start()
        if global_step > self.cap.step:  # resumed from a checkpoint
            self.cap.next_step(step=global_step)
        if self._eval_logits is not False:
            self._hook = model.register_forward_hook(self._eval_forward, with_kwargs=True)

    def _eval_forward(self, module, args, kwargs, output):
        """A forward of the model in eval mode without grad is the Trainer's evaluation loop."""
        import torch

        if module.training or torch.is_grad_enabled() or self.cap is None:
            return
        if self._eval_logits is not True and self.cap.step not in self._eval_logits:
            return
        labels, logits = kwargs.get("labels"), _output_logits(output)
        if labels is not None and logits is not None:
            self.cap.log_logits(logits, labels, top_k=self._top_k, shift=True)

    # ---- Trainer events -----------------------------------------------------------------------
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if self._owned:
            self._open(model, state.global_step)
        if self._optimizer and kwargs.get("optimizer") is not None:
            self.cap.watch_optimizer(kwargs["optimizer"])
        self._steps_begun = 0

    def on_step_begin(self, args, state, control, **kwargs):
        if self._owned:
            self.cap.next_step(step=state.global_step + 1)  # the step the Trainer will log it as
        elif self._steps_begun:  # the previous optimizer step and its log are complete
            self.cap.next_step()
        self._steps_begun += 1

    def on_log(self, args, state, control, logs=None, **kwargs):
        scalars = {k: logs[k] for k in SCALAR_KEYS if logs and logs.get(k) is not None}
        if scalars and self.cap is not None and (self._steps_begun or self._owned):
            self.cap.log(**scalars)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        scalars = eval_scalars(metrics)
        # a caller's capture may be closed already (trainer.evaluate() after its `with` block)
        if scalars and self.cap is not None and getattr(self.cap, "_started", False):
            self.cap.log(**scalars)

    def on_train_end(self, args, state, control, **kwargs):
        if self._owned:
            self.close()
        elif self._steps_begun:
            self.cap.next_step()
        self._steps_begun = 0


def _make_class():
    try:
        from transformers import TrainerCallback
    except ImportError as e:  # exercised only without transformers
        raise ImportError("parity.integrations.hf.ParityCallback needs the `transformers` package "
                          "(pip install transformers)") from e

    return type("ParityCallback", (_CallbackMethods, TrainerCallback), {"__doc__": _CALLBACK_DOC,
                                                                       "__module__": __name__})


def __getattr__(name):
    """`ParityCallback` is built on first access (PEP 562), so importing this module does not import
    transformers."""
    if name == "ParityCallback":
        cls = _make_class()
        globals()[name] = cls
        return cls
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
