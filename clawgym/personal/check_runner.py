"""Running a compiled wish check: an AST allow-list, then a bubblewrap sandbox.

A compiled check (:mod:`clawgym.personal.wish_checks`) is code a model wrote, so it is treated as untrusted:

- **the allow-list** (:func:`refusal`) reads the code's syntax tree before anything runs: one function
  ``met(request, reply)``, imports only from :data:`MODULES`, none of :data:`FORBIDDEN_NAMES` (``open``,
  ``eval``, ``exec``, ``__import__``, ...), no attribute or name that starts with an underscore (the way to
  ``__class__.__subclasses__()``), no ``str.format`` (whose fields reach attributes too), no classes, ``with``,
  ``global``, async code or bare ``except``. A refusal says which rule and where.
- **the sandbox** runs what passed: a fresh bubblewrap (the host's files read-only, clawgym's install hidden as
  in :mod:`clawgym.sandbox.bwrap`, an empty read-only ``/tmp``, no network, every capability dropped, its own
  pid namespace), a Python started with ``-I -S`` that sets a memory limit (``RLIMIT_AS``), no file writes
  (``RLIMIT_FSIZE``) and a CPU limit before it reads the code, safe builtins only, and a time limit per pair.

Many (code, request, reply) triples run in one process (one bwrap start a batch, which costs ~0.1 s; a pair
costs microseconds). The process reports each result as one line, so a pair that hangs or is killed costs only
itself: it gets an error, and the rest of the batch runs in a new process.
"""

from __future__ import annotations

import ast
import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Sequence

from clawgym.sandbox.bwrap import bwrap_path, install_paths

MODULES = ("re", "string", "math", "json", "collections", "unicodedata", "itertools")
FORBIDDEN_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr", "setattr", "delattr",
    "input", "breakpoint", "help", "exit", "quit", "memoryview", "object", "type", "super", "classmethod",
    "staticmethod", "property", "BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit", "print",
    "dir", "id", "hash", "format", "__builtins__", "__loader__", "__spec__",
})
FORBIDDEN_ATTRIBUTES = frozenset({"format", "format_map", "Formatter", "mro", "f_globals", "gi_frame", "cr_frame"})
SAFE_BUILTINS = (
    "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
    "isinstance", "len", "list", "map", "max", "min", "ord", "range", "repr", "reversed", "round", "set", "sorted",
    "str", "sum", "tuple", "zip", "True", "False", "None", "Exception", "ValueError", "TypeError", "KeyError",
    "IndexError", "AttributeError", "ZeroDivisionError", "StopIteration", "ArithmeticError", "LookupError",
    "UnicodeError", "bytes", "iter", "next", "slice", "pow", "bin", "hex", "oct", "callable",
)
_REFUSED_NODES = {
    ast.ClassDef: "a class", ast.With: "a with statement", ast.AsyncWith: "an async with",
    ast.AsyncFunctionDef: "an async function", ast.Await: "await", ast.AsyncFor: "an async for",
    ast.Global: "a global statement", ast.Nonlocal: "a nonlocal statement", ast.Delete: "del",
    ast.Yield: "yield", ast.YieldFrom: "yield from",
}
MAX_CODE_CHARS = 4000
MAX_TEXT_CHARS = 20_000  # a request or a reply longer than this is cut before it reaches a check


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


class SandboxFailed(RuntimeError):
    """bwrap could not start the sandbox (no user namespaces, a mount it refused): nothing ran."""


class CheckRefused(ValueError):
    """The code breaks the allow-list; the message says which rule."""


def refusal(code: str) -> str | None:
    """Why ``code`` may not run (one sentence), or None when it passes the allow-list."""
    if len(code) > MAX_CODE_CHARS:
        return f"the check is {len(code)} characters long; at most {MAX_CODE_CHARS}"
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"the check is not valid Python: {exc.msg} (line {exc.lineno})"
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "met"]
    if not functions:
        return "the check defines no function met(request, reply) at its top level"
    args = functions[-1].args
    if len(args.posonlyargs + args.args) != 2 or args.vararg or args.kwarg or args.kwonlyargs:
        return "met must take exactly two arguments: met(request, reply)"
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.AnnAssign)) and not (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return f"line {node.lineno}: only imports, functions and constants may stand at the top level"
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        for kind, what in _REFUSED_NODES.items():
            if isinstance(node, kind):
                return f"line {line}: {what} is not allowed in a check"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.level:
                return f"line {line}: relative imports are not allowed"
            for name in names:
                if name.split(".")[0] not in MODULES:
                    return f"line {line}: imports {name}; a check may import only {', '.join(MODULES)}"
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" or a.name.startswith("_") for a in node.names):
                return f"line {line}: import * and private names are not allowed"
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                return f"line {line}: {node.id} is not allowed in a check"
            if node.id.startswith("_"):
                return f"line {line}: the name {node.id} starts with an underscore (dunder access is not allowed)"
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                return (f"line {line}: the attribute .{node.attr} starts with an underscore "
                        "(dunder access is not allowed)")
            if node.attr in FORBIDDEN_ATTRIBUTES:
                return f"line {line}: .{node.attr} is not allowed in a check (use an f-string)"
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)) or isinstance(node, ast.arg):
            name = getattr(node, "name", None) or getattr(node, "arg", None) or ""
            if name.startswith("_"):
                return f"line {line}: the name {name} starts with an underscore (dunder access is not allowed)"
        elif isinstance(node, ast.ExceptHandler) and node.type is None:
            return f"line {line}: a bare except is not allowed (catch Exception)"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__" in node.value:
            return f"line {line}: a string that holds '__' is not allowed (dunder access)"
    return None


