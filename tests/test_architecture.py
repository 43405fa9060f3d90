"""The architecture holds: one-way imports (import-linter contracts in pyproject.toml), no dispatch on model
attributes, no private JAX imports, every directly imported package declared."""

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lagnet"


def test_import_contracts_are_kept():
    """`lint-imports` checks the layers, the control/evaluate ban on training code and import cycles."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in out.stdout, out.stdout[-2000:]


def test_loading_a_run_for_control_does_not_import_training():
    """At run time too: `import lagnet` and `lagnet.load` leave the training loop and plotting unimported."""
    code = (
        "import sys, lagnet, lagnet.control\n"
        "bad = [m for m in sys.modules if m.startswith(('lagnet.train', 'lagnet.run.training', "
        "'lagnet.evaluate', 'matplotlib'))]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_no_dispatch_on_model_attributes():
    """Callers check types (`AbstractDynamics`, `AbstractLagrangianDynamics`), not attributes."""
    pattern = re.compile(r"\b(hasattr|getattr)\(\s*(model|self\.model)\b")
    offenders = []
    for folder in ("rollout.py", "integrators", "control", "train", "evaluate"):
        path = PACKAGE / folder
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for f in files:
            for i, line in enumerate(f.read_text().splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{f.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, offenders


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_no_private_jax_and_every_package_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [
        d for extra in project["optional-dependencies"].values() for d in extra
    ]
    names = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("-", "_") for d in declared}
    # Import names that differ from their distribution's.
    distribution = {"yaml": "pyyaml"}
    missing, private = set(), []
    for f in sorted(PACKAGE.rglob("*.py")):
        for module in _imports(f):
            top = module.split(".")[0]
            if module.startswith("jax._src"):
                private.append(f"{f.relative_to(ROOT)}: {module}")
            if top == "lagnet" or top in sys.stdlib_module_names:
                continue
            if distribution.get(top, top).lower() not in names:
                missing.add(f"{top} ({f.relative_to(ROOT)})")
    assert not private, private
    assert not missing, f"imported but not declared in pyproject.toml: {sorted(missing)}"


def _concrete_model_classes() -> set[str]:
    import inspect

    import lagnet.models as models

    return {
        name
        for name, obj in vars(models).items()
        if inspect.isclass(obj)
        and issubclass(obj, models.AbstractModel)
        and not inspect.isabstract(obj)
    }


def _class_names(node: ast.expr):
    """The names a class argument of isinstance/issubclass refers to (a name, an attribute, a tuple, a union)."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.Tuple):
        for e in node.elts:
            yield from _class_names(e)
    elif isinstance(node, ast.BinOp):
        yield from _class_names(node.left)
        yield from _class_names(node.right)


def test_nothing_outside_models_branches_on_a_concrete_model_class():
    """A model type answers for itself (`AbstractModel`'s members); callers never ask which class it is, with
    isinstance/issubclass or `type(model) is …`."""
    concrete = _concrete_model_classes()
    assert {"PINODE", "BlackBox", "LearnedPotential"} <= concrete
    offenders = []
    for f in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "models") in f.parents:
            continue
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            named = set()
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "isinstance",
                "issubclass",
            ):
                named = set(_class_names(node.args[1])) if len(node.args) > 1 else set()
            elif isinstance(node, ast.Compare) and any(
                isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) for op in node.ops
            ):
                for side in (node.left, *node.comparators):
                    if isinstance(side, ast.Call) and getattr(side.func, "id", None) == "type":
                        named = {n for c in (node.left, *node.comparators) for n in _class_names(c)}
            if named & concrete:
                offenders.append(f"{f.relative_to(ROOT)}:{node.lineno}: {sorted(named & concrete)}")
    assert not offenders, offenders


# Overrides of concrete methods in lagnet/ (`tools/count_overrides.py`): this many at most, none in the rigs.
# (41: `RigidBodyTree.parameter`, which refuses the kinematics an expanded tree has fixed, saying how to unfix them;
# 44: `DoublePendulum.consistent`, `Pendulum.consistent` and `RigidBodyTree.consistent`, which keep learned
# inertias where M ≻ 0, a hook whose default, the identity, every other system keeps.)
MAX_CONCRETE_OVERRIDES = 44


def test_overrides_of_concrete_methods_do_not_grow():
    import runpy

    tool = runpy.run_path(str(ROOT / "tools" / "count_overrides.py"))
    found = tool["overrides"]()
    assert len(found) <= MAX_CONCRETE_OVERRIDES, found
    assert not [line for line in found if line.startswith("lagnet.simulate.")], found


# Lecture-only code: the lecture notes' oscillators and networks, in subpackages of their layer.
LECTURE = ("lagnet.systems.lecture", "lagnet.models.lecture")
# The only generic modules that may import them: the parent packages' re-exports and the config registry.
LECTURE_IMPORTERS = {
    "lagnet/systems/__init__.py",
    "lagnet/models/__init__.py",
    "lagnet/config/registry.py",
}


def _absolute_imports(path: Path):
    """(line, module) for every import in `path`, relative ones resolved; `from a import b` gives a.b too."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts if parts[-1] == "__init__" else parts[:-1]
    package = [p for p in package if p != "__init__"]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield node.lineno, module
            yield from ((node.lineno, f"{module}.{a.name}") for a in node.names)


def _is_lecture(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in LECTURE)


def test_resolving_imports_finds_the_lecture_modules():
    """The check below sees the re-exports it allows, so it would see any other import of them."""
    found = {m for _, m in _absolute_imports(PACKAGE / "systems" / "__init__.py")}
    assert "lagnet.systems.lecture.bowed.BowedOscillator" in found
    found = {m for _, m in _absolute_imports(PACKAGE / "systems" / "lecture" / "bowed.py")}
    assert {
        "lagnet.systems.lecture._oscillator",
        "lagnet.systems._params",
        "lagnet._types",
    } <= found


def test_only_the_registries_import_the_lecture_code():
    """No generic module of lagnet imports `lagnet.systems.lecture` or `lagnet.models.lecture`, nor their classes
    through the parent packages' re-exports, except those re-exports and the config registry."""
    import lagnet.models.lecture as lecture_models
    import lagnet.systems.lecture as lecture_systems

    reexported = {
        f"{parent}.{name}"
        for parent, module in (
            ("lagnet.systems", lecture_systems),
            ("lagnet.models", lecture_models),
        )
        for name in vars(module)
        if not name.startswith("_") and isinstance(vars(module)[name], type)
    }
    assert "lagnet.systems.Cloth" in reexported and "lagnet.models.PassiveFriction" in reexported
    offenders = []
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel in LECTURE_IMPORTERS or any(
            rel.startswith(p.replace(".", "/") + "/") for p in LECTURE
        ):
            continue
        for line, module in _absolute_imports(f):
            if _is_lecture(module) or module in reexported:
                offenders.append(f"{rel}:{line}: {module}")
    assert not offenders, offenders
