"""`orchrm.rm` exports exactly the names it loads lazily, each from its home module."""

import importlib

import orchrm.rm as rm


def test_all_names_every_lazy_export_and_each_resolves():
    assert rm.__all__ == sorted(rm._HOMES)
    for name, home in rm._HOMES.items():
        assert getattr(rm, name) is getattr(importlib.import_module(f"orchrm.rm.{home}"), name)
