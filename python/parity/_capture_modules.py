"""Module events: each module's `forward` wrapped by an instance attribute (restored on stop), so keyword tensors
are seen on every torch version and nesting is exact; parameters and buffers at a module's first call of a step,
gradients by tensor hooks."""
import threading
import weakref

from ._capture_memory import _versions
from ._capture_names import ROOT_NAME, _well_formed
from ._capture_ops import _eager
from ._capture_record import _own_calls


class ModuleEvents:
    """Capture's module events and gradient hooks."""

    def _hook_grads(self, tensors, base, module, op, role, call):
        """Backward: record the gradient of each tensor that requires grad when backward reaches it."""
        if self.direction == "forward":
            return
        for i, t in tensors:
            if not t.requires_grad:
                continue
            name = "{}/backward/{}/{}".format(base, role, i)
            if not self._wanted(name, "backward"):
                continue
            step = self.step
            cap_ref = weakref.ref(self)

            def hook(grad, name=name, i=i, step=step):
                cap = cap_ref()
                if cap is not None and cap._started and cap.step == step and grad is not None:
                    cap._record(name, grad, module, op, "backward", role, i, call)
                return None

            self._handles.append(t.register_hook(hook))

    def _record_params(self, mod, name):
        if not self.params or name in self._params_done:
            return
        self._params_done.add(name)
        for i, (pname, p) in enumerate(mod.named_parameters(recurse=False)):
            pname = _well_formed(pname)
            self._record("{}/forward/parameter/{}".format(name, pname), p, name, type(mod).__name__, "forward",
                         "parameter", i, 0, extra={"param": pname})
            if p.requires_grad and self.direction != "forward":
                gname = "{}/backward/grad/{}".format(name, pname)
                if not self._wanted(gname, "backward"):
                    continue
                step = self.step
                cap_ref = weakref.ref(self)

                def hook(grad, gname=gname, i=i, pname=pname, step=step, cls=type(mod).__name__):
                    cap = cap_ref()
                    if cap is not None and cap._started and cap.step == step and grad is not None:
                        # One gradient per backward pass: under gradient accumulation the second and later
                        # of a step are "#1", "#2", ... so that names stay unique within (rank, step).
                        k = cap._grad_calls.get(gname, 0)
                        cap._grad_calls[gname] = k + 1
                        cap._record(gname if k == 0 else "{}#{}".format(gname, k), grad, name, cls, "backward",
                                    "grad", i, 0, extra={"param": pname})
                    return None

                self._handles.append(p.register_hook(hook))
        # Buffers are model state too (BatchNorm's running statistics, a per-head scale, rotary tables): a
        # buffer that differs is a cause as much as a weight that does, and it is read like one.
        for i, (bname, b) in enumerate(mod.named_buffers(recurse=False)):
            bname = _well_formed(bname)
            if b is not None:
                self._record("{}/forward/buffer/{}".format(name, bname), b, name, type(mod).__name__, "forward",
                             "buffer", i, 0, extra={"buffer": bname})

    def _make_forward(self, mod, name, orig):
        """mod's forward, wrapped: each call is a module event, entered before the call and left after it."""
        cap_ref = weakref.ref(self)
        cls = type(mod).__name__
        is_root = mod is self.model
        # Where the precision a forward runs under is read (_observe_precision): inside the root's forward,
        # at its first submodule, when it has any. A wrapper around the root's forward can enter autocast
        # after the root's own hook ran (accelerate's mixed precision, as the HF Trainer uses it, wraps
        # `model.forward` in torch.autocast): read at the root, such a step would declare "off".
        observes_at_entry = is_root and next(mod.children(), None) is None

        @_eager
        def enter(args, kwargs):
            """Before the call: the event's state (_enter_module); None when not capturing."""
            cap = cap_ref()
            if cap is None or not cap._started or threading.get_ident() != cap._thread:
                return None
            cap._read_precision_at_call(is_root, observes_at_entry)
            return cap._enter_module(mod, name, cls, args, kwargs)

        @_eager
        def leave(state, out, failed=False):
            """After the call: records outputs and hooks the gradients (unless the call raised)."""
            state[0]._leave_module(state, name, cls, out, failed)
            return out

        def forward(*args, **kwargs):
            state = enter(args, kwargs)
            if state is None:
                return orig(*args, **kwargs)
            try:
                out = orig(*args, **kwargs)
            except BaseException:
                leave(state, None, failed=True)
                raise
            return leave(state, out)

        forward.__wrapped__ = orig
        return forward

    def _read_precision_at_call(self, is_root, observes_at_entry):
        """The root's call arms the precision reading; it happens there (a root without submodules) or at the
        first submodule call inside it (_make_forward says why)."""
        if is_root:
            self._precision_read = observes_at_entry
            if observes_at_entry:
                self._observe_precision()
        elif not self._precision_read:
            self._precision_read = True
            self._observe_precision()

    def _enter_module(self, mod, name, cls, args, kwargs):
        """A module call begins: names the event (`<module>#k` from its second call in the step), records its
        inputs and parameters when recording, and pushes it on the stacks that name op events and aliases.
        Returns the state _leave_module takes."""
        k = self._module_calls.get(name, 0)
        self._module_calls[name] = k + 1
        ev = name if k == 0 else "{}#{}".format(name, k)
        record = self._recording and self.level in ("module", "mix")
        ins = self._record_module_inputs(mod, name, cls, ev, k, args, kwargs) if record else []
        self._stack.append(ev)
        self._modules.append(mod)
        versions = _versions(t for _, t in ins)
        # An input that is also an input of an enclosing call (a decoder layer hands its own input to its
        # norm; Mamba's fp32 `hidden_states.to(fp32)` is that same tensor) has the enclosing input's
        # whole gradient — the residual's too — which the enclosing call records: no record of its own
        # (docs/capture.md "Aliases").
        shared = {i for i in versions if any(i in frame for frame in self._frames)}
        self._frames.append(versions)
        return self, ev, k, record, ins, versions, shared

    def _record_module_inputs(self, mod, name, cls, ev, k, args, kwargs):
        """Records a module call's inputs, and the parameters of the module and its submodules not yet recorded
        in this step; returns [(index, input tensor)]."""
        busy = self._busy
        self._busy = True
        try:
            ins = self._record_inputs(args, kwargs, ev, name, cls, k)
            self._record_params(mod, name)
            # Parameters of submodules too: some modules use a child's weights without calling the
            # child (nn.MultiheadAttention reads out_proj.weight inside its functional kernel), and
            # recording every parameter at its first ancestor's call is still "before use".
            for sub_path, sub in mod.named_modules():
                if sub_path:
                    sub_path = _well_formed(sub_path)
                    self._record_params(sub, sub_path if name == ROOT_NAME else name + "." + sub_path)
        finally:
            self._busy = busy
        return ins

    def _leave_module(self, state, name, cls, out, failed):
        """A module call ends: pops it, and unless it raised records its outputs and hooks the gradients of its
        outputs (computed by it) and of its inputs (not shared with an enclosing call)."""
        _, ev, k, record, ins, versions, shared = state
        self._stack.pop()
        self._modules.pop()
        self._frames.pop()
        if not record or failed:
            return
        busy = self._busy
        self._busy = True
        try:
            outs = self._record_all(out, ev, name, cls, "forward", "output", k)
            with _own_calls():  # version reads and hook registrations: not op events, no mode dispatch
                self._hook_grads(self._computed(outs, versions, ""), ev, name, cls, "input", k)
                self._hook_grads([(i, t) for i, t in ins if id(t) not in shared], ev, name, cls, "output", k)
        finally:
            self._busy = busy
