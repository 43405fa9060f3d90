"""Count the overrides of concrete methods in lagnet: a method, property or `__call__` that a class defines while a
base class in lagnet already defines it concretely (not abstract).

    python tools/count_overrides.py          # the total and one line per override
    python tools/count_overrides.py --total  # the total only

Classes are found by importing every module of lagnet; dunders other than `__call__` are left out (`__init__`,
`__post_init__`, `__check_init__` are constructors, not behaviour).
"""

import argparse
import importlib
import inspect
import pkgutil
import sys

import lagnet

_OPTIONAL = ("lagnet.control.casadi", "lagnet.control.gym_env")  # need extras that may be missing


def _classes():
    seen = set()
    for info in pkgutil.walk_packages(lagnet.__path__, "lagnet."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            if info.name.startswith(_OPTIONAL):
                continue
            raise
        for obj in vars(module).values():
            if inspect.isclass(obj) and obj.__module__.startswith("lagnet") and obj not in seen:
                seen.add(obj)
                yield obj


def _is_abstract(attr) -> bool:
    target = attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)
    return bool(
        getattr(attr, "__isabstractmethod__", False)
        or getattr(target, "__isabstractmethod__", False)
    )


def _is_method(attr) -> bool:
    if isinstance(attr, property | classmethod | staticmethod):
        return True
    return callable(attr) and not inspect.isclass(attr)


def overrides():
    out = []
    for cls in _classes():
        for name, attr in vars(cls).items():
            if name.startswith("__") and name != "__call__":
                continue
            if not _is_method(attr):
                continue
            for base in cls.__mro__[1:]:
                if not base.__module__.startswith("lagnet") or name not in vars(base):
                    continue
                if _is_method(vars(base)[name]) and not _is_abstract(vars(base)[name]):
                    out.append(
                        f"{cls.__module__}.{cls.__qualname__}.{name} overrides {base.__qualname__}.{name}"
                    )
                break
    return sorted(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", action="store_true", help="print the total only")
    args = parser.parse_args(argv)
    found = overrides()
    if not args.total:
        print("\n".join(found))
    print(f"{len(found)} overrides of concrete methods")
    return 0


if __name__ == "__main__":
    sys.exit(main())
