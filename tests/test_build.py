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


# ------------------------------------------------------------ licence, name


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_licences_are_declared_and_shipped():
    project = pyproject()["project"]
    # PEP 639: an SPDX expression and the files that hold the texts.
    assert isinstance(project["license"], str), "license must be an SPDX expression (PEP 639)"
    terms = set(re.split(r"\s+(?:AND|OR)\s+", project["license"]))
    assert "MIT" in terms
    # The wheel ships the digits data, which are CC BY 4.0.
    assert (ROOT / "minigrad" / "datasets" / "digits.npz").exists() and "CC-BY-4.0" in terms
    assert set(project["license-files"]) >= {"LICENSE", "LICENSE-CONTENT"}
    for name in project["license-files"]:
        assert (ROOT / name).is_file(), f"{name} is listed in license-files but missing"
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    content = " ".join((ROOT / "LICENSE-CONTENT").read_text().split())
    assert "Creative Commons Attribution 4.0 International" in content
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in content
    # With a licence expression, setuptools refuses "License ::" classifiers.
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    readme = (ROOT / "README.md").read_text()
    assert "## Licence" in readme and "LICENSE-CONTENT" in readme and "CC BY 4.0" in readme


def test_build_backend_supports_pep_639():
    requires = pyproject()["build-system"]["requires"]
    setuptools = [r for r in requires if re.match(r"setuptools\b", r)]
    assert setuptools, "the build needs setuptools"
    low = re.search(r">=\s*(\d+)", setuptools[0])
    high = re.search(r"<\s*(\d+)", setuptools[0])
    assert low and int(low.group(1)) >= 77, "PEP 639 licence metadata needs setuptools >= 77"
    assert high and int(high.group(1)) > int(low.group(1)), "give setuptools an upper bound"


def test_distribution_has_a_name_of_its_own():
    project = pyproject()["project"]
    # PyPI's "minigrad" is another project; the import name stays minigrad.
    name = re.sub(r"[-_.]+", "-", project["name"]).lower()
    assert name != "minigrad"
    assert name == "minigrad-course"
    assert pyproject()["tool"]["setuptools"]["packages"]["find"]["include"] == ["minigrad*"]
    readme = (ROOT / "README.md").read_text()
    assert "pip install minigrad\n" not in readme and "pip install minigrad " not in readme


def test_project_metadata_points_to_one_home():
    project = pyproject()["project"]
    assert project["authors"] == [{"name": "The minigrad course authors"}]
    home = "https://github.com/minigrad-course/minigrad-course"
    urls = project["urls"]
    assert set(urls) >= {"Homepage", "Documentation", "Source", "Issues"}
    assert all(u.startswith(home) for u in urls.values()), urls
    assert home in (ROOT / "README.md").read_text()
    assert any(c.startswith("Programming Language :: Python :: 3") for c in project["classifiers"])
