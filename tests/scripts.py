"""Load a repository script (benchmarks/, scripts/) as a module, so tests can call its functions."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative_path: str):
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses and pickle look a class's module up by name
    spec.loader.exec_module(module)
    return module
