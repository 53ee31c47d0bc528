"""SWE-v0's tools: ``bash`` in the episode's sandbox and a ``str_replace_editor`` confined to the repository.

The editor follows the SWE-agent / Anthropic text-editor convention (``view``, ``create``,
``str_replace``, ``insert``, ``undo_edit``). Every path is resolved inside the sandbox
(``realpath``), so a symlink in the repository cannot lead an edit outside it; anything outside
the repository is refused with an error that says where the repository is.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any, Callable

from clawgym.core.tools import Tool, ToolError, ToolResult, arguments_schema, prop

MAX_OUTPUT_CHARS = 16_000
SNIPPET_LINES = 4


def clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Keep the head and the tail of long output; say how much was dropped."""
    if len(text) <= limit:
        return text
    head = text[: limit // 2]
    tail = text[-limit // 2:]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters omitted ...]\n{tail}"


class BashTool(Tool):
    name = "bash"
    description = (
        "Run a bash command in the repository's sandbox (a persistent shell: the working directory and "
        "exported variables carry over). No network. Use it to explore, run code and run your own tests."
    )
    parameters = arguments_schema(
        ["command"], command=prop("string", "The command to run."),
        timeout=prop("number", "Seconds before the command is killed (default 60, at most 600)."))

    def __init__(self, sandbox: Callable[[], Any], default_timeout: float = 60.0) -> None:
        self._sandbox = sandbox
        self.default_timeout = default_timeout

    def run(self, command: str, timeout: float | None = None) -> ToolResult:
        if not command.strip():
            raise ToolError("bash: the command is empty")
        limit = min(float(timeout), 600.0) if timeout else self.default_timeout
        if limit <= 0:
            raise ToolError("bash: timeout must be positive")
        result = self._sandbox().run(command, timeout=limit)
        body = clip(result.output)
        if result.timed_out:
            return ToolResult(f"{body}\n[the command timed out after {limit:g} s and was killed]".lstrip(), error=True)
        status = f"[exit code {result.exit_code}]"
        return ToolResult(f"{body.rstrip()}\n{status}" if body.strip() else status, error=result.exit_code != 0)


class EditorTool(Tool):
    name = "str_replace_editor"
    description = (
        "View, create and edit files in the repository. Commands: `view` (a file with line numbers, or a "
        "directory listing two levels deep), `create` (a new file), `str_replace` (replace `old_str`, which "
        "must occur exactly once, with `new_str`), `insert` (insert `new_str` after line `insert_line`; 0 "
        "inserts at the top), `undo_edit` (revert the last edit of a file). Paths are relative to the "
        "repository root or absolute inside it."
    )
    parameters = arguments_schema(
        ["command", "path"],
        command=prop("string", enum=["view", "create", "str_replace", "insert", "undo_edit"]),
        path=prop("string", "File or directory in the repository."),
        file_text=prop("string", "`create`: the content of the new file."),
        old_str=prop("string", "`str_replace`: the exact text to replace."),
        new_str=prop("string", "`str_replace` / `insert`: the new text."),
        insert_line=prop("integer", "`insert`: the line after which to insert (0 = top)."),
        view_range=prop("array", "`view`: [start, end] lines, 1-based; end -1 means to the end."),
    )

    def __init__(self, sandbox: Callable[[], Any], repo_dir: Callable[[], str]) -> None:
        self._sandbox = sandbox
        self._repo_dir = repo_dir
        self._history: dict[str, list[str | None]] = {}

    def reset(self) -> None:
        """Forget the undo history (a new episode)."""
        self._history = {}

    # ------------------------------------------------------------------ paths
    def resolve(self, path: str) -> str:
        """The absolute, symlink-free path of ``path``, which must lie inside the repository."""
        root = self._repo_dir()
        if not path.strip():
            raise ToolError("str_replace_editor: `path` is empty")
        if "\0" in path:
            raise ToolError("str_replace_editor: `path` contains a NUL byte")
        joined = posixpath.normpath(posixpath.join(root, path))
        if not _inside(joined, root):
            raise ToolError(f"str_replace_editor: {path!r} is outside the repository; "
                            f"only paths under {root} can be viewed or edited")
        result = self._sandbox().run(f"realpath -m -- {shlex.quote(joined)}", timeout=10)
        real = result.stdout.strip() if result.exit_code == 0 else ""
        real_root = self._sandbox().run(f"realpath -m -- {shlex.quote(root)}", timeout=10).stdout.strip() or root
        if not real or not _inside(real, real_root):
            raise ToolError(f"str_replace_editor: {path!r} resolves outside the repository (through a symlink); "
                            f"only paths under {root} can be edited")
        if real == real_root.rstrip("/") + "/.git" or real.startswith(real_root.rstrip("/") + "/.git/"):
            raise ToolError("str_replace_editor: the .git directory cannot be edited")
        return joined

    def _kind(self, path: str) -> str:
        result = self._sandbox().run(f"if [ -d {shlex.quote(path)} ]; then echo dir; elif [ -e {shlex.quote(path)} ]; "
                                     "then echo file; else echo none; fi", timeout=10)
        return result.stdout.strip() or "none"

    def _read(self, path: str) -> str:
        try:
            data = self._sandbox().read_file(path)
        except (FileNotFoundError, OSError) as exc:
            raise ToolError(f"str_replace_editor: cannot read {path}: {exc}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"str_replace_editor: {path} is not a UTF-8 text file") from None

    def _write(self, path: str, text: str, previous: str | None) -> None:
        self._sandbox().run(f"mkdir -p {shlex.quote(posixpath.dirname(path))}", timeout=10)
        self._sandbox().write_file(path, text)
        self._history.setdefault(path, []).append(previous)

    def _relative(self, path: str) -> str:
        return posixpath.relpath(path, self._repo_dir())

    # ------------------------------------------------------------------ commands
    def run(self, command: str, path: str, file_text: str | None = None, old_str: str | None = None,
            new_str: str | None = None, insert_line: int | None = None,
            view_range: list | None = None) -> ToolResult | str:
        target = self.resolve(path)
        if command == "view":
            return self._view(target, view_range)
        if command == "create":
            return self._create(target, file_text)
        if command == "str_replace":
            return self._str_replace(target, old_str, new_str)
        if command == "insert":
            return self._insert(target, insert_line, new_str)
        if command == "undo_edit":
            return self._undo(target)
        raise ToolError(f"str_replace_editor: unknown command {command!r}")

    def _view(self, target: str, view_range: list | None) -> str:
        kind = self._kind(target)
        if kind == "none":
            raise ToolError(f"str_replace_editor: {self._relative(target)} does not exist")
        if kind == "dir":
            if view_range is not None:
                raise ToolError("str_replace_editor: `view_range` only applies to files")
            listing = self._sandbox().run(
                f"cd {shlex.quote(target)} && find . -maxdepth 2 -not -path '*/.*' -not -name "
                "'__pycache__' | sort", timeout=30)
            entries = [line[2:] for line in listing.stdout.splitlines() if line not in (".", "")]
            return clip(f"Files and directories in {self._relative(target)} (two levels deep, "
                        "hidden items omitted):\n" + "\n".join(entries))
        lines = self._read(target).split("\n")
        start, end = 1, len(lines)
        if view_range is not None:
            if len(view_range) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in view_range):
                raise ToolError("str_replace_editor: `view_range` must be two integers [start, end]")
            start, end = view_range
            end = len(lines) if end == -1 else end
            if not 1 <= start <= len(lines) or not start <= end <= len(lines):
                raise ToolError(f"str_replace_editor: `view_range` {view_range} is invalid; "
                                f"the file has {len(lines)} lines")
        numbered = "\n".join(f"{number:6d}\t{lines[number - 1]}" for number in range(start, end + 1))
        return clip(f"Here is {self._relative(target)} (lines {start}-{end}):\n{numbered}")

    def _create(self, target: str, file_text: str | None) -> str:
        if file_text is None:
            raise ToolError("str_replace_editor: `create` needs `file_text`")
        if self._kind(target) != "none":
            raise ToolError(f"str_replace_editor: {self._relative(target)} already exists; "
                            "use `str_replace` or `insert` to change it")
        self._write(target, file_text, None)
        return f"Created {self._relative(target)} ({len(file_text.splitlines())} lines)."

    def _existing_file(self, target: str) -> str:
        kind = self._kind(target)
        if kind != "file":
            what = "is a directory" if kind == "dir" else "does not exist"
            raise ToolError(f"str_replace_editor: {self._relative(target)} {what}")
        return self._read(target)

    def _str_replace(self, target: str, old_str: str | None, new_str: str | None) -> str:
        if old_str is None or old_str == "":
            raise ToolError("str_replace_editor: `str_replace` needs a non-empty `old_str`")
        text = self._existing_file(target)
        count = text.count(old_str)
        if count == 0:
            raise ToolError(f"str_replace_editor: `old_str` was not found in {self._relative(target)}; "
                            "it must match exactly, whitespace included")
        if count > 1:
            lines = [text[:pos].count("\n") + 1 for pos in _positions(text, old_str)]
            raise ToolError(f"str_replace_editor: `old_str` occurs {count} times in {self._relative(target)} (lines "
                            f"{lines}); make it unique")
        replacement = new_str or ""
        updated = text.replace(old_str, replacement, 1)
        self._write(target, updated, text)
        first_line = text[:text.index(old_str)].count("\n") + 1
        return self._snippet(target, updated, first_line, replacement.count("\n") + 1)

    def _insert(self, target: str, insert_line: int | None, new_str: str | None) -> str:
        if insert_line is None or new_str is None:
            raise ToolError("str_replace_editor: `insert` needs `insert_line` and `new_str`")
        text = self._existing_file(target)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines = lines[:-1]
        if not 0 <= insert_line <= len(lines):
            raise ToolError(f"str_replace_editor: `insert_line` {insert_line} is out of range; "
                            f"the file has {len(lines)} lines (use 0..{len(lines)})")
        new_lines = new_str.split("\n")
        updated_lines = lines[:insert_line] + new_lines + lines[insert_line:]
        updated = "\n".join(updated_lines) + ("\n" if text.endswith("\n") or not text else "")
        self._write(target, updated, text)
        return self._snippet(target, updated, insert_line + 1, len(new_lines))

    def _undo(self, target: str) -> str:
        history = self._history.get(target)
        if not history:
            raise ToolError(f"str_replace_editor: no edit of {self._relative(target)} to undo")
        previous = history.pop()
        if previous is None:
            self._sandbox().run(f"rm -f -- {shlex.quote(target)}", timeout=10)
            return f"Undid the creation of {self._relative(target)} (the file is removed)."
        self._sandbox().write_file(target, previous)
        return f"Reverted the last edit of {self._relative(target)}."

    def _snippet(self, target: str, text: str, first_line: int, count: int) -> str:
        lines = text.split("\n")
        start = max(1, first_line - SNIPPET_LINES)
        end = min(len(lines), first_line + count - 1 + SNIPPET_LINES)
        numbered = "\n".join(f"{number:6d}\t{lines[number - 1]}" for number in range(start, end + 1))
        return (f"Edited {self._relative(target)}. The changed region now reads:\n{numbered}\nReview it; "
                "use undo_edit to revert.")


def _inside(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/")


def _positions(text: str, needle: str) -> list[int]:
    positions, start = [], 0
    while (found := text.find(needle, start)) != -1:
        positions.append(found)
        start = found + 1
    return positions
