"""Tasks live apart from the environment: a :class:`Task` is data, a :class:`TaskSet` loads many.

A task has an id, the prompt the agent sees, an optional reference answer, and a free-form ``data``
dict the setting interprets (setup files, check scripts, page templates, hidden tests ...). Sources:
bundled JSONL inside the package, a local JSONL file, a directory of JSONL files, a ``datasets``
Dataset, or a local dataset path saved with ``Dataset.save_to_disk``. Each setting passes a
``from_record`` function that maps a raw record (e.g. GSM8K's ``question``/``answer``) to a Task.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

Record = dict[str, Any]


@dataclass
class Task:
    id: str
    prompt: str
    answer: Any = None
    split: str = "train"
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Record:
        return asdict(self)


def default_from_record(record: Record) -> Task:
    """Map the common shapes (ours, GSM8K/DAPO ``question``/``answer``) to a Task."""
    if "id" in record and "prompt" in record:
        return Task(
            id=str(record["id"]),
            prompt=str(record["prompt"]),
            answer=record.get("answer"),
            split=str(record.get("split", "train")),
            data=dict(record.get("data") or {}),
        )
    prompt = record.get("question") or record.get("problem") or record.get("prompt")
    if prompt is None:
        raise ValueError(f"a task record needs 'prompt' or 'question'; got keys {sorted(record)}")
    answer = record.get("answer", record.get("solution"))
    extra = {k: v for k, v in record.items()
             if k not in ("id", "question", "problem", "prompt", "answer", "solution", "split")}
    return Task(
        id=str(record.get("id", "")),
        prompt=str(prompt),
        answer=answer,
        split=str(record.get("split", "train")),
        data=extra,
    )


class TaskSet:
    """An ordered, id-addressable collection of tasks."""

    def __init__(self, tasks: Iterable[Task], name: str = "tasks") -> None:
        self.tasks = list(tasks)
        self.name = name
        for index, task in enumerate(self.tasks):
            if not task.id:
                task.id = f"{name}-{index}"
        self._by_id = {task.id: task for task in self.tasks}
        if len(self._by_id) != len(self.tasks):
            raise ValueError(f"task set {name!r} has duplicate task ids")

    # --- access -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __getitem__(self, index: int) -> Task:
        return self.tasks[index]

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._by_id

    def by_id(self, task_id: str) -> Task:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"no task {task_id!r} in {self.name!r} ({len(self)} tasks)") from None

    def split(self, name: str) -> "TaskSet":
        chosen = [t for t in self.tasks if t.split == name]
        if not chosen:
            splits = sorted({t.split for t in self.tasks})
            raise ValueError(f"task set {self.name!r} has no split {name!r}; it has {splits}")
        return TaskSet(chosen, name=f"{self.name}:{name}")

    @property
    def splits(self) -> list[str]:
        return sorted({t.split for t in self.tasks})

    # --- loading ------------------------------------------------------------------------------
    @classmethod
    def from_records(cls, records: Iterable[Record], from_record: Callable[[Record], Task] = default_from_record,
                     name: str = "tasks") -> "TaskSet":
        return cls((from_record(dict(r)) for r in records), name=name)

    @classmethod
    def from_jsonl(cls, path: str | Path, from_record: Callable[[Record], Task] = default_from_record) -> "TaskSet":
        path = Path(path)
        return cls.from_records(_read_jsonl(path), from_record, name=path.stem)

    @classmethod
    def from_dir(cls, path: str | Path, from_record: Callable[[Record], Task] = default_from_record) -> "TaskSet":
        path = Path(path)
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise FileNotFoundError(f"no *.jsonl files in task directory {path}")
        records = [r for f in files for r in _read_jsonl(f)]
        return cls.from_records(records, from_record, name=path.name)

    @classmethod
    def from_dataset(cls, dataset: Any, from_record: Callable[[Record], Task] = default_from_record,
                     name: str = "dataset") -> "TaskSet":
        """From a ``datasets.Dataset`` (or any iterable of dict rows)."""
        return cls.from_records(iter(dataset), from_record, name=name)

    @classmethod
    def from_bundled(cls, package: str, filename: str,
                     from_record: Callable[[Record], Task] = default_from_record) -> "TaskSet":
        with resources.files(package).joinpath(filename).open("r", encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        return cls.from_records(records, from_record, name=Path(filename).stem)

    @classmethod
    def load(cls, source: Any, from_record: Callable[[Record], Task] = default_from_record) -> "TaskSet":
        """Load from whatever the user passed: a TaskSet, a list of Tasks/records, a path, or a Dataset."""
        if isinstance(source, TaskSet):
            return source
        if isinstance(source, (str, Path)):
            path = Path(source)
            if path.is_file() and path.suffix in (".jsonl", ".json"):
                return cls.from_jsonl(path, from_record)
            if path.is_dir():
                if (path / "dataset_info.json").exists() or (path / "state.json").exists():
                    import datasets  # the `train` extra

                    return cls.from_dataset(datasets.load_from_disk(str(path)), from_record, name=path.name)
                return cls.from_dir(path, from_record)
            raise FileNotFoundError(f"task source {source} is neither a .jsonl file nor a directory")
        if isinstance(source, list):
            return cls(t if isinstance(t, Task) else from_record(dict(t)) for t in source)
        if hasattr(source, "__iter__") and hasattr(source, "column_names"):
            return cls.from_dataset(source, from_record)
        raise TypeError(f"cannot load tasks from {type(source).__name__}")


def _read_jsonl(path: Path) -> list[Record]:
    records = []
    with path.open("r", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON: {exc.msg}") from None
    return records


def write_jsonl(path: str | Path, records: Iterable[Record]) -> None:
    """Write records one per line (used by the task generators and by rollouts)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_or_check(path: str | Path, text: str, check: bool, what: str) -> int:
    """A task generator's last step: write ``text`` (the generated JSONL) to ``path``, or with ``check`` only
    say whether the committed file equals it. Returns the script's exit status: 1 when the file is stale."""
    path = Path(path)
    if check:
        same = path.exists() and path.read_text(encoding="utf-8") == text
        print(f"{path}: {'up to date' if same else 'DIFFERS from a fresh generation; run the generator'} ({what})")
        return 0 if same else 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {what} to {path}")
    return 0
