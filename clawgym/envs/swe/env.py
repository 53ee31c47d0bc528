"""SWE-v0: fix an issue in a repository; hidden tests decide the reward.

An episode is a repository checked out in a sandbox at its base state (a git repository with one
commit, so the agent's work is ``git diff``), and an issue as the task. The agent has ``bash``, a
``str_replace_editor`` confined to the repository, and ``submit``. On submit (or when the turns run
out) the diff is evaluated in a fresh sandbox against tests the agent never saw
(:mod:`clawgym.envs.swe.evaluation`): reward 1 when every FAIL_TO_PASS test passes and every
PASS_TO_PASS test still passes, else 0. ``info`` carries the per-test report and the final diff.

Tasks: the bundled set (35 bugs seeded into five small projects by ``scripts/gen_swe_tasks.py``),
``tasks="pypi"`` (bugs seeded into five real PyPI projects, :mod:`clawgym.envs.swe.pypi`, whose own
pytest suites are the hidden tests; ``pytest_python`` runs them), or SWE-bench-format instances via
:func:`clawgym.envs.swe.loader.load_swebench` with a local git mirror (``mirror_dir=``) or per-instance Docker images
(``sandbox="docker"``, ``image_pattern=``).
"""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawgym.core.env import AgentEnv, EpisodeOptions
from clawgym.core.tasks import Task, TaskSet
from clawgym.core.tools import SubmitTool, Tool, arguments_schema, prop
from clawgym.envs.swe import loader
from clawgym.envs.swe.evaluation import EvalResult, EvaluationError, evaluate, extract_diff, prepare_repo, tar_bytes
from clawgym.envs.swe.patches import make_diff  # noqa: F401  (re-exported for task authors)
from clawgym.envs.swe.tools import BashTool, EditorTool

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from clawgym.sandbox.base import SandboxFactory

log = logging.getLogger(__name__)


SYSTEM_PROMPT = """You are a software engineer working in a code repository at {repo_dir} (a git repository; \
your shell starts there). A user reported the issue below. Find the cause and fix it in the source code.

Tools: `bash` runs shell commands (no network), `str_replace_editor` views and edits files inside the \
repository, `submit` ends the episode. When you submit, your changes (`git diff` against the base commit) \
are applied to a clean copy of the repository and judged by hidden tests: the behaviour described in the \
issue must be fixed and everything that worked before must keep working. Changes to test files, test \
configuration or files outside the repository are ignored. You may write and run your own checks. Call \
`submit` once you are done."""


class SWESubmitTool(SubmitTool):
    description = "Submit your changes to the repository for evaluation by the hidden tests and end the episode."
    parameters = arguments_schema([], summary=prop("string", "Optional: a one-line summary of the fix."))

    def run(self, summary: str = "") -> Any:  # type: ignore[override]
        return super().run(answer=str(summary))


