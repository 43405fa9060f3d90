"""lagnet's public names are listed once (`__all__` of `lagnet` and `lagnet.control`): each resolves, completion
shows exactly them, nothing public is left out of the list, and the errors share one root."""

import importlib
import re
import types
from pathlib import Path

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


API = Path(__file__).resolve().parents[1] / "docs" / "reference" / "api"


def _documented(text: str) -> set[str]:
    """The names a page documents: each `::: path.NAME` object, the public names a `::: module` defines, and the
    names it writes in backticks."""
    names = set(re.findall(r"`([A-Za-z_]\w*)`", text))
    for target in re.findall(r"^::: ([\w.]+)$", text, re.M):
        try:
            module = importlib.import_module(target)
        except ImportError:
            names.add(target.rsplit(".", 1)[1])
            continue
        names |= {k for k, v in vars(module).items() if getattr(v, "__module__", None) == target}
    return names


def test_the_control_api_page_lists_exactly_the_public_names():
    import lagnet.control

    page = (API / "control.md").read_text(encoding="utf-8")
    objects = {t.rsplit(".", 1)[1] for t in re.findall(r"^::: ([\w.]+)$", page, re.M)}
    public = set(lagnet.control.__all__)
    assert public <= _documented(page), sorted(public - _documented(page))
    # Nothing beyond them, but the top-level `learn_to_control` and the module of the Gymnasium classes.
    assert objects - public == {"learn_to_control", "gym_env"}, sorted(objects - public)


def test_every_public_object_of_lagnet_is_on_an_api_page():
    documented = set().union(
        *(_documented(p.read_text(encoding="utf-8")) for p in API.glob("*.md"))
    )
    objects = {n for n in lagnet.__all__ if not isinstance(getattr(lagnet, n), types.ModuleType)}
    missing = objects - documented - {"__version__"}
    assert not missing, sorted(missing)


# Each package's API page documents exactly its `__all__`, object by object (and the top-level names that live
# beside it), never whole modules.
PAGES = {
    "data": ("lagnet.data", set()),
    "evaluate": ("lagnet.evaluate", {"cross_validate"}),
    "integrators": ("lagnet.integrators", set()),
    "models": ("lagnet.models", set()),
    "run": ("lagnet.run", {"train_run"}),
    "systems": ("lagnet.systems", set()),
    "train": ("lagnet.train", set()),
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_api_page_lists_exactly_its_namespaces_names(page):
    namespace, beside = PAGES[page]
    module = importlib.import_module(namespace)
    targets = re.findall(r"^::: ([\w.]+)$", (API / f"{page}.md").read_text(encoding="utf-8"), re.M)
    for target in targets:
        home, name = target.rsplit(".", 1)
        assert not isinstance(getattr(importlib.import_module(home), name), types.ModuleType), (
            target
        )
    assert sorted(t.rsplit(".", 1)[1] for t in targets) == sorted({*module.__all__, *beside})
    # What the package binds at import is listed (its own submodules aside).
    bound = {k for k, v in vars(module).items() if not k.startswith("_")}
    bound -= {k for k, v in vars(module).items() if isinstance(v, types.ModuleType)}
    assert bound <= set(module.__all__), sorted(bound - set(module.__all__))
