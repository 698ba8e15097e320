"""The operator registry: it walks dlgate/ops/, lists the specs in the order the folders'
``__init__.py`` files give, and stops with one line naming the file on any inconsistency."""
from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from dlgate.ops import registry

SPEC = """
from dlgate.ops.base import OpSpec


class {cls}(OpSpec):
    onnx_op = "{name}"

    def infer(self, ins, a):
        return ins

    def torch(self, a, x):
        return x


OPS = [{cls}]
"""


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """Write a catalogue package (relative path -> text) under a fresh name and return its name."""
    count = [0]

    def make(files: dict) -> str:
        count[0] += 1
        root = f"fakeops{count[0]}"
        for rel, text in files.items():
            p = tmp_path / root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(textwrap.dedent(text))
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()
        return root

    yield make
    for name in [m for m in sys.modules if m.startswith("fakeops")]:
        del sys.modules[name]


def spec(cls, name=None):
    return SPEC.format(cls=cls, name=name or cls)


def good(**extra):
    files = {
        "__init__.py": 'FAMILIES = ("alpha", "motifs")\n',
        "alpha/__init__.py": 'OPERATORS = ("zed", "abc")\n',
        "alpha/zed.py": spec("Zed"),
        "alpha/abc.py": spec("Abc"),
        "alpha/_shared.py": "HELPER = 1\n",
        "motifs/__init__.py": 'FAMILIES = ("beta",)\n',
        "motifs/common.py": "SHARED = 1\n",
        "motifs/beta/__init__.py": 'OPERATORS = ("one",)\n',
        "motifs/beta/one.py": spec("One"),
    }
    files.update(extra)
    return {k: v for k, v in files.items() if v is not None}


def test_the_order_is_the_listed_one_not_the_file_systems(tree):
    root = tree(good())
    specs = registry.load(root)
    assert list(specs) == ["Zed", "Abc", "One"]
    assert [s.family for s in specs.values()] == ["alpha", "alpha", "motifs.beta"]
    assert registry.modules(root) == [("alpha", f"{root}.alpha.zed"), ("alpha", f"{root}.alpha.abc"),
                                      ("motifs.beta", f"{root}.motifs.beta.one")]


@pytest.mark.parametrize("change, message", [
    ({"alpha/new.py": spec("New")}, r"alpha/new\.py is not listed in OPERATORS of fakeops\d+/alpha/__init__\.py"),
    ({"alpha/abc.py": None}, r"alpha/__init__\.py lists 'abc' in OPERATORS, but fakeops\d+/alpha/abc\.py is missing"),
    ({"gamma/__init__.py": 'OPERATORS = ()\n'}, r"fakeops\d+/gamma/ is not listed in FAMILIES of fakeops\d+/__init__"),
    ({"motifs/__init__.py": 'FAMILIES = ("beta", "delta")\n'}, r"lists 'delta' in FAMILIES, but .*/motifs/delta/ is "),
    ({"alpha/__init__.py": 'OPERATORS = ("zed", "abc", "zed")\n'}, r"lists 'zed' twice in OPERATORS"),
    ({"alpha/__init__.py": '"""No list."""\n'}, r"alpha/__init__\.py must define one of FAMILIES .* or OPERATORS"),
    ({"alpha/abc.py": spec("Abc") + "\nraise RuntimeError('broken on import')\n"},
     r"operator module fakeops\d+\.alpha\.abc \(fakeops\d+/alpha/abc\.py\) cannot be imported: "
     r"RuntimeError: broken on import"),
    ({"alpha/abc.py": "from .zed import Zed\n\nOPS = [Zed]\n"}, r"Zed is registered twice: by .*zed\.py and .*abc\.py"),
    ({"alpha/abc.py": spec("Abc", "Zed")}, r"operator spec 'Zed' is defined twice: by .*zed\.py and .*abc\.py"),
    ({"alpha/abc.py": "OPS = [int]\n"}, r"alpha/abc\.py: OPS holds <class 'int'>, which is not a named OpSpec class"),
    ({"alpha/abc.py": "X = 1\n"}, r"alpha/abc\.py defines no OPS list"),
])
def test_an_inconsistent_catalogue_stops_with_one_line_naming_the_file(tree, change, message):
    root = tree(good(**change))
    with pytest.raises(registry.RegistryError, match=message) as e:
        registry.load(root)
    assert "\n" not in str(e.value)


def test_the_catalogue_lists_every_operator_module_once_in_its_folders_order():
    import dlgate.ops

    specs = registry.load()
    assert list(specs) == list(registry.all_specs())
    walked = registry.modules()
    assert len({m for _, m in walked}) == len(walked)
    families = [f for f, _ in walked]
    assert list(dict.fromkeys(families)) == [f for f in dlgate.ops.FAMILIES if f != "motifs"] + \
        [f"motifs.{f}" for f in importlib.import_module("dlgate.ops.motifs").FAMILIES]
    order = [type(s).__module__ for s in specs.values()]
    assert list(dict.fromkeys(order)) == [m for _, m in walked]  # every module contributes, in its place
