"""parity for Hugging Face `transformers.Trainer` runs (docs/capture.md "Hugging Face Trainer").

    cap = parity.capture(model, "runs/golden", level="module", steps=[0, 1])
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[ParityCallback(cap)])
    with cap:
        trainer.train()

One capture step is one optimizer step of the Trainer. The Trainer reports its loss / grad_norm /
learning_rate (`on_log`) after `on_step_end` of the step they belong to, so the callback advances the
capture at the *beginning* of each following step and once more when training ends: the scalars land
in the step whose forward and backward produced them. Set `logging_steps=1` in TrainingArguments to
get the scalars of every step (the Trainer averages the loss over `logging_steps`).

transformers is imported when `ParityCallback` is first looked up, not when parity is.
"""

# The Trainer's log keys written as scalars of the step, under the Trainer's own names (`parity curve`
# maps learning_rate to lr, docs/curves.md).
SCALAR_KEYS = ("loss", "grad_norm", "learning_rate")


def _make_class():
    try:
        from transformers import TrainerCallback
    except ImportError as e:  # exercised only without transformers
        raise ImportError("parity.integrations.hf.ParityCallback needs the `transformers` package "
                          "(pip install transformers)") from e

    class ParityCallback(TrainerCallback):
        """A `transformers.TrainerCallback` writing the Trainer's loss, grad_norm and learning_rate into
        `cap` (a parity.capture Capture, started by the caller), one capture step per optimizer step."""

        def __init__(self, cap):
            self.cap = cap
            self._steps_begun = 0

        def on_step_begin(self, args, state, control, **kwargs):
            if self._steps_begun:  # the previous optimizer step and its log are complete
                self.cap.next_step()
            self._steps_begun += 1

        def on_log(self, args, state, control, logs=None, **kwargs):
            scalars = {k: logs[k] for k in SCALAR_KEYS if logs and logs.get(k) is not None}
            if scalars and self._steps_begun:
                self.cap.log(**scalars)

        def on_train_end(self, args, state, control, **kwargs):
            if self._steps_begun:
                self.cap.next_step()
                self._steps_begun = 0

    ParityCallback.__module__ = __name__
    return ParityCallback


def __getattr__(name):
    """`ParityCallback` is built on first access (PEP 562), so importing this module does not import
    transformers."""
    if name == "ParityCallback":
        cls = _make_class()
        globals()[name] = cls
        return cls
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
