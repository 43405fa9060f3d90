"""lagnet's public names are listed once (`__all__` of `lagnet` and `lagnet.control`): each resolves, completion
shows exactly them, nothing public is left out of the list, and the errors share one root."""

import importlib
import types

import pytest

import lagnet

NAMESPACES = ["lagnet", "lagnet.control"]


@pytest.mark.parametrize("name", NAMESPACES)
def test_every_listed_name_resolves_and_completion_shows_exactly_them(name):
    module = importlib.import_module(name)
    assert len(set(module.__all__)) == len(module.__all__), "a name listed twice"
    for public in module.__all__:
        assert getattr(module, public) is not None, public
    assert sorted(dir(module)) == sorted(module.__all__)


@pytest.mark.parametrize("name", NAMESPACES)
def test_nothing_public_is_left_out_of_the_list(name):
    module = importlib.import_module(name)
    # What the package binds at import (its own submodules imported by others aside) is listed, or private.
    bound = {
        k
        for k, v in vars(module).items()
        if not k.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert bound <= set(module.__all__), sorted(bound - set(module.__all__))


def test_lagnets_errors_share_one_root():
    for error in (lagnet.ConfigError, lagnet.DataError, lagnet.NonPhysicalModel):
        assert issubclass(error, lagnet.LagnetError), error
    from lagnet.control import TaskMismatch

    assert issubclass(TaskMismatch, lagnet.LagnetError)
