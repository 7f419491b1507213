"""Every subcommand `parity --help` lists (and every subcommand of those, `eval ppl` ...) has its row in
docs/cli.md "Commands", whose linked pages exist and name it; the table lists no command the tool lacks
(issue 32 §7: the CLI's registry and its documentation cannot drift apart)."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARITY = os.environ.get("PARITY_BIN", os.path.join(ROOT, "build", "parity"))


def subcommands(*path):
    """The names under "Subcommands:" of `parity PATH --help`."""
    out = subprocess.run([PARITY, *path, "--help"], capture_output=True, text=True, check=True).stdout
    if "Subcommands:" not in out:
        return []
    return re.findall(r"^  ([a-z][a-z0-9-]*)\s", out.split("Subcommands:", 1)[1], flags=re.M)


def every_command():
    names = []
    for name in subcommands():
        nested = subcommands(name)
        names += ["{} {}".format(name, n) for n in nested] if nested else [name]
    return names


def documented_commands():
    """{command: [linked pages]} from the table under "## Commands" of docs/cli.md."""
    text = open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8").read()
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \|.*\|(.*)\|$", line)
        if m:
            rows[m.group(1)] = re.findall(r"\]\(([^)#]+)\)", m.group(2))
    return rows


def test_every_command_is_in_the_table_and_every_row_is_a_command():
    tool, docs = every_command(), documented_commands()
    assert len(tool) >= 10, tool  # the parse of --help found the commands
    assert sorted(tool) == sorted(docs), ("in the tool, not in docs/cli.md: {}; in docs/cli.md, not in the tool: {}"
                                          .format(sorted(set(tool) - set(docs)), sorted(set(docs) - set(tool))))


def test_each_row_links_pages_that_name_the_command():
    for command, pages in documented_commands().items():
        top = command.split()[0]
        texts = [open(os.path.join(ROOT, "docs", page), encoding="utf-8").read() for page in pages]
        texts.append(open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8").read() if not pages else "")
        assert any("parity " + top in t for t in texts), "{}: none of {} mentions `parity {}`".format(
            command, pages or ["cli.md"], top)
