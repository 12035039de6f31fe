"""Every joules command shown in README.md and docs/*.md, and every example of every subcommand's
--help, runs as written against the simulated backend, and output shown in the docs matches what
joules prints.

How the examples are found:
- a fenced code block's lines whose first word (after VAR=value assignments) is `joules` are
  commands; `$ joules ...` lines in a block are commands and the lines after them, up to the next
  `$` line, their output;
- `<!-- output of: COMMAND -->` right before a block says the block is COMMAND's output
  (`<!-- output of: COMMAND (exit 2) -->` when it ends with that status);
- `<!-- not run: REASON -->` right before a block leaves it out (say why: it needs root, a GPU).

How they run: in a scratch directory holding the docs' example files (tests/docs/files), with
PATH giving `joules` and stand-ins for the trainers the docs name (tests/docs/bin: `torchrun`,
`python`, `./my_trainer` and `...` (the docs' "any command") run the toy trainer for a fraction of a second), and with
`--backend sim` added to subcommands that read hardware when the example does not choose a
backend.  Commands that never end by themselves (`serve`, `monitor` without --once) are stopped
after their first output with SIGINT, as a person would.

Output matches when every shown line appears in the real output, in order, with the same words
and numbers within 10 % (30 % under a sanitizer: timings, sample counts and energies of a
simulated run vary between runs, most on a loaded machine) and any run of spaces between them (a table's columns move with
the width of its numbers); a shown line that ends in "…" is the start of the printed one."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("JOULES_TEST_BUILD_DIR", ROOT / "build" / "dev"))
JOULES = pathlib.Path(os.environ.get("JOULES_BIN", BUILD / "src" / "joules"))
TRAINER = BUILD / "examples" / "joules-toy-trainer"
HERE = pathlib.Path(__file__).resolve().parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
READS_HARDWARE = {"run", "wrap", "tune", "sweep", "monitor", "doctor", "serve"}
# What sweep says on the simulated backend, whose GPUs have no power limit to set: an example of
# it runs as written up to there (it needs NVIDIA GPUs, or the fake NVML of the tests).
NO_LIMITS_ON_SIM = "simulated GPUs have no power limit to set"
NEVER_ENDS = {"serve"}

BLOCK = re.compile(r"(?P<marker><!--\s*(?P<kind>output of|not run):\s*(?P<arg>.*?)\s*-->\s*\n)?"
                   r"(?P<indent>[ \t]*)```(?P<lang>[\w-]*)\n(?P<body>.*?)\n[ \t]*```", re.S)


class example:
    def __init__(self, where: str, command: str, output: list[str] | None = None,
                 status: int | None = None):
        self.where, self.command, self.output = where, command, output or []
        self.status = status  # the exit status the docs say, when not 0

    def __repr__(self) -> str:
        return f"{self.where}: {self.command}"


def first_word(command: str) -> str:
    """The command's name after VAR=value assignments; "" for what is not a shell command."""
    try:
        words = shlex.split(command, comments=True, posix=True)
    except ValueError:  # prose or output in a code block, not a command
        return ""
    for word in words:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            return word
    return ""


def doc_examples() -> list[example]:
    out: list[example] = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line_no = text.count("\n", 0, m.start("body")) + 1
            where = f"{doc.relative_to(ROOT)}:{line_no}"
            if m.group("kind") == "not run":
                continue
            body = [line[len(m.group("indent")):] for line in m.group("body").splitlines()]
            if m.group("kind") == "output of":
                command, status = m.group("arg"), None
                if (s := re.search(r"\s*\(exit (\d+)\)$", command)) is not None:
                    command, status = command[:s.start()], int(s.group(1))
                out.append(example(where, command, body, status))
                continue
            lines = join_continuations(body)
            if any(line.startswith("$ ") for line in lines):
                current = None
                for line in lines:
                    if line.startswith("$ "):
                        current = example(where, line[2:])
                        if first_word(current.command) == "joules":
                            out.append(current)
                    elif current is not None and line.strip():
                        current.output.append(line)
                continue
            for line in lines:
                if first_word(line) == "joules":
                    out.append(example(where, line))
    return out


