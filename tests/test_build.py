"""The project's own files agree with each other."""

import os
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
    # tests/test_lab.py starts the lab and checks this for real; here, the text.
    make = (ROOT / "Makefile").read_text()
    serve = make.split("define serve_lab", 1)[1].split("endef", 1)[0]
    assert "--ServerApp.ip=127.0.0.1" in serve
    run = make.split("define LAB_RUN_PY", 1)[1].split("endef", 1)[0]
    assert "secrets.token_hex(24)" in run and "TOKEN is empty" in run
    for text in (serve, run, make):
        assert "token=''" not in text and "token=\"\"" not in text and "disable_check_xsrf" not in text
    config = make.split("\n$(LABCONF)/jupyter_server_config.py:", 1)[1].split("\n\n", 1)[0]
    assert "c.IdentityProvider.token = os.environ[\"JUPYTER_TOKEN\"]" in config
    assert "c.ServerApp.ip = \"127.0.0.1\"" in config


def test_lab_does_not_need_dot_but_the_tests_do():
    make = (ROOT / "Makefile").read_text()

    def prerequisites(target):
        return make.split(f"\n{target}:", 1)[1].split("\n", 1)[0].split()

    assert "dot-optional" in prerequisites("lab") and "dot" not in prerequisites("lab")
    assert "dot-optional" in prerequisites("lab-student")
    assert "dot" in prerequisites("unit") and "dot" in prerequisites("nbtest")
    optional = make.split("\ndot-optional:", 1)[1].split("\n\n", 1)[0]
    assert "ensure_program.sh" in optional and "||" in optional


def test_jupyter_trust_runs_only_when_a_notebook_changes():
    make = (ROOT / "Makefile").read_text()
    rule = make.split("\n$(TRUSTED):", 1)[1].split("\n\n", 1)[0]
    assert rule.split("\n", 1)[0].split("|")[0].split() == ["$(NOTEBOOKS)"]
    assert "jupyter trust" in rule and "touch $@" in rule
    assert re.search(r"^TRUSTED\s*:=\s*\$\((VENV)\)/", make, re.M)
    assert "$(TRUSTED)" in make.split("\nlab:", 1)[1].split("\n", 1)[0]


def test_installing_never_waits_for_a_password():
    script = (ROOT / "tools" / "ensure_program.sh").read_text()
    code = [ln.split("#", 1)[0] for ln in script.split("cat >&2", 1)[0].splitlines()]
    # Every sudo that runs a command is `sudo -n`, which fails instead of prompting.
    runs = [m for ln in code for m in re.finditer(r"(?<![$\w\"-])sudo\s+(\S+)", ln)
            if not ln[:m.start()].endswith("command -v ")]
    assert runs, "ensure_program.sh no longer uses sudo; update this test"
    assert all(m.group(1) == "-n" for m in runs), [m.group(0) for m in runs]
    assert 'sudo="sudo -n"' in script


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
    site = "https://minigrad-course.github.io/minigrad-course/"
    assert urls["Documentation"] == site, "Documentation is the course's website"
    assert all(u.startswith(home) for k, u in urls.items() if k != "Documentation"), urls
    assert home in (ROOT / "README.md").read_text() and site in (ROOT / "README.md").read_text()
    assert any(c.startswith("Programming Language :: Python :: 3") for c in project["classifiers"])


# ------------------------------------------------------- conda, binder, pins


def yaml_section(name: str) -> dict[str, str]:
    """The `key: value` lines under a top-level `name:` of environment.yml (a flat mapping)."""
    values, inside = {}, False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        code = line.split("#", 1)[0].rstrip()
        if not code:
            continue
        if not code.startswith(" "):
            inside = code == f"{name}:"
            continue
        m = re.match(r"\s+([A-Za-z_][A-Za-z0-9_]*):\s*(.*)", code)
        if inside and m:
            values[m.group(1)] = m.group(2).strip().strip("\"'")
    return values


def test_environment_yml_can_run_the_tests():
    text = (ROOT / "environment.yml").read_text()
    conda = conda_dependencies()
    # tomllib is in the standard library from 3.11; before that the tests need tomli.
    python = re.search(r"^\s+-\s+python\s*>=\s*3\.(\d+)", text, re.M)
    assert python and (int(python.group(1)) >= 11 or "tomli" in conda)
    floor = re.match(r">=\s*3\.(\d+)", pyproject()["project"]["requires-python"])
    assert python and python.group(1) == floor.group(1), "environment.yml has pyproject.toml's Python floor"
    for tool in ("sphinx", "myst-nb", "sphinx-book-theme"):  # the website's tools
        assert tool in conda, f"environment.yml lacks {tool}"
    assert "Tested versions" in text
    assert yaml_section("variables").get("PYTHONHASHSEED") == "0"
    assert re.search(r"^export PYTHONHASHSEED\s*:?=\s*0$", (ROOT / "Makefile").read_text(), re.M)
    # The documented test command is the one `make test` runs.
    commands = [ln for ln in text.splitlines() if "pytest" in ln and "--nbval" in ln]
    assert commands, "environment.yml should say how to run the tests"
    command = commands[0]
    for part in ("PYTHONHASHSEED=0", "pytest tests", "--nbval ", "--nbval-current-env",
                 "--nbval-sanitize-with tests/nbval_sanitize.cfg", "notebooks"):
        assert part in command, f"the test command lacks {part!r}"
    assert "--nbval-lax" not in command
    assert (ROOT / "tests" / "nbval_sanitize.cfg").is_file()


def constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_constraints_pin_the_course_and_leave_torch_out():
    pins = constraints()
    project = pyproject()["project"]
    extras = project["optional-dependencies"]
    wanted = project["dependencies"] + extras["course"] + extras["grading"]
    for dep in wanted:
        if "python_version < '3.11'" in dep:
            continue
        name = re.sub(r"[-_.]+", "-", re.split(r"[<>=!~; \[]", dep, maxsplit=1)[0]).lower()
        assert name in pins, f"constraints.txt does not pin {name}"
    assert pins["jupyterlab"].startswith("4."), "the course runs on JupyterLab 4"
    assert not {n for n in pins if n == "torch" or n.startswith(("nvidia-", "triton"))}
    assert "minigrad-course" not in pins and "minigrad" not in pins
    header = (ROOT / "constraints.txt").read_text()
    assert re.search(r"^# Python: 3\.\d+$", header, re.M), "constraints.txt must say which Python it is for"
    make = (ROOT / "Makefile").read_text()
    assert "-c $(CONSTRAINTS)" in make and re.search(r"^CONSTRAINTS\s*\?=\s*constraints\.txt$", make, re.M)
    upgrade = make.split("\nupgrade:", 1)[1].split("\n\n", 1)[0]
    assert "jupyterlab<5" in upgrade and "pip freeze" in upgrade and "constraints.txt" in upgrade


def test_binder_builds_the_course():
    binder = ROOT / "binder"
    runtime = (binder / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-3\.(\d+)", runtime)
    assert m, f"runtime.txt should name a Python version, not {runtime!r}"
    low = re.match(r">=\s*3\.(\d+)", pyproject()["project"]["requires-python"])
    assert int(m.group(1)) >= int(low.group(1))
    # The same Python as the pinned versions, so that they exist for it.
    assert f"# Python: 3.{m.group(1)}" in (ROOT / "constraints.txt").read_text()

    requirements = {}
    for line in (binder / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            requirements[re.sub(r"[-_.]+", "-", name).lower()] = version
    pins = constraints()
    for dep in pyproject()["project"]["dependencies"]:
        name = re.split(r"[<>=!~; ]", dep, maxsplit=1)[0].lower()
        assert requirements.get(name) == pins[name], f"binder/requirements.txt: {name} as in constraints.txt"
    assert "graphviz" in (binder / "apt.txt").read_text().split()

    post = binder / "postBuild"
    assert os.access(post, os.X_OK), "postBuild must be executable"
    script = [ln.split("#", 1)[0] for ln in post.read_text().splitlines()]
    assert any(re.search(r"pip install (--no-deps )?(-e )?\.(\s|$)", ln) for ln in script), \
        "postBuild must install the package"
    text = "\n".join(script)
    assert "tools/make_student.py" in text and "jupyter trust" in text
    assert '"fetchNews": "false"' in text


def test_pypi_gets_a_description_whose_links_all_work_there():
    # PyPI shows the readme of pyproject.toml without the repository around it: no relative links.
    readme = pyproject()["project"]["readme"]
    text = (ROOT / readme).read_text()
    links = re.findall(r"\]\(([^)]+)\)", text) + re.findall(r"<([^>]+)>", text)
    assert links, f"{readme} links nowhere"
    relative = [u for u in links if not u.startswith(("https://", "http://", "mailto:"))]
    assert not relative, f"{readme} has relative links, which break on PyPI: {relative}"
    assert "pip install minigrad-course" in text and "pip install minigrad\n" not in text
    assert "https://minigrad-course.github.io/minigrad-course/" in text


def test_the_sdist_tests_run_outside_the_repository(tmp_path):
    # A packager unpacks the sdist and runs pytest there, with no checkout around it.
    import shutil
    import subprocess
    import sys
    import tarfile

    src = tmp_path / "src"
    for name in ("pyproject.toml", "README.md", "LICENSE", "LICENSE-CONTENT", "MANIFEST.in", "docs/pypi.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    for folder in ("minigrad", "tests"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    code = "from setuptools import build_meta as b; print(b.build_sdist('../dist'))"
    built = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    with tarfile.open(tmp_path / "dist" / built.stdout.split()[-1]) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (sdist,) = (tmp_path / "unpacked").iterdir()
    assert not (sdist / "notebooks").exists() and (sdist / "tests" / "conftest.py").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(sdist)
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    run = subprocess.run([*pytest_cmd, "tests", "--collect-only"],
                         cwd=sdist, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "ERROR collecting" not in run.stdout, run.stdout[-3000:]
    assert "left out" in run.stdout and "test_notebooks.py" in run.stdout
    one = subprocess.run([*pytest_cmd, "-q", "tests/test_tensor.py"],
                         cwd=sdist, env=env, capture_output=True, text=True, timeout=300)
    assert one.returncode == 0, one.stdout[-3000:]
