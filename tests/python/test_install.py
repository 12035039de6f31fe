"""The installed package as `pip install joules` leaves it: the command on PATH, one version
everywhere, the files a typed package carries, and an import that needs no GPU library."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import joules

from fake_gpus import ROOT, VENV_BIN, run_python, venv_env


def cmake_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(joules VERSION ([0-9]+\.[0-9]+\.[0-9]+)", text)
    assert m, "CMakeLists.txt has no project(joules VERSION x.y.z)"
    return m.group(1)


def test_joules_is_on_the_venvs_path_and_prints_the_projects_version():
    env = venv_env()
    found = shutil.which("joules", path=env["PATH"])
    assert found == str(VENV_BIN / "joules"), found
    r = subprocess.run(["joules", "--version"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    assert cmake_version() in r.stdout


def test_one_version_everywhere():
    version = cmake_version()
    assert joules.__version__ == version
    from joules import _joules

    assert _joules.header_version() == version
    header = (ROOT / "include" / "joules" / "joules.h").read_text()
    major, minor, patch = version.split(".")
    assert f"#define JOULES_VERSION_MAJOR {major}\n" in header
    assert f"#define JOULES_VERSION_MINOR {minor}\n" in header
    assert f"#define JOULES_VERSION_PATCH {patch}\n" in header
    from importlib.metadata import version as dist_version

    assert dist_version("joules") == version


def test_python_dash_m_joules_runs_the_command():
    r = subprocess.run([sys.executable, "-m", "joules", "--version"], env=venv_env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert cmake_version() in r.stdout


def test_the_package_is_typed_and_its_native_module_is_inside_it():
    package = pathlib.Path(joules.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_joules.pyi").is_file()
    natives = list(package.glob("_joules*.so"))
    assert len(natives) == 1, natives
    # Installed, not imported from the source tree.
    assert ROOT / "python" not in package.parents


def test_import_loads_no_gpu_library_and_no_framework():
    # NVML is dlopen'ed when a monitor opens, never at import; torch & co. are never imported.
    r = run_python("import joules, sys\n"
                   "maps = open('/proc/self/maps').read()\n"
                   "print('nvidia-ml' in maps, sorted(m for m in ('torch', 'jax', 'cupy', "
                   "'pandas', 'numpy') if m in sys.modules))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "[]"]


def test_every_public_name_resolves():
    for name in joules.__all__:
        assert getattr(joules, name) is not None, name
    assert set(joules.__all__) <= set(dir(joules))


def test_the_command_runs_a_command_from_the_venv():
    r = subprocess.run(["joules", "run", "--backend", "sim", "--", sys.executable, "-c",
                        "print('hello')"], env=venv_env(), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello\n"
    assert r.stderr.startswith("joules: ")


def test_the_shell_completions_are_installed_where_the_shells_look():
    # pip puts a wheel's data files under the environment's prefix: share/bash-completion,
    # share/zsh/site-functions and share/fish/vendor_completions.d, the places bash-completion
    # (through XDG_DATA_DIRS), zsh's fpath and fish look under /usr/local, ~/.local or a venv.
    prefix = pathlib.Path(sys.prefix)
    installed = {
        "bash": prefix / "share" / "bash-completion" / "completions" / "joules",
        "zsh": prefix / "share" / "zsh" / "site-functions" / "_joules",
        "fish": prefix / "share" / "fish" / "vendor_completions.d" / "joules.fish",
    }
    for shell, path in installed.items():
        assert path.is_file(), path
        r = subprocess.run(["joules", "completion", shell], env=venv_env(), capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert path.read_text() == r.stdout, shell
    # The installed bash script completes, in bash, with the installed command.
    r = subprocess.run(
        ["bash", "-c", f'source "{installed["bash"]}"; COMP_WORDS=(joules mon); COMP_CWORD=1; '
                       '_joules; printf "%s\\n" "${COMPREPLY[@]}"'],
        env=venv_env(), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["monitor"]