def join_continuations(lines: list[str]) -> list[str]:
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line.strip()
        else:
            joined.append(line)
    return joined


def help_examples() -> list[example]:
    listing = subprocess.run([str(JOULES), "--help"], capture_output=True, text=True).stdout
    names = re.findall(r"^  (\w+)\s{2,}", listing.split("Commands:")[1], re.M)
    out = []
    for name in names:
        text = subprocess.run([str(JOULES), name, "--help"], capture_output=True, text=True).stdout
        if "\nExamples:\n" not in text:
            continue
        for line in text.split("\nExamples:\n", 1)[1].splitlines():
            if line.strip():
                out.append(example(f"joules {name} --help", line.strip()))
    return out


def with_sim_backend(command: str) -> str:
    """Adds --backend sim after each `joules SUBCOMMAND` that reads hardware and chooses none."""
    def add(m: re.Match) -> str:
        if m.group(2) in READS_HARDWARE and "--backend" not in command:
            return f"{m.group(1)}{m.group(2)} --backend sim"
        return m.group(0)
    return re.sub(r"((?:^|[|;&(]\s*|\s)joules )(\w+)", add, command)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return scratch_directory(tmp_path_factory)


@pytest.fixture(scope="module")
def document_workdirs(tmp_path_factory):
    """A scratch directory per document, made at its first example: a document's examples use
    the files its earlier examples wrote, never another document's."""
    made: dict[str, pathlib.Path] = {}

    def of(document: str) -> pathlib.Path:
        if document not in made:
            made[document] = scratch_directory(tmp_path_factory)
        return made[document]
    return of


def scratch_directory(tmp_path_factory) -> pathlib.Path:
    d = tmp_path_factory.mktemp("docs")
    shutil.copytree(HERE / "files", d, dirs_exist_ok=True)
    # `./my_trainer` and friends are run from the working directory.
    for stub in (HERE / "bin").iterdir():
        target = d / stub.name
        if not target.exists():
            shutil.copy(stub, target)
    record_files(d)
    return d


def record_files(d: pathlib.Path) -> None:
    """The record files the examples of report, diff and aggregate name (run.jsonl, node-*.jsonl,
    runs/*.jsonl, ...): one simulated run of the toy trainer, and copies of it as other runs and
    as the other node of a two-node job."""
    run = d / "run.jsonl"
    subprocess.run([str(JOULES), "wrap", "--backend", "sim", "--output", str(run), "-q", "--",
                    str(TRAINER), "--steps", "6", "--step-ms", "30", "--setup-ms", "50"],
                   cwd=d, env=environment(d), check=True, capture_output=True)
    records = [json.loads(line) for line in run.read_text().splitlines()]

    def copy(name: str, **fields: str) -> None:
        (d / name).parent.mkdir(exist_ok=True)
        (d / name).write_text("".join(json.dumps({**r, **fields}) + "\n" for r in records))

    copy("node-1.jsonl", run_id="job-4711", hostname="node-1")
    copy("node-2.jsonl", run_id="job-4711", hostname="node-2")
    for name in ("before", "after", "pr", "a", "b", "runs/1", "runs/2"):
        copy(f"{name}.jsonl", run_id=name.replace("/", "-"))
    # The run a CI gate compares a change against, as README.md makes it: the docs' stand-in
    # trainer (bin/python), so that a document's `wrap ... -- python train.py` is the same run.
    subprocess.run([str(JOULES), "wrap", "--backend", "sim", "--output", "main.jsonl", "-q", "--",
                    "python", "train.py"], cwd=d, env=environment(d), check=True,
                   capture_output=True)


