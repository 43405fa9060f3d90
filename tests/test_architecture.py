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
