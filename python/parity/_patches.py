"""Functions of torch replaced by parity's wrappers while some capture needs them (collectives, gradient
clipping), shared by every open capture: installed when the first one starts, restored when the last one
stops. A wrapper that someone else wrapped again after us stays in place, inert, rather than unwrap theirs."""
import threading


class SharedPatches:
    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._saved = []  # (namespace, attribute, original, wrapper)

    def acquire(self, install):
        """One more user; the first calls install(replace), where replace(ns, attr, orig, wrapper) puts the
        wrapper in place of `orig` when ns.attr is still it."""
        with self._lock:
            self._users += 1
            if self._users == 1:
                install(self._replace)

    def release(self):
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users:
                return
            for ns, attr, orig, wrapper in reversed(self._saved):
                if getattr(ns, attr, None) is wrapper:
                    setattr(ns, attr, orig)
            del self._saved[:]

    def _replace(self, ns, attr, orig, wrapper):
        if getattr(ns, attr, None) is orig:
            setattr(ns, attr, wrapper)
            self._saved.append((ns, attr, orig, wrapper))
