"""Import of the compiled `_parity_core` extension with an error that says how to fix it."""
try:
    import _parity_core as core  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only on a broken install
    raise ImportError(
        "parity: the C++ extension _parity_core is not importable ("
        + str(e)
        + "). Build it with `make build` and run `.venv/bin/python`, or put <build>/python on "
        "PYTHONPATH next to the parity package (docs/capture.md, 'Installing')."
    ) from e

core_version = getattr(core, "__version__", "0.0.0")
