"""The captures open in this process: collective wrappers record into them, and they are stopped (their dumps
closed) when the interpreter exits."""
import atexit
import weakref

_open_captures = weakref.WeakSet()


def _stop_all_at_exit():
    for cap in list(_open_captures):
        try:
            cap.stop()
        except Exception:
            pass


atexit.register(_stop_all_at_exit)
