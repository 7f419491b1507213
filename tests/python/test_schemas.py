"""The schema ids the Python package writes come from include/parity/schemas.h through the extension
(`_parity_core.schemas`, python/ext/bind_schemas.cpp): the list is bound whole, the engines use it, and no
string of the package is a schema id of its own (docstrings and messages may name one; a value may not)."""
import io
import pathlib
import re
import tokenize

from parity._core import core

ROOT = pathlib.Path(__file__).resolve().parents[2]
ID = re.compile(r"parity\.[a-z][a-z.-]*/[0-9]+(\.[0-9]+)?")


def test_every_schema_of_the_header_is_bound_with_its_page():
    header = (ROOT / "include/parity/schemas.h").read_text()
    declared = set(re.findall(r'inline constexpr Schema \w+\{"(\w+)", "([^"]+)"', header))
    bound = {(s["name"], s["id"]) for s in core.schemas.ALL}
    assert bound == declared
    for s in core.schemas.ALL:
        assert getattr(core.schemas, s["name"]) == s["id"]
        assert s["id"] in (ROOT / s["doc"]).read_text(), s


def test_the_engines_take_their_ids_from_the_extension():
    from parity import sensitivity
    from parity.replay import document

    assert sensitivity.SCHEMA == core.schemas.SCAN
    assert sensitivity.STATE_SCHEMA == core.schemas.SCAN_STATE
    assert document.SCHEMA == core.schemas.REPLAY


def test_no_string_of_the_package_is_a_schema_id():
    spelled = []
    for path in sorted((ROOT / "python/parity").rglob("*.py")):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type == tokenize.STRING and ID.fullmatch(tok.string.strip("\"'")):
                spelled.append("{}:{}: {}".format(path.relative_to(ROOT), tok.start[0], tok.string))
    assert not spelled, "schema ids spelled in the package (use _parity_core.schemas): " + ", ".join(spelled)
