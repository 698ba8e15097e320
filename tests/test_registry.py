"""The operator registry: every family module it lists is loaded, or it says which is missing."""
from __future__ import annotations

import pytest

from dlgate.spec import registry


def test_a_missing_family_module_is_an_error_naming_it(monkeypatch):
    # all_specs.__wrapped__: the registry's loading without its cache, so no other test sees this
    monkeypatch.setattr(registry, "FAMILIES", ("nosuchfamily", "unary"))
    with pytest.raises(registry.RegistryError, match=r"dlgate\.spec\.nosuchfamily \(dlgate/spec/nosuchfamily\.py\) "
                                                     r"is missing"):
        registry.all_specs.__wrapped__()
    monkeypatch.setattr(registry, "FAMILIES", ("unary", "motifs.nosuchmotif"))
    with pytest.raises(registry.RegistryError, match=r"dlgate/spec/motifs/nosuchmotif\.py"):
        registry.all_specs.__wrapped__()


def test_every_listed_family_loads_and_contributes_operators():
    specs = registry.all_specs.__wrapped__()
    assert {s.family for s in specs.values()} == set(registry.FAMILIES)
    assert list(specs) == list(registry.all_specs())