class SWEEnv(AgentEnv):
    """Repository + issue + hidden tests. See the module docstring."""

    default_max_turns = 30

    def __init__(
        self,
        tasks: Any = None,
        *,
        sandbox: str | SandboxFactory = "auto",
        repo_dir: str | None = None,
        mirror_dir: str | Path | dict[str, str] | None = None,
        image_pattern: str = "swebench/sweb.eval.x86_64.{instance_id_docker}:latest",
        repo_config: dict[str, loader.RepoConfig | dict[str, Any]] | None = None,
        python: str = "python3",
        pytest_python: str = sys.executable,
        command_timeout_s: float = 60.0,
        memory_mb: int = 2048,
        setup_timeout_s: float = 600.0,
        eval_timeout_s: float = 300.0,
        projects_dir: str | Path | None = None,
        **episode: Unpack[EpisodeOptions],
    ) -> None:
        self.sandbox_kind = sandbox
        self.repo_dir_option = repo_dir
        self.mirror_dir = mirror_dir
        self.image_pattern = image_pattern
        self.repo_config = {repo: (c if isinstance(c, loader.RepoConfig) else loader.RepoConfig(**c))
                            for repo, c in (repo_config or {}).items()}
        self.python = python
        self.pytest_python = pytest_python  # real-project tasks run pytest: an interpreter that has it
        self.command_timeout_s = command_timeout_s
        self.memory_mb = memory_mb
        self.setup_timeout_s = setup_timeout_s
        self.eval_timeout_s = eval_timeout_s
        self.projects_dir = Path(projects_dir) if projects_dir else loader.PROJECTS_DIR
        self._sandbox: Any = None
        self._base_commit = ""
        self._repo_dir = ""
        self._tar_cache: dict[str, bytes] = {}
        self.last_eval: EvalResult | None = None
        super().__init__(tasks, **episode)

    # ------------------------------------------------------------------ hooks
    def load_tasks(self, source: Any) -> TaskSet:
        if source is None:
            return loader.bundled_tasks()
        if source == "pypi":
            return loader.pypi_tasks()
        if isinstance(source, TaskSet):
            return source
        if isinstance(source, (list, tuple)) and source and isinstance(source[0], dict) and "instance_id" in source[0]:
            return loader.load_swebench(list(source))
        return TaskSet.load(source)

    def make_tools(self) -> list[Tool]:
        self._editor = EditorTool(self._current_sandbox, lambda: self._repo_dir)
        return [BashTool(self._current_sandbox, self.command_timeout_s), self._editor, SWESubmitTool()]

    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT.format(repo_dir=self._repo_dir_for(task))

    def task_prompt(self, task: Task) -> str:
        return f"<issue>\n{task.prompt.strip()}\n</issue>\n\nThe repository is at {self._repo_dir_for(task)}."

    def setup(self, task: Task) -> list:
        self._repo_dir = self._repo_dir_for(task)
        self._editor.reset()
        self.last_eval = None
        self._sandbox = self._new_sandbox(task)
        self._base_commit = prepare_repo(self._sandbox, self._repo_dir, self._base_tar(task),
                                         self._setup_command(task), self.setup_timeout_s)
        self._sandbox.run(f"cd {shlex.quote(self._repo_dir)}", timeout=10)
        return []

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        assert self.task is not None
        try:
            diff = extract_diff(self._current_sandbox(), self._repo_dir, self._base_commit)
        except (EvaluationError, OSError, RuntimeError) as exc:
            log.warning("could not read the diff of %s: %s", self.task.id, exc)
            return 0.0, {"success": False, "resolved": False, "diff": "",
                         "eval_error": f"could not read the diff: {exc}"}
        result = evaluate(
            diff, self._plan(self.task), lambda: self._new_sandbox(self.task), self._repo_dir,
            self._base_tar(self.task), self._setup_command(self.task), self.setup_timeout_s,
        )
        self.last_eval = result
        return result.reward, {"success": result.resolved, **result.to_info()}

    def teardown(self) -> None:
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            try:
                sandbox.close()
            except Exception:  # teardown runs on crash paths too; never mask the original error
                log.exception("closing the SWE sandbox failed")

    def oracle_action(self) -> Any:
        """Apply the gold patch with ``git apply``, then submit."""
        assert self.task is not None
        applied = any(call.get("id") == "oracle_apply" for m in self.messages for call in m.get("tool_calls") or [])
        if not applied:
            patch = self.task.data["patch"]
            command = f"git apply --whitespace=nowarn <<'CLAWGYM_GOLD_PATCH'\n{patch}CLAWGYM_GOLD_PATCH"
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": "oracle_apply", "type": "function",
                 "function": {"name": "bash", "arguments": {"command": command}}}]}
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "oracle_submit", "type": "function", "function": {"name": "submit", "arguments": {}}}]}

    # ------------------------------------------------------------------ helpers
    @property
    def sandbox(self) -> Any:
        """The episode's sandbox (None between episodes)."""
        return self._sandbox

    def _current_sandbox(self) -> Any:
        if self._sandbox is None:
            raise RuntimeError("no episode is running; call reset() first")
        return self._sandbox

    def _source(self, task: Task) -> str:
        source = task.data.get("source")
        if source not in ("bundled", "pypi", "swebench"):
            raise ValueError(f"task {task.id!r} has data.source={source!r}; expected 'bundled', 'pypi' or 'swebench'")
        return source

    def _uses_image(self, task: Task) -> bool:
        """SWE-bench tasks without a mirror run in their per-instance Docker image, which holds the checkout."""
        return self._source(task) == "swebench" and self.mirror_dir is None

    def _repo_dir_for(self, task: Task) -> str:
        if self.repo_dir_option:
            return self.repo_dir_option
        return "/testbed" if self._uses_image(task) else "/repo"

    def _config(self, task: Task) -> loader.RepoConfig:
        return self.repo_config.get(str(task.data.get("repo")), loader.RepoConfig())

    def _setup_command(self, task: Task) -> str | None:
        return self._config(task).setup_command if self._source(task) == "swebench" else None

    def _plan(self, task: Task) -> Any:
        if self._source(task) == "bundled":
            return loader.bundled_plan(task, self.python, self.projects_dir)
        if self._source(task) == "pypi":
            plan = loader.pypi_plan(task, self.pytest_python)
            plan.timeout_s = self.eval_timeout_s
            return plan
        plan = loader.swebench_plan(task, self._config(task), self.python)
        plan.timeout_s = self.eval_timeout_s
        return plan

    def _base_tar(self, task: Task) -> bytes | None:
        if self._uses_image(task):
            return None
        if task.id not in self._tar_cache:
            if self._source(task) == "bundled":
                self._tar_cache[task.id] = tar_bytes(loader.bundled_base_files(task, self.projects_dir))
            elif self._source(task) == "pypi":
                self._tar_cache[task.id] = tar_bytes(loader.pypi_base_files(task))
            else:
                self._tar_cache[task.id] = loader.mirror_archive(self.mirror_dir, task.data["repo"],
                                                                 task.data["base_commit"])
        return self._tar_cache[task.id]

    def _new_sandbox(self, task: Task) -> Any:
        from clawgym.sandbox.base import SandboxConfig

        image = None
        if self._uses_image(task):
            image = self._config(task).image or loader.docker_image_name(self.image_pattern, task)
        config = SandboxConfig(
            network=False,
            memory_mb=self.memory_mb,
            timeout_s=self.command_timeout_s,
            workdir=self._repo_dir_for(task),
            image=image,
            env={"HOME": "/tmp", "PAGER": "cat", "GIT_PAGER": "cat", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
                 "PATH": "/usr/bin:/bin:/usr/local/bin:/usr/sbin:/sbin"},
        )
        kind = self.sandbox_kind
        if self._uses_image(task) and kind == "auto":
            kind = "docker"
        from clawgym.sandbox import make_sandbox

        return make_sandbox(kind, config)
