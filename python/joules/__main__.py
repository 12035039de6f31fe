"""``python -m joules ...`` runs the ``joules`` command installed with this package."""
from __future__ import annotations

import os
import shutil
import sys
import sysconfig


def command_path() -> str:
    """The ``joules`` executable pip installed beside this interpreter's scripts."""
    for scheme_dir in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(scheme_dir, "joules")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("joules")
    if found is None:
        raise SystemExit("joules: the joules command is not installed beside this Python")
    return found


def main() -> None:
    path = command_path()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
