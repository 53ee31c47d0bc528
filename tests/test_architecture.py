"""The import rules of docs/architecture.md, checked on the code (every import, lazy ones included).

- ``clawgym.core`` imports nothing else of clawgym; ``clawgym.errors`` nothing at all;
- ``clawgym.sandbox`` imports only core;
- ``clawgym.inference`` (the serving engine, model catalog, clients, the OpenAI server) imports core,
  errors and itself: never ``rl``, ``serve``, a setting or the top-level package;
- a setting (``clawgym.envs.<name>``) imports core, sandbox and itself: never ``inference``, ``rl``,
  ``serve`` or another setting;
- ``clawgym.rl`` (which may import inference) never imports a setting, ``serve``, the CLI or its
  commands (it may import the top-level ``clawgym`` package, which registers the ids by name without
  importing any setting);
- ``clawgym.personal`` (learning from a person's conversation) imports core, sandbox, inference, rl and
  itself: never a setting or ``serve``; nothing below it imports it;
- ``serve`` (the deployed product) composes settings, inference, rl and personal; nothing below it imports it;
- ``clawgym.commands`` (every subcommand's flags and body) may import everything; only the entry points a
  user runs import it: ``cli.py`` (``clawgym ...``) and ``demo/__main__.py`` (``python -m clawgym.demo``);
- no import cycles between clawgym modules;
- no clawgym module over 500 lines (docs/design.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "clawgym"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    """Every clawgym module, leaving out task data (SWE mini-projects, MiniWoB pages, fixtures)."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "data" not in p.relative_to(PACKAGE).parts}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The clawgym modules ``name`` imports, resolved to the longest known module name."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names]
            if not all(t in known for t in targets):
                targets.append(base)  # ``from pkg import name``: pkg itself (``from pkg import module`` is the module)
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("clawgym"):
                found.add(target)
    return found


GRAPH = {name: imports_of(path, name, set(source_modules())) for name, path in source_modules().items()}


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "envs":
        return f"envs.{parts[2]}"
    return parts[1] if len(parts) > 1 else "clawgym"


# the modules a user runs: only they import clawgym.commands
ENTRY_POINTS = {"clawgym.cli", "clawgym.demo.__main__"}

ALLOWED = {
    "errors": set(),
    "core": {"core"},
    "sandbox": {"core", "sandbox"},
    "inference": {"core", "errors", "inference"},
    "rl": {"core", "sandbox", "inference", "rl", "errors"},
    "personal": {"core", "sandbox", "inference", "rl", "errors", "personal"},
}


def violations() -> list[str]:
    problems = []
    for module, targets in GRAPH.items():
        mine = layer(module)
        for target in targets:
            theirs = layer(target)
            if (target == "clawgym" and mine in ("core", "sandbox", "errors", "inference")
                or (target == "clawgym" and mine.startswith("envs."))):
                problems.append(f"{module} imports the top-level clawgym package (it registers the settings)")
            elif mine in ALLOWED and theirs not in ALLOWED[mine] and target != "clawgym":
                problems.append(f"{module} ({mine}) imports {target} ({theirs})")
            elif mine.startswith("envs.") and theirs not in ("core", "sandbox", "errors", mine):
                problems.append(f"setting {module} imports {target}")
            elif (theirs in ("serve", "cli", "commands", "demo")
                  and mine not in ("serve", "cli", "commands", "demo", theirs)):
                problems.append(f"{module} ({mine}) imports {target}: nothing below {theirs} may import it")
            elif theirs == "cli" and mine != "cli":
                problems.append(f"{module} imports the CLI")
            elif theirs == "commands" and mine != "commands" and module not in ENTRY_POINTS:
                problems.append(f"{module} imports {target}: only the entry points {sorted(ENTRY_POINTS)} may")
    return sorted(problems)


def cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_is_read():
    assert "clawgym.rl.loop.runner" in GRAPH and "clawgym.rl.judge" in GRAPH["clawgym.rl.loop.runner"]
    assert "clawgym.core.env" in GRAPH["clawgym.envs.toolcall.env"]
    assert "clawgym.inference.kv_buffer" in GRAPH["clawgym.inference.hf"]
    assert "clawgym.inference.streaming" in GRAPH["clawgym.inference.server"]
    assert "clawgym.commands.serve" in GRAPH["clawgym.cli"] and "clawgym.demo" in GRAPH["clawgym.commands.demo"]
    assert GRAPH["clawgym.demo.__main__"] == {"clawgym.commands.demo"}


def test_layers_import_only_what_the_architecture_allows():
    assert violations() == []


def test_no_import_cycles():
    assert cycles() == []


def test_no_module_is_over_500_lines():
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in source_modules().items()}
    assert {name: n for name, n in lengths.items() if n > 500} == {}


@pytest.mark.parametrize("rule, module, target", [
    ("a setting importing rl", "clawgym.envs.toolcall.env", "clawgym.rl.loop"),
    ("rl importing a setting", "clawgym.rl.loop", "clawgym.envs.gui.env"),
    ("core importing rl", "clawgym.core.env", "clawgym.rl.types"),
    ("core importing inference", "clawgym.core.policy", "clawgym.inference.hf"),
    ("inference importing rl", "clawgym.inference.hf", "clawgym.rl.types"),
    ("inference importing serve", "clawgym.inference.server", "clawgym.serve.gateway"),
    ("inference importing a setting", "clawgym.inference.models", "clawgym.envs.toolcall.env"),
    ("inference importing the top-level package", "clawgym.inference.catalog", "clawgym"),
    ("a setting importing inference", "clawgym.envs.openclaw_chat.env", "clawgym.inference.hf"),
    ("rl importing serve", "clawgym.rl.judge", "clawgym.serve.gateway"),
    ("rl importing personal", "clawgym.rl.judge", "clawgym.personal.rubric"),
    ("personal importing serve", "clawgym.personal.wish_memory", "clawgym.serve.turn_log"),
    ("personal importing a setting", "clawgym.personal.hindsight", "clawgym.envs.openclaw_chat.env"),
    ("a setting importing another", "clawgym.envs.swe.env", "clawgym.envs.terminal.env"),
    ("serve importing a command", "clawgym.serve.main", "clawgym.commands.serve"),
    ("the demo importing a command", "clawgym.demo", "clawgym.commands.demo"),
])
def test_the_checker_catches_each_rule(rule, module, target, monkeypatch):
    monkeypatch.setitem(GRAPH, module, GRAPH[module] | {target})
    assert violations(), rule


def test_the_checker_catches_a_cycle(monkeypatch):
    monkeypatch.setitem(GRAPH, "clawgym.core.tasks", GRAPH["clawgym.core.tasks"] | {"clawgym.core.env"})
    assert any("clawgym.core.env" in c and "clawgym.core.tasks" in c for c in cycles())
