"""libjoules.so as other programs see it: it exports the functions of include/joules/joules.h and
nothing else, each versioned JOULES_1, under the soname libjoules.so.0, and imports nothing that
would take over the process that loads it (signal handling, C++ streams)."""
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("JOULES_TEST_BUILD_DIR", ROOT / "build" / "dev"))
LIB = BUILD / "src" / "libjoules.so"
HEADER = ROOT / "include" / "joules" / "joules.h"


def declared():
    """The functions joules.h declares."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    return set(re.findall(r"\b(joules_[a-z_]+)\s*\(", text))


def dynamic_symbols():
    """(name, version, defined) of every dynamic symbol."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(LIB)], capture_output=True, text=True,
                         check=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].rstrip(":").isdigit() or f[7] == "":
            continue
        name, _, version = f[7].partition("@")
        rows.append((name, version.lstrip("@"), f[6] != "UND"))
    return rows


def test_it_exports_the_c_api_and_nothing_else():
    defined = {(n, v) for n, v, d in dynamic_symbols() if d and n}
    names = {n for n, _ in defined}
    assert names - {"JOULES_1"} == declared()
    assert all(v == "JOULES_1" for n, v in defined if n != "JOULES_1"), sorted(defined)


def test_nm_agrees():
    out = subprocess.run(["nm", "-D", "--defined-only", str(LIB)], capture_output=True, text=True,
                         check=True).stdout
    names = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    assert names == declared() | {"JOULES_1"}


def test_its_soname_is_libjoules_so_0():
    out = subprocess.run(["readelf", "-d", str(LIB)], capture_output=True, text=True,
                         check=True).stdout
    assert re.search(r"\(SONAME\)\s+Library soname: \[libjoules\.so\.0\]", out), out
    assert LIB.resolve().name == "libjoules.so.0.1.0"


# In a tree compiled as unity batches an object of joules_core holds up to 16 files, and the
# library imports what all of them call (tests/api/CMakeLists.txt): the dev tree checks this.
@pytest.mark.skipif(os.environ.get("JOULES_TEST_UNITY_BUILD") == "1",
                    reason="unity batches: the dev tree checks what libjoules imports")
def test_it_imports_no_signal_handling_and_no_cxx_streams():
    out = subprocess.run(["nm", "-D", "--undefined-only", str(LIB)], capture_output=True,
                         text=True, check=True).stdout
    imported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    forbidden = {"signal", "sigaction", "sigprocmask", "pthread_sigmask", "signalfd", "sigwait",
                 "raise", "exit", "_exit", "abort_handler", "fork", "execve", "posix_spawn",
                 "_ZSt4cout", "_ZSt4cerr", "_ZSt4clog", "_ZNSt8ios_base4InitC1Ev"}
    assert not imported & forbidden, sorted(imported & forbidden)
