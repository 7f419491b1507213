"""The capture's dump writer behind one failure policy (docs/capture.md "When writing fails").

A capture must never take a training job down because its own output failed (disk full, a read-only
or removed output folder), yet it must never fail quietly either. The C++ DumpWriter writes on a
background thread; its first error is sticky and comes back from the next call (append, flush,
close). With on_error="warn" (the default) that first error is printed once to stderr and raised as
a RuntimeWarning, recording stops, and the run on disk stays readable up to its last complete record;
with on_error="raise" the error propagates to the caller (inside forward hooks: the training step).
"""
import sys
import warnings

ON_ERROR = ("warn", "raise")


class CaptureWriteError(RuntimeError):
    """Writing the capture dump failed (with on_error="raise")."""


class GuardedWriter:
    def __init__(self, writer, run_dir, on_error, on_failure):
        if on_error not in ON_ERROR:
            raise ValueError("capture: on_error {!r} is not one of {}".format(on_error, ", ".join(ON_ERROR)))
        self._writer = writer
        self._run_dir = run_dir
        self._on_error = on_error
        self._on_failure = on_failure  # called once with the message: the capture stops recording
        self.error = None

    def __getattr__(self, name):
        # Called once per method name: the wrapper is kept on the instance (append_event runs once per
        # recorded tensor), and looks the writer's method up at call time.
        if not callable(getattr(self._writer, name)):
            return getattr(self._writer, name)

        def guarded(*args, **kwargs):
            if self.error is not None and name != "close":
                return None  # failed earlier: nothing more is written
            try:
                return getattr(self._writer, name)(*args, **kwargs)
            except (RuntimeError, OSError) as e:
                if self.error is None:
                    self._fail(str(e))
                elif name == "close":
                    return None  # the failure was reported already
                if self._on_error == "raise":
                    raise CaptureWriteError(str(e)) from e
                return None

        setattr(self, name, guarded)
        return guarded

    def _fail(self, message):
        self.error = message
        self._on_failure(message)
        if self._on_error == "warn":
            text = ("parity: capture into {} stopped: {}. Training goes on without capture; the run on disk is "
                    "readable up to its last complete record (`parity info {}`).").format(
                        self._run_dir, message, self._run_dir)
            print(text, file=sys.stderr, flush=True)
            warnings.warn(text, RuntimeWarning, stacklevel=3)
