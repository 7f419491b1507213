"""Where the `parity` command-line tool is, for `python -m parity` and for code that runs it.

The CLI is a C++ program built next to the extension: a wheel installs it into the environment's
scripts folder (bin/), the in-tree build leaves it at <build>/parity beside <build>/python/_parity_core.
"""
import os
import shutil
from pathlib import Path

_NAME = "parity.exe" if os.name == "nt" else "parity"


def _executable(path):
    return path is not None and path.is_file() and os.access(path, os.X_OK)


def _from_build_tree():
    """<build>/parity when _parity_core was imported from <build>/python (make build, the .pth of
    scripts/make-venv.sh): the binary of the same build as the extension."""
    try:
        import _parity_core
    except ImportError:
        return None
    build = Path(_parity_core.__file__).resolve().parent.parent
    if not (build / "CMakeCache.txt").is_file():  # an installed extension: not a build tree
        return None
    return build / _NAME


def _from_installed_wheel():
    """The file the installed distribution recorded (RECORD lists the scripts it put in bin/, wherever
    the install scheme put bin/: a venv, --user, --prefix)."""
    try:
        from importlib import metadata
        files = metadata.files("parity") or []
    except Exception:  # not installed as a distribution (in-tree use), or unreadable metadata
        return None
    for f in files:
        if f.name == _NAME and f.parent.name in ("bin", "Scripts"):
            return Path(f.locate()).resolve()
    return None


def binary_path():
    """Absolute path of the `parity` executable: $PARITY_BIN when set, else the binary of the build
    tree the extension came from, else the one the installed wheel recorded, else `parity` on PATH.
    Raises FileNotFoundError naming every place it looked."""
    looked = []
    env = os.environ.get("PARITY_BIN")
    if env:
        if _executable(Path(env)):
            return str(Path(env).resolve())
        raise FileNotFoundError("PARITY_BIN={} is not an executable file".format(env))
    for where, candidate in (("build tree", _from_build_tree()), ("installed wheel", _from_installed_wheel())):
        if _executable(candidate):
            return str(candidate)
        if candidate is not None:
            looked.append("{} ({})".format(candidate, where))
    on_path = shutil.which(_NAME)
    if on_path:
        return str(Path(on_path).resolve())
    looked.append("PATH")
    raise FileNotFoundError("the parity executable was not found (looked in: {}); build it with `make build`, "
                            "install the package with `pip install .`, or set PARITY_BIN".format(", ".join(looked)))
