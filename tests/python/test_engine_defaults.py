"""The defaults of parity's Python engines have one owner, the engine (issue 32 §3): `parity scan` and
`parity replay` pass an option only when their user gave it, and the defaults their --help (and
docs/scan.md) state are the engine's: python/parity/sensitivity.py's DEFAULTS and TABLE_ROWS, the options
of python/parity/replay/cli.py. This test fails when they drift. Needs no torch: the engines' values are
read from their source with ast, and the scan engine is a stand-in interpreter that records its arguments."""
import ast
import os
import pathlib
import re
import stat
import subprocess

from capture_helpers import parity_bin, run_cli
from parity._core import core

ROOT = pathlib.Path(__file__).resolve().parents[2]


def engine_constants():
    """DEFAULTS and TABLE_ROWS as sensitivity.py assigns them (literals, read without importing torch)."""
    tree = ast.parse((ROOT / "python/parity/sensitivity.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("DEFAULTS", "TABLE_ROWS"):
                found[node.targets[0].id] = ast.literal_eval(node.value)
    assert set(found) == {"DEFAULTS", "TABLE_ROWS"}, found
    return found["DEFAULTS"], found["TABLE_ROWS"]


def option_help(help_text, option):
    """An option's entry in CLI11's help: its line and the continuation lines CLI11 wraps a long name to."""
    lines = help_text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip().startswith(option + " "))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("-")), len(lines))
    return " ".join(l.strip() for l in lines[start:end])


def help_default(help_text, option):
    """The default an option's help entry states: '... default X)' or '(default X;'."""
    line = option_help(help_text, option)
    m = re.search(r"default ([^;)]+)[;)]", line)
    assert m, line
    return m.group(1)


def test_help_states_the_engines_defaults():
    defaults, rows = engine_constants()
    text = run_cli("scan", "--help", check=0).stdout
    assert help_default(text, "--lower-to") == defaults["lower_to"]
    assert float(help_default(text, "--budget-kld")) == defaults["budget_kld"]
    assert int(help_default(text, "--limit")) == rows


def test_docs_state_the_engines_defaults():
    defaults, _ = engine_constants()
    doc = (ROOT / "docs/scan.md").read_text()
    stated = dict(re.findall(r"^\| `(\w+)` \|[^\n]*?\(`([^`]+)`\)", doc, flags=re.M))
    assert stated["lower_to"] == defaults["lower_to"]
    assert float(stated["budget_kld"]) == defaults["budget_kld"]
    assert stated["greedy"] == str(defaults["greedy"]).lower()


def stand_in_engine(tmp_path):
    """An interpreter for PARITY_PYTHON that records `-m parity.sensitivity ARGS` and writes a minimal
    result to the --json file, as the engine does."""
    script = tmp_path / "python"
    script.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS_FILE"\n'
                      'while [ $# -gt 0 ]; do\n'
                      '  if [ "$1" = --json ]; then printf \'{"schema": "%s"}\' "$SCAN_SCHEMA" > "$2"; fi\n'
                      '  shift\ndone\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def engine_argv(tmp_path, *options):
    args_file = tmp_path / "args.txt"
    env = dict(os.environ, PARITY_PYTHON=str(stand_in_engine(tmp_path)), ARGS_FILE=str(args_file),
               SCAN_SCHEMA=core.schemas.SCAN)
    p = subprocess.run([parity_bin(), "scan", "--factory", "f.py:make", *options], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return args_file.read_text().splitlines()


def test_unset_options_are_left_to_the_engine(tmp_path):
    argv = engine_argv(tmp_path)
    assert argv[:4] == ["-m", "parity.sensitivity", "--factory", "f.py:make"]
    for option in ("--lower-to", "--budget-kld", "--limit", "--unit", "--base", "--state", "--no-plan"):
        assert option not in argv


def test_given_options_are_passed(tmp_path):
    argv = engine_argv(tmp_path, "--lower-to", "bf16", "--budget-kld", "0.1", "--limit", "0", "--no-plan")
    assert argv[argv.index("--lower-to") + 1] == "bf16"  # given, even when equal to the default
    assert float(argv[argv.index("--budget-kld") + 1]) == 0.1
    assert argv[argv.index("--limit") + 1] == "0"
    assert "--no-plan" in argv


def replay_engine_defaults():
    """The defaults of `python -m parity.replay run`'s options, as replay/cli.py's add_argument calls give."""
    tree = ast.parse((ROOT / "python/parity/replay/cli.py").read_text())
    found = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "r"):
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if default is not None:
                found[node.args[0].value] = ast.literal_eval(default)
    return found


def test_replay_help_states_the_engines_defaults():
    engine = replay_engine_defaults()
    text = run_cli("replay", "--help", check=0).stdout
    assert "{} (default:".format(engine["--device"]) in option_help(text, "--device")
    # --max-events is the engine's --limit: not passed when 0, and the engine's 0 means every event
    assert engine["--limit"] == 0 and "(default: all)" in option_help(text, "--max-events")
