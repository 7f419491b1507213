"""ctest cpp_link_layers: the modules' object code follows the declared layers (docs/architecture.md).

The include directories stop a module from *including* a header of a module above it; this checks
what they cannot: that no module's objects *link* against a symbol defined in a module it does not
use (directly or through others), e.g. through a declaration repeated in a private header. With the
declared graph acyclic (cmake/ParityModule.cmake), the libraries then have no link cycle either, and
libparity (cmake/ParityInstall.cmake) holds no symbol that only resolves by link order.

usage: link_layers.py MODULES_FILE   (written by parity_write_module_graph: "name lib dep,dep")
"""
import subprocess
import sys


def symbols(lib, undefined):
    """Global symbols of a static library: strong definitions, or undefined references."""
    args = ["nm", "-gP", "-u" if undefined else "--defined-only", lib]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    found = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or line.endswith(":"):  # "lib.a[obj.o]:" member headers
            continue
        name, kind = parts[0], parts[1]
        if undefined and kind == "U" or not undefined and kind in "TDBRG":  # weak (W, V) may repeat
            found.add(name)
    return found


def demangle(name):
    return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip() or name


def main(path):
    modules = {}
    for line in open(path):
        parts = line.split()
        modules[parts[0]] = (parts[1], parts[2].split(",") if len(parts) > 2 else [])
    below = {}
    for name in modules:  # declaration order is bottom-up: the modules a module uses are known first
        reach = set()
        for d in modules[name][1]:
            reach |= {d} | below[d]
        below[name] = reach
    libs = {m: lib for m, (lib, _) in modules.items() if lib != "-"}
    defined = {m: symbols(lib, False) for m, lib in libs.items()}
    owner = {}
    for m, syms in defined.items():
        for s in syms:
            owner.setdefault(s, m)
    bad, edges = [], 0
    for m, lib in libs.items():
        for s in sorted(symbols(lib, True) - defined[m]):
            o = owner.get(s)
            if o is None:
                continue  # outside parity: the standard library, fmt, protobuf, ...
            edges += 1
            if o not in below[m]:
                bad.append("parity_{} uses {} from parity_{}, which it does not depend on (DEPS: {})".format(
                    m, demangle(s), o, ", ".join(modules[m][1]) or "none"))
    for b in bad:
        print(b)
    print("{} modules, {} cross-module symbol references, {} against the layers".format(len(libs), edges, len(bad)))
    return 1 if bad or not edges else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