def validate(code: str) -> None:
    """Raise :class:`CheckRefused` with the reason when ``code`` fails the allow-list."""
    reason = refusal(code)
    if reason is not None:
        raise CheckRefused(reason)


@dataclass
class CheckResult:
    """One pair's outcome: ``met`` True/False, or None with ``error`` (refused, timeout, memory, an exception)."""

    met: bool | None
    error: str = ""


# The program the sandboxed Python runs: it reads one JSON batch on stdin, limits itself, then answers one line a
# pair. It imports nothing of clawgym (the install is hidden) and sees the allowed modules only through a guarded
# __import__.
DRIVER = r"""
import builtins, json, resource, signal, sys
batch = json.loads(sys.stdin.read())
out = sys.stdout
limit = batch["memory_mb"] * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
cpu = int(batch["cpu_s"]) + 1
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
modules = {name: __import__(name) for name in batch["modules"]}
class Timeout(BaseException):
    pass
def alarm(signum, frame):
    raise Timeout()
signal.signal(signal.SIGALRM, alarm)
def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name.split(".")[0] not in modules:
        raise ImportError("a check may not import " + name)
    return __import__(name, globals, locals, fromlist, level)
safe = {name: getattr(builtins, name) for name in batch["builtins"]}
safe["__import__"] = guarded_import
compiled = []
for code in batch["checks"]:
    scope = {"__builtins__": safe, "__name__": "check"}
    try:
        signal.setitimer(signal.ITIMER_REAL, batch["time_s"])
        exec(compile(code, "<check>", "exec"), scope)
        signal.setitimer(signal.ITIMER_REAL, 0)
        compiled.append((scope.get("met"), ""))
    except Timeout:
        compiled.append((None, "timeout"))
    except MemoryError:
        signal.setitimer(signal.ITIMER_REAL, 0)
        compiled.append((None, "memory"))
    except Exception as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        compiled.append((None, "error: %s: %s" % (type(exc).__name__, str(exc)[:200])))
out.write('{"ready": true}\n'); out.flush()
for index, (check, request, reply) in enumerate(batch["pairs"]):
    met, error = None, compiled[check][1]
    if not error:
        try:
            signal.setitimer(signal.ITIMER_REAL, batch["time_s"])
            value = compiled[check][0](request, reply)
            signal.setitimer(signal.ITIMER_REAL, 0)
            if value is True or value is False:
                met = value
            else:
                error = "met returned %s, not a bool" % type(value).__name__
        except Timeout:
            error = "timeout"
        except MemoryError:
            signal.setitimer(signal.ITIMER_REAL, 0)
            error = "memory"
        except RecursionError:
            signal.setitimer(signal.ITIMER_REAL, 0)
            error = "error: RecursionError"
        except Exception as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            error = "error: %s: %s" % (type(exc).__name__, str(exc)[:200])
    out.write(json.dumps({"i": index, "met": met, "error": error}) + "\n"); out.flush()
"""