def environment(workdir: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "JOULES_RUN_ID", "SLURM_JOB_ID",
                "SLURM_STEP_ID", "JOULES_REGION"):
        env.pop(var, None)
    bindir = workdir / ".bin"
    bindir.mkdir(exist_ok=True)
    link = bindir / "joules"
    if not link.exists():
        link.symlink_to(JOULES)
    env["PATH"] = f"{bindir}:{HERE / 'bin'}:{env['PATH']}"
    env["JOULES_TOY_TRAINER"] = str(TRAINER)
    env["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "absent")
    env["TOKEN"] = "example-token"
    # Power-limit journals of the examples (joules tune) stay in the scratch directory.
    env["JOULES_STATE_DIR"] = str(workdir / ".joules-state")
    return env


def subcommand_of(command: str) -> str:
    after = command.split("joules ", 1)[1].split() if "joules " in command else []
    return after[0] if after else ""


def refused_on_sim(command: str, out: str) -> set[int]:
    """sweep, whose only job is to change power limits, stops before its command starts (125)
    on the simulated backend, saying why (docs/tuning.md, "Permissions")."""
    return {125} if subcommand_of(command) == "sweep" and NO_LIMITS_ON_SIM in out else set()


def gate_failed(command: str, out: str) -> set[int]:
    """1 from `diff --fail-if-worse` when joules says the gate failed: the examples compare short
    simulated runs, whose energy per token differs from run to run by a few percent (more on a
    loaded machine), so the gate's documented exit 1 is a right answer too."""
    failed = "--fail-if-worse" in command and "FAILED, worse than the limit" in out
    return {1} if subcommand_of(command) == "diff" and failed else set()


def accepted_statuses(command: str) -> set[int]:
    """0; 130 for what is stopped with Ctrl-C; 1 for doctor's warnings."""
    sub = subcommand_of(command)
    ok = {0}
    if sub in NEVER_ENDS or (sub == "monitor" and "--once" not in command):
        ok.add(130)
    if sub == "doctor":
        ok.add(1)
    return ok


def run_example(e: example, workdir: pathlib.Path) -> tuple[int, str]:
    """Runs the example; again (up to 3 times, a second apart) when a port it names is taken by
    another program on this machine, which is no fault of the docs."""
    for _ in range(3):
        status, out = run_once(e, workdir)
        if "Address already in use" not in out:
            break
        time.sleep(1.0)
    return status, out


def run_once(e: example, workdir: pathlib.Path) -> tuple[int, str]:
    command = with_sim_backend(e.command)
    endless = 130 in accepted_statuses(command)
    if not re.search(r"[|;&]", command.split("#", 1)[0]):
        # One command: the shell becomes it, so that its exit status is joules' own.
        command = "exec " + command
    p = subprocess.Popen(["sh", "-c", command], cwd=workdir, env=environment(workdir),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    if not endless:
        out, _ = p.communicate(timeout=60)
        return p.returncode, out
    # Let it show what it does, then stop it as a person would (Ctrl-C to its process group).
    time.sleep(1.5)
    os.killpg(p.pid, signal.SIGINT)
    out, _ = p.communicate(timeout=20)
    return p.returncode, out


NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# How far a number printed may be from the one shown: the dev tree holds the docs to 10 %; under a
# sanitizer joules runs several times slower beside other tests, and the figures that come from
# timing (a run's duration, the noise of its steps) spread wider.
NUMBER_TOLERANCE = 0.30 if os.environ.get("JOULES_TEST_SANITIZE") else 0.10


def words(line: str) -> str:
    """The line with numbers as # and runs of spaces as one: a column of a table moves when a
    number in it is printed a character longer or shorter (3.2 kJ, 12 kJ)."""
    return " ".join(NUMBER.sub("#", line).split())


def same_line(shown: str, real: str) -> bool:
    """Same words, numbers within NUMBER_TOLERANCE; a shown line ending in "…" is the start of
    the real one."""
    shown = shown.rstrip()
    if shown.endswith("…"):
        shown = shown[:-1].rstrip()
        if not words(real).startswith(words(shown)):
            return False
    elif words(shown) != words(real):
        return False
    for a, b in zip(NUMBER.findall(shown), NUMBER.findall(real)):
        x, y = float(a), float(b)
        if abs(x - y) > max(NUMBER_TOLERANCE * max(abs(x), abs(y)), 0.011):
            return False
    return True


def matches(shown: list[str], real: str) -> str | None:
    """None when every shown line is in `real` in order; else the first line that is not."""
    lines = real.splitlines()
    at = 0
    for s in shown:
        while at < len(lines) and not same_line(s, lines[at]):
            at += 1
        if at == len(lines):
            return s
        at += 1
    return None


EXAMPLES = doc_examples()


def test_the_docs_have_examples():
    assert len(EXAMPLES) >= 20, EXAMPLES


def document_of(e: example) -> str:
    return e.where.rsplit(":", 1)[0]


# The documents whose examples reach the docs' stand-in inference server on its one address: its
# `vllm` starts that server on 127.0.0.1:8000 for the command's time, so two such examples must
# never run at once.
PORT_8000_DOCS = {document_of(e) for e in EXAMPLES if "127.0.0.1:8000" in e.command}


def shard_group(item) -> str:
    """The examples of one document run in one shard, in order: later ones read the files earlier
    ones write (tests/support/joules_shard.py); those of every document in PORT_8000_DOCS, one
    shard for them all."""
    e = getattr(item, "callspec", None) and item.callspec.params.get("e")
    if not e:
        return item.nodeid
    document = document_of(e)
    return "127.0.0.1:8000" if document in PORT_8000_DOCS else document


@pytest.mark.parametrize("e", EXAMPLES, ids=repr)
def test_doc_example_runs_as_written(e, document_workdirs):
    status, out = run_example(e, document_workdirs(document_of(e)))
    expected = {e.status} if e.status is not None else accepted_statuses(e.command)
    allowed = expected | refused_on_sim(e.command, out) | gate_failed(e.command, out)
    assert status in allowed, f"{e}\nexit {status}\n{out}"
    if e.output:
        missing = matches(e.output, out)
        assert missing is None, f"{e}\nshown in the docs but not printed:\n  {missing}\n\nprinted:\n{out}"


def test_help_examples_run_as_written(workdir):
    examples = help_examples()
    assert len(examples) >= 15
    failures = []
    for e in examples:
        status, out = run_example(e, workdir)
        allowed = accepted_statuses(e.command) | refused_on_sim(e.command, out)
        if status not in allowed | gate_failed(e.command, out):
            failures.append(f"{e}: exit {status}\n{out[-2000:]}")
    assert not failures, "\n\n".join(failures)


def test_the_matcher_tells_shown_from_printed():
    assert matches(["joules: 100 J in 5.00 s"], "x\njoules: 102 J in 5.01 s\n") is None
    beyond = f"joules: {100 * (1 + 2 * NUMBER_TOLERANCE):.0f} J in 5.00 s"  # 120 J, or 160 J
    assert matches(["joules: 100 J in 5.00 s"], beyond) is not None
    assert matches(["a 1", "b 2"], "b 2\na 1") is not None
    assert matches(["x     12 kJ   -27.3 %"], "x   11.9 kJ   -27.1 %") is None
    assert matches(["x 12 kJ -27.3 %"], "x 12 J -27.3 %") is not None
    assert matches(["x  12 kJ …"], "x 12.3 kJ  +5 %") is None
    assert with_sim_backend("joules run -- x") == "joules run --backend sim -- x"
    assert with_sim_backend("joules steps x.log") == "joules steps x.log"
    assert with_sim_backend("joules doctor --json | jq .") == "joules doctor --backend sim --json | jq ."
