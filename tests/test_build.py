"""The project's own files agree with each other."""

import pathlib
import re

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONDA_NAMES = {"graphviz": "python-graphviz"}  # PyPI name -> conda-forge name


def conda_dependencies() -> list[str]:
    """Names listed under `dependencies:` in environment.yml (a flat YAML list)."""
    names, in_deps = [], False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        line = line.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line.startswith(" "):
            in_deps = line.startswith("dependencies:")
            continue
        m = re.match(r"\s+-\s+([A-Za-z0-9_.\-]+)", line)
        if in_deps and m:
            names.append(m.group(1).lower())
    return names


def test_environment_yml_names_every_runtime_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = [re.split(r"[<>=!~; ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]]
    assert runtime, "pyproject.toml lists no runtime dependencies"
    conda = conda_dependencies()
    for dep in runtime:
        assert CONDA_NAMES.get(dep, dep) in conda, f"environment.yml lacks {dep}"
    for tool in ("graphviz", "jupyterlab", "nbval", "pytest", "pip"):
        assert tool in conda, f"environment.yml lacks {tool}"


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme


def test_lab_keeps_its_token_and_binds_localhost():
    make = (ROOT / "Makefile").read_text()
    lab = make.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "127.0.0.1" in lab
    assert "token=''" not in lab and "token=\"\"" not in lab and "disable_check_xsrf" not in lab


def test_nbval_is_strict():
    make = (ROOT / "Makefile").read_text()
    assert "--nbval " in make and "--nbval-lax" not in make
