"""The defaults docs/eval.md's synopsis states are the ones `parity eval ... --help` shows, which CLI11
reads from the eval library's option structs (McOptions, AccuracyThresholds, PplThresholds, kFlipsListed;
issue 32 §3: one owner). Fails when the docs drift from the library."""
import pathlib
import re

from capture_helpers import run_cli

ROOT = pathlib.Path(__file__).resolve().parents[2]


def synopsis_defaults():
    """{subcommand: {option: value}} from docs/eval.md's usage block: each `[--option NUMBER]`."""
    block = (ROOT / "docs/eval.md").read_text().split("```")[1]
    found, sub = {}, None
    for line in block.splitlines():
        m = re.match(r"parity eval (\S+)", line)
        if m:
            sub = m.group(1)
        if sub:
            found.setdefault(sub, {}).update(re.findall(r"\[--([\w-]+) ([0-9][0-9.e-]*)\]", line))
    return found


def help_defaults(sub):
    """{option: value} of the defaults `parity eval SUB --help` shows (`--option TYPE=VALUE`)."""
    text = run_cli("eval", sub, "--help", check=0).stdout
    return dict(re.findall(r"^\s+--([\w-]+) [A-Z:]+=(\S+)", text, flags=re.M))


def test_the_synopsis_states_the_librarys_defaults():
    stated = synopsis_defaults()
    assert set(stated) == {"ppl", "mc", "lm-eval"}
    checked = 0
    for sub, options in stated.items():
        shown = help_defaults(sub)
        for option, value in options.items():
            assert option in shown, "{} --{}: no default in --help".format(sub, option)
            assert float(value) == float(shown[option]), "docs/eval.md: {} --{} {} but the library's is {}".format(
                sub, option, value, shown[option])
            checked += 1
    assert checked >= 6  # --ppl-rel, --bootstrap, --flips (mc and lm-eval), --pass-points, --fail-points
