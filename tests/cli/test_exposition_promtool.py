"""Real exposition output checked by `promtool check metrics` (Debian package `prometheus`),
the parser and linter of Prometheus itself.  joules has no command that prints metrics yet, so
the output comes from a test program built with the same library (tests/fixtures)."""
import pathlib
import shutil
import subprocess

import pytest

from conftest import BUILD, ROOT

PRINT = BUILD / "tests" / "joules_exposition_print"
PROMTOOL = shutil.which("promtool")

pytestmark = pytest.mark.skipif(PROMTOOL is None,
                                reason="promtool not installed (scripts/install-deps test)")


def exposition(*args):
    r = subprocess.run([str(PRINT), *args], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def promtool(data):
    """(exit status, output lines): 0 clean, 3 lint problems only, 1 a parse error."""
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=data, capture_output=True,
                       timeout=60)
    return r.returncode, (r.stdout + r.stderr).decode().splitlines()


@pytest.mark.parametrize("args", [["golden"], ["node", "8"], ["node", "1"]])
def test_joules_names_pass_promtool_without_a_single_remark(args):
    data = exposition(*args)
    assert data.endswith(b"\n")
    assert promtool(data) == (0, [])


def test_the_golden_file_is_what_the_program_prints():
    # The unit test compares the library with the file; this ties the file to promtool too.
    golden = (ROOT / "tests" / "golden" / "exposition.prom").read_bytes()
    assert exposition("golden") == golden
    assert promtool(golden) == (0, [])


def test_dcgm_compat_names_parse_and_promtool_only_lints_dcgms_own_naming():
    # dcgm-exporter's names and labels are kept as NVIDIA's dashboard queries them, which
    # promtool's linter frowns on; what matters is that they parse.
    status, lines = promtool(exposition("dcgm"))
    assert status == 3, lines
    assert not any("error" in line for line in lines), lines
    for line in lines:
        assert ("should be written in 'snake_case' not 'camelCase'" in line
                or "counter metrics should have \"_total\" suffix" in line), line


def test_promtool_does_catch_what_the_library_prevents():
    # The check is worth something only if promtool fails on the mistakes the library rules out.
    assert promtool(b'# TYPE x gauge\nx{a="b\n"} 1\n')[0] == 1  # unescaped newline
    assert promtool(b'# TYPE x gauge\nx{a="\xff"} 1\n')[0] == 1  # invalid UTF-8
    assert promtool(b"# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\n# TYPE x gauge\n")[0] == 1
    assert promtool(b"# HELP x_total h\n# TYPE x_total counter\nx_total 1,5\n")[0] == 1
