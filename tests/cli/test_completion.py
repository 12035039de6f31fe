"""Shell completions (`joules completion bash|zsh|fish`), exercised in the real shells: bash
through its completion function, fish through `complete -C`, zsh by typing into an interactive
zsh in tmux and reading the screen."""
import os
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import JOULES, joules

BINDIR = os.path.dirname(JOULES)


def script(shell, tmp):
    r = joules("completion", shell)
    assert r.returncode == 0, r.stderr
    path = tmp / f"joules.{shell}"
    path.write_text(r.stdout)
    return path


def bash_complete(path, *words):
    """What bash offers for `words` (the last one is being typed)."""
    quoted = " ".join(f"'{w}'" for w in words)
    r = subprocess.run(
        ["bash", "-c", f'source "{path}"; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; '
                       '_joules; printf "%s\\n" "${COMPREPLY[@]}"'],
        capture_output=True, text=True, cwd=path.parent, env={**os.environ, "PATH": f"{BINDIR}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stderr
    return [line for line in r.stdout.splitlines() if line]


def test_bash_completes_commands_options_values_and_files(tmp):
    path = script("bash", tmp)
    (tmp / "train.log").write_text("iter 1: loss 2.0\n")
    assert bash_complete(path, "joules", "wr") == ["wrap"]
    assert bash_complete(path, "joules", "run", "--ba") == ["--backend"]
    assert bash_complete(path, "joules", "run", "--backend", "") == [
        "auto", "nvml", "amdsmi", "levelzero", "hlml", "sim"]
    assert bash_complete(path, "joules", "wrap", "--backend", "s") == ["sim"]
    assert "--only-steps" in bash_complete(path, "joules", "steps", "--")
    assert bash_complete(path, "joules", "steps", "tra") == ["train.log"]
    assert bash_complete(path, "joules", "run", "--output", "tra") == ["train.log"]
    assert "true" in bash_complete(path, "joules", "run", "--", "tru")
    assert bash_complete(path, "joules", "completion", "") == ["bash", "zsh", "fish"]
    # --gpus offers "all" and, where nvidia-smi lists GPUs, their indices and UUIDs.
    assert "all" in bash_complete(path, "joules", "monitor", "--gpus", "")


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_commands_options_and_values(tmp):
    path = script("fish", tmp)

    def offered(line):
        r = subprocess.run(["fish", "-c", f"source {path}; complete -C'{line}'"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return [x.split("\t")[0] for x in r.stdout.splitlines()]

    assert "wrap" in offered("joules wr")
    assert offered("joules run --ba") == ["--backend"]
    # fish sorts what it offers.
    assert sorted(offered("joules run --backend ")) == [
        "amdsmi", "auto", "hlml", "levelzero", "nvml", "sim"]
    assert "--only-steps" in offered("joules steps --o")
    assert sorted(offered("joules completion ")) == ["bash", "fish", "zsh"]


class tmux_shell:
    """An interactive shell in a tmux of its own (socket), read back with capture-pane."""

    def __init__(self, command, env):
        self.socket = f"joules-test-{uuid.uuid4().hex[:8]}"
        self.tmux = ["tmux", "-L", self.socket]
        subprocess.run([*self.tmux, "new-session", "-d", "-x", "160", "-y", "40", "-s", "t",
                        "env", *[f"{k}={v}" for k, v in env.items()], *command], check=True)

    def screen(self):
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-t", "t"], capture_output=True,
                              text=True).stdout

    def type(self, *keys):
        """Text as typed, and the keys named Tab and Enter."""
        for k in keys:
            literal = [] if k in ("Tab", "Enter") else ["-l", "--"]
            subprocess.run([*self.tmux, "send-keys", "-t", "t", *literal, k], check=True)

    def wait_for(self, text, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.screen():
                return True
            time.sleep(0.05)
        return False

    def close(self):
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


@pytest.mark.skipif(shutil.which("zsh") is None or shutil.which("tmux") is None,
                    reason="zsh or tmux is not installed")
def test_zsh_completes_by_tab_in_an_interactive_shell(tmp):
    fpath = tmp / "zfunc"
    fpath.mkdir()
    (fpath / "_joules").write_text(joules("completion", "zsh").stdout)
    env = {"PATH": f"{BINDIR}:{os.environ['PATH']}", "HOME": str(tmp), "TERM": "xterm"}
    shell = tmux_shell(["zsh", "-f"], env)
    try:
        shell.type(f"PS1='zsh> '; fpath=({fpath} $fpath); autoload -Uz compinit && compinit -u -D; "
                   "echo ready", "Enter")
        assert shell.wait_for("\nready")
        shell.type("joules wr", "Tab")
        assert shell.wait_for("zsh> joules wrap"), shell.screen()
        shell.type("--back", "Tab")
        assert shell.wait_for("zsh> joules wrap --backend"), shell.screen()
        shell.type("s", "Tab")
        assert shell.wait_for("zsh> joules wrap --backend sim"), shell.screen()
        shell.type("--sim-mo", "Tab")
        assert shell.wait_for("--backend sim --sim-model"), shell.screen()
        assert "invalid argument" not in shell.screen()
    finally:
        shell.close()


def test_every_shell_gets_a_script_and_an_unknown_one_is_refused():
    for shell in ("bash", "zsh", "fish"):
        r = joules("completion", shell)
        assert r.returncode == 0 and "joules" in r.stdout
    r = joules("completion", "tcsh")
    assert r.returncode == 2 and r.stderr.startswith("joules: error: completion: expected bash")


def test_tune_and_sweep_are_in_the_help_the_man_page_and_the_completions(tmp):
    r = joules("--help")
    assert r.returncode == 0
    assert "tune" in r.stdout.split() and "sweep" in r.stdout.split(), r.stdout
    for command, option in (("tune", "--max-slowdown"), ("sweep", "--limits")):
        r = joules(command, "--help")
        assert r.returncode == 0 and option in r.stdout, r.stdout
        r = joules("manpage", command)
        assert r.returncode == 0 and option.replace("-", "\\-") in r.stdout, r.stdout[:2000]
    path = script("bash", tmp)
    assert bash_complete(path, "joules", "tu") == ["tune"]
    assert bash_complete(path, "joules", "sw") == ["sweep"]
    assert bash_complete(path, "joules", "tune", "--goal", "") == [
        "energy", "edp", "time-within", "cost"]
    assert "--restore" in bash_complete(path, "joules", "tune", "--re")
    assert bash_complete(path, "joules", "sweep", "--lim") == ["--limits"]