class CheckRunner:
    """Runs compiled checks on many pairs in one sandboxed process; see the module docstring.

    ``time_s``: each pair's limit (and the code's own start); ``memory_mb``: the process's address space;
    ``start_s``: how long a process may take to start. Raises :class:`~clawgym.sandbox.base.SandboxUnavailable`
    (with the install line) when bubblewrap is missing. Thread-safe: every call starts its own process.
    """

    def __init__(self, time_s: float = 1.0, memory_mb: int = 256, start_s: float = 10.0, max_restarts: int = 3):
        self.bwrap = bwrap_path()
        self.time_s, self.memory_mb = float(time_s), int(memory_mb)
        self.start_s, self.max_restarts = start_s, max_restarts
        self.python = os.path.realpath(sys.executable)  # the base interpreter: a venv may sit in a hidden checkout
        self.starts = 0  # processes started (one a batch, plus one per pair that hung or was killed)

    def argv(self) -> list[str]:
        """bwrap's arguments: :mod:`clawgym.sandbox.bwrap`'s isolation, with nothing writable at all."""
        args = [self.bwrap, "--die-with-parent", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--unshare-net", "--new-session", "--hostname", "sandbox", "--ro-bind", "/", "/",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--remount-ro", "/tmp", "--tmpfs", "/run",
                "--remount-ro", "/run"]
        keep = [p for p in (os.path.dirname(os.path.dirname(self.python)), sys.base_prefix) if os.path.isdir(p)]
        covered: list[str] = []
        for path in install_paths():  # the outermost of them, read-only and empty
            if (os.path.isdir(path) and not path.startswith("/tmp/") and not any(_inside(k, path) for k in keep)
                    and not any(_inside(path, done) for done in covered)):
                covered.append(path)
                args += ["--tmpfs", path, "--remount-ro", path]
        return args + ["--chdir", "/", "--clearenv", "--setenv", "LANG", "C.UTF-8", "--",
                       self.python, "-I", "-S", "-c", DRIVER]

    def run(self, jobs: Sequence[tuple[str, str, str]]) -> list[CheckResult]:
        """``(code, request, reply)`` -> one :class:`CheckResult` each, in order; code that fails the allow-list
        gets its refusal as the error and never runs."""
        results: list[CheckResult | None] = [None] * len(jobs)
        reasons = {code: refusal(code) for code, _, _ in jobs}
        todo = []
        for i, (code, _, _) in enumerate(jobs):
            if reasons[code] is not None:
                results[i] = CheckResult(None, f"refused: {reasons[code]}")
            else:
                todo.append(i)
        restarts = 0
        while todo:
            done, hung = self._batch([jobs[i] for i in todo])
            for i, result in zip(todo, done):
                results[i] = result
            finished = len(done)
            if finished == len(todo):
                break
            restarts += 1
            stuck = todo[finished]  # the pair that was running when the process died or hung
            results[stuck] = CheckResult(None, "timeout" if hung else "killed (memory or CPU limit)")
            todo = todo[finished + 1:]
            if restarts > self.max_restarts:
                for i in todo:
                    results[i] = CheckResult(None, "not run: too many pairs of the batch hung")
                break
        return [r if r is not None else CheckResult(None, "not run") for r in results]

    def _batch(self, jobs: Sequence[tuple[str, str, str]]) -> tuple[list[CheckResult], bool]:
        """One process over ``jobs``: the results of the pairs that finished, in order (fewer if it died or hung),
        and whether it hung."""
        codes = list(dict.fromkeys(code for code, _, _ in jobs))
        index = {code: i for i, code in enumerate(codes)}
        batch = {"checks": codes, "modules": list(MODULES), "builtins": list(SAFE_BUILTINS),
                 "memory_mb": self.memory_mb, "time_s": self.time_s,
                 "cpu_s": self.time_s * (len(jobs) + len(codes)) + 2,
                 "pairs": [[index[c], q[:MAX_TEXT_CHARS], r[:MAX_TEXT_CHARS]] for c, q, r in jobs]}
        self.starts += 1
        proc = subprocess.Popen(self.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, env={"PATH": "/usr/bin:/bin"})
        results: list[CheckResult] = []
        ready = hung = False
        try:
            try:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps(batch).encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
            ready, hung = self._read(proc, results, len(jobs))
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
            proc.wait()
            err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
            if proc.stdout:
                proc.stdout.close()
            if proc.stderr:
                proc.stderr.close()
        if not ready and not hung:
            raise SandboxFailed(f"the wish checks' sandbox did not start: {err[-400:] or 'no output'}")
        return results, hung

    def _read(self, proc: subprocess.Popen, results: list[CheckResult], n: int) -> tuple[bool, bool]:
        """Read one line a pair into ``results``; give up on a pair that takes longer than its limit (plus slack).
        Returns (the process started, it hung)."""
        assert proc.stdout is not None
        ready = False
        buffer = b""
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self.start_s + self.time_s * 2
        try:
            while len(results) < n:
                wait = deadline - time.monotonic()
                if wait <= 0 or not selector.select(timeout=wait):
                    return ready, True
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    return ready, False  # the process died: the pair it was on is the caller's to mark
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
                    if message.get("ready"):
                        ready = True
                    else:
                        results.append(CheckResult(message["met"], message["error"]))
                    deadline = time.monotonic() + self.time_s * 1.5 + 0.5  # the next pair's allowance
        finally:
            selector.close()
        return ready, False
