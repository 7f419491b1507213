"""Event names of a capture (docs/dump-format.md "Names"): the names of the model and of calls outside it, and
module, parameter and buffer names made writable."""

ROOT_NAME = "<root>"

GLOBAL_NAME = "<global>"  # parent of ops called outside the model (data, loss, optimizer)


def _well_formed(name):
    """A module, parameter or buffer name as text the dump can hold: Python names may carry lone surrogates
    ('bad\\udcffname', from a file name decoded with surrogateescape) that UTF-8 cannot encode, and the writer
    would raise into the user's forward (issue 33 §7). Such a name is kept, escaped: 'bad\\\\udcffname'."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
