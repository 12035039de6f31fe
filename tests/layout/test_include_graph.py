"""The folders of src/ against docs/architecture.md: every include crosses only the lines the
table there allows, the folders include each other in no cycle, no backend includes another,
and every folder of src/ has a line in the table."""
from __future__ import annotations

import collections
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PUBLIC = ROOT / "include"
DOC = ROOT / "docs" / "architecture.md"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path: pathlib.Path) -> str:
    """'backends/nvml' for src/backends/nvml/x.cpp; top-level folders otherwise."""
    parts = path.relative_to(SRC).parts[:-1]
    if not parts:
        return "."
    if parts[0] in ("backends", "export") and len(parts) > 1:
        return "/".join(parts[:2])
    return parts[0]


def include_graph() -> dict[str, dict[str, list[str]]]:
    """folder -> included folder -> the files that include it."""
    graph: dict[str, dict[str, list[str]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in sorted(SRC.rglob("*")):
        if f.suffix not in (".hpp", ".cpp", ".def"):
            continue
        a = folder_of(f)
        graph[a]  # every folder with a source file is a node
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            if (PUBLIC / inc).exists():
                continue  # the public C header (include/joules/joules.h), which includes nothing
            target = SRC / inc
            assert target.exists(), f"{f.relative_to(SRC.parent)} includes {inc}, which is not in src/"
            b = folder_of(target)
            if b != a:
                graph[a][b].append(str(f.relative_to(SRC.parent)))
    return graph


def allowed() -> dict[str, set[str]]:
    """The table of docs/architecture.md: folder -> folders it may include from."""
    rules: dict[str, set[str]] = {}
    row = re.compile(r"^\|\s*`([^`]+)`[^|]*\|[^|]*\|([^|]*)\|\s*$")
    for line in DOC.read_text().splitlines():
        m = row.match(line)
        if not m:
            continue
        name = m.group(1).rstrip("/")
        rules[name] = {d.strip() for d in m.group(2).split(",") if d.strip()}
    return rules


def test_every_folder_is_in_the_table():
    rules = allowed()
    missing = sorted(set(include_graph()) - set(rules))
    assert not missing, f"folders of src/ without a line in docs/architecture.md: {missing}"
    gone = sorted(set(rules) - set(include_graph()))
    assert not gone, f"docs/architecture.md lists folders src/ does not have: {gone}"


def test_includes_cross_only_the_lines_the_table_allows():
    rules = allowed()
    wrong = []
    for a, targets in include_graph().items():
        for b, files in targets.items():
            if b not in rules.get(a, set()):
                wrong.append(f"{a} -> {b} ({', '.join(files[:3])})")
    assert not wrong, "includes docs/architecture.md does not allow:\n" + "\n".join(sorted(wrong))


def test_no_backend_includes_another():
    for a, targets in include_graph().items():
        if not a.startswith("backends/") or a == "backends/composite":
            continue
        others = [b for b in targets if b.startswith("backends/")]
        assert not others, f"{a} includes {others}: backends know hardware, not each other"


def test_the_folders_include_each_other_in_no_cycle():
    graph = include_graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, {}):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("include cycle: " + " -> ".join(cycle))
            if state.get(nxt) is None:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_checks_catch_what_they_guard(tmp_path, monkeypatch):
    """The graph code sees a cycle and a forbidden include when there is one."""
    fake = tmp_path / "src"
    (fake / "a").mkdir(parents=True)
    (fake / "b").mkdir()
    (fake / "a" / "x.hpp").write_text('#include "b/y.hpp"\n')
    (fake / "b" / "y.hpp").write_text('#include "a/x.hpp"\n')
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    g = include_graph()
    assert g["a"]["b"] and g["b"]["a"]
    try:
        test_the_folders_include_each_other_in_no_cycle()
    except AssertionError as e:
        assert "a -> b -> a" in str(e)
    else:
        raise AssertionError("the cycle was not found")
