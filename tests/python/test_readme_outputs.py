"""The README quotes what `make demo`'s files give (issue 31 §4: its PPL/KLD figures, final losses and texts
had drifted from what the demo prints). This runs scripts/demo.sh into a fresh folder, then every README
block that starts with `$ parity ...` on demo-out/, and checks that the block's lines appear in the
command's output in order. A README line may stop at "…" (the rest of a long line is left out), a line
"..." stands for lines left out, and elapsed times are not compared."""
import os
import re
import shlex
import subprocess

import pytest

import capture_helpers

SRC = capture_helpers.SOURCE_DIR
README = os.path.join(SRC, "README.md")
TIME = re.compile(r"\b\d+\.\d+ ?s\b")


def readme_blocks():
    """[(command, [quoted output lines])] of the README's ``` blocks whose first line is `$ parity ...`."""
    blocks, block = [], None
    for line in open(README, encoding="utf-8").read().split("\n"):
        if line.startswith("```"):
            block = [] if block is None else blocks.append(block)  # opens, or closes (append: None)
            continue
        if block is not None:
            block.append(line)
    out = []
    for b in blocks:  # a block may hold several commands, each followed by what it prints
        for k, line in enumerate(b):
            if not (line.startswith("$ parity ") and "demo-out/" in line):
                continue
            end = next((j for j in range(k + 1, len(b)) if b[j].startswith("$ ")), len(b))
            out.append((line[2:], b[k + 1:end]))
    return out


def normalise(line):
    return TIME.sub("<time>", line.rstrip())


def lines_in_order(quoted, actual):
    """The first quoted line not found (in order) in `actual`, or None."""
    at = 0
    for q in quoted:
        q = normalise(q)
        if q in ("", "..."):
            continue
        prefix = q[:-1] if q.endswith("…") else None
        while at < len(actual):
            a = normalise(actual[at])
            at += 1
            if (prefix is not None and a.startswith(prefix)) or a == q:
                break
        else:
            return q
    return None


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("readme")
    env = dict(capture_helpers.child_env(), DEMO_OUT=str(root / "demo-out"),
               PARITY_VENV_PYTHON=os.environ.get("PARITY_VENV_PYTHON", os.path.join(SRC, ".venv", "bin", "python")))
    build = os.path.dirname(capture_helpers.parity_bin())
    p = subprocess.run(["bash", os.path.join(SRC, "scripts", "demo.sh"), build], capture_output=True, text=True,
                       env=env, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return root


BLOCKS = readme_blocks()


def test_the_readme_quotes_demo_outputs():
    assert len(BLOCKS) >= 6, [c for c, _ in BLOCKS]


@pytest.mark.parametrize("command,quoted", BLOCKS, ids=[c[:60] for c, _ in BLOCKS])
def test_a_quoted_output_is_what_the_command_prints(demo, command, quoted):
    # An output folder the README names under /tmp (export never overwrites) goes into this run's folder.
    outside = sorted({a for a in shlex.split(command) if a.startswith("/tmp/")})
    for path in outside:
        command = command.replace(path, str(demo / os.path.basename(path)))
        quoted = [q.replace(path, str(demo / os.path.basename(path))) for q in quoted]
    args = shlex.split(command)[1:]
    env = dict(capture_helpers.child_env(), COLUMNS="100", PARITY_PYTHON=os.environ.get(
        "PARITY_VENV_PYTHON", os.path.join(SRC, ".venv", "bin", "python")))
    env.pop("NO_COLOR", None)
    p = subprocess.run([capture_helpers.parity_bin(), *args], capture_output=True, text=True, cwd=demo, env=env,
                       timeout=600)
    actual = (p.stdout + p.stderr).splitlines()
    missing = lines_in_order(quoted, actual)
    assert missing is None, f"README line not printed (in order) by `{command}`:\n  {missing}\n--- printed:\n" + \
        "\n".join(actual[:80])


def test_the_readme_prose_states_the_demo_figures(demo):
    """The demo summary's own figures: the PPL change and mean KLD of the bf16 training (rounded as the
    README writes them) and how many results the report draws."""
    import json
    text = open(README, encoding="utf-8").read()
    ev = json.load(open(demo / "demo-out" / "eval-ppl.json"))
    ppl = re.search(r"pure-bf16 training drifts \(PPL \+(\d+) %, KLD ([0-9.]+)\)", text)
    assert ppl, "the README no longer states the demo's PPL and KLD"
    assert int(ppl.group(1)) == round(100 * (ev["ppl_ratio"]["value"] - 1)), (ppl.group(0), ev["ppl_ratio"])
    assert float(ppl.group(2)) == round(ev["kld"]["mean"], 2), (ppl.group(0), ev["kld"]["mean"])
    words = {"five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
    n = re.search(r"`parity report` of all (\w+) results", text)
    results = [f for f in os.listdir(demo / "demo-out") if f.endswith(".json")]
    assert n and words[n.group(1)] == len(results), (n and n.group(0), sorted(results))
