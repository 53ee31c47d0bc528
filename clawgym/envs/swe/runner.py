"""A stdlib-only test runner for hidden unittest suites, run inside the evaluation sandbox.

Why not pytest: the sandbox's Python is the host's system interpreter, which has no pytest, and an
in-repo ``conftest.py``, pytest plugin or ini file could rewrite outcomes. This runner depends on
nothing but the standard library and is written fresh outside the repository for every evaluation.
It is meant to be started as ``python3 -I -B runner.py ...``: ``-I`` ignores ``PYTHONPATH``, the user
site directory and the current directory, so no ``sitecustomize``/``usercustomize``/``*.pth`` in the
repository is ever imported.

It loads each test file by path, runs every ``unittest.TestCase`` method in it one at a time (a
per-test alarm turns a hang into an error), and writes a JSON report mapping pytest-style ids
(``tests/test_x.py::TestClass::test_method``) to ``{"status", "message"}``. Before and after the run it
fingerprints the unittest machinery and a few builtins; if code under test monkeypatched them (a
classic way to fake passing tests) the report says ``tampered`` and the evaluator awards nothing.
This file must stay importable on Python 3.8+ and must not import anything from clawgym.
"""

import argparse
import builtins
import importlib.util
import json
import os
import signal
import sys
import traceback
import unittest

STATUS_PASSED = "passed"
STATUS_FAILED = "failed"
STATUS_ERROR = "error"
STATUS_SKIPPED = "skipped"


class TestTimeout(Exception):
    """Raised by the alarm when one test runs past its time limit."""


def _fingerprint():
    """Identities of the objects a cheating module would patch to fake results."""
    watched = {
        "TestCase": vars(unittest.TestCase),
        "TestResult": vars(unittest.TestResult),
        "builtins": {name: getattr(builtins, name)
                     for name in ("isinstance", "len", "repr", "str", "type", "getattr", "__import__")},
        "json": {"dumps": json.dumps, "dump": json.dump},
        "os": {"_exit": os._exit, "replace": os.replace, "open": os.open},
    }
    return {group: {name: id(value) for name, value in items.items()} for group, items in watched.items()}


def _short(text, limit=400):
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _describe(exc_info, root):
    """One line for the exception, plus where inside the repository (outside tests/) it was raised."""
    exc_type, exc, tb = exc_info
    message = "".join(traceback.format_exception_only(exc_type, exc)).strip().splitlines()
    first = message[0] if message else exc_type.__name__
    where = ""
    for frame in traceback.extract_tb(tb):
        path = os.path.abspath(frame.filename)
        if path.startswith(root + os.sep):
            relative = os.path.relpath(path, root)
            if not relative.startswith("tests" + os.sep):
                where = " (raised in %s, in %s)" % (relative, frame.name)
    return _short(first) + where


class _Collector(unittest.TestResult):
    def __init__(self, root):
        super().__init__()
        self.root = root
        self.status = STATUS_PASSED
        self.message = ""

    def addFailure(self, test, err):
        self.status, self.message = STATUS_FAILED, _describe(err, self.root)

    def addError(self, test, err):
        self.status, self.message = STATUS_ERROR, _describe(err, self.root)

    def addSkip(self, test, reason):
        self.status, self.message = STATUS_SKIPPED, _short(str(reason))

    def addUnexpectedSuccess(self, test):
        self.status, self.message = STATUS_FAILED, "unexpected success"

    def addExpectedFailure(self, test, err):
        self.status, self.message = STATUS_PASSED, "expected failure"

    def addSubTest(self, test, subtest, err):
        if err is not None and self.status == STATUS_PASSED:
            failed = issubclass(err[0], test.failureException)
            self.status = STATUS_FAILED if failed else STATUS_ERROR
            self.message = _describe(err, self.root)


def _on_alarm(signum, frame):
    raise TestTimeout("test timed out")


def run_file(root, relative, per_test_timeout, results):
    path = os.path.join(root, relative)
    module_name = "_hidden_" + os.path.splitext(relative)[0].replace(os.sep, "_").replace(".", "_")
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except BaseException:  # noqa: B902 - an import-time SystemExit must not end the run
        results["__import__::" + relative] = {"status": STATUS_ERROR, "message": _describe(sys.exc_info(), root)}
        return
    loader = unittest.TestLoader()
    for name in sorted(vars(module)):
        cls = vars(module)[name]
        if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase) and cls.__module__ == module_name):
            continue
        for method in loader.getTestCaseNames(cls):
            test_id = "%s::%s::%s" % (relative.replace(os.sep, "/"), cls.__name__, method)
            collector = _Collector(root)
            signal.setitimer(signal.ITIMER_REAL, per_test_timeout)
            try:
                cls(method).run(collector)
            except BaseException:  # noqa: B902 - a test that calls sys.exit is an error, not the end
                collector.status, collector.message = STATUS_ERROR, _describe(sys.exc_info(), root)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            results[test_id] = {"status": collector.status, "message": collector.message}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the repository root (put first on sys.path)")
    parser.add_argument("--report", required=True, help="where to write the JSON report")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per test")
    parser.add_argument("files", nargs="+", help="test files, relative to the root")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    before = _fingerprint()
    signal.signal(signal.SIGALRM, _on_alarm)
    os.chdir(root)
    sys.path.insert(0, root)
    results = {}
    for relative in args.files:
        run_file(root, relative, args.timeout, results)
    after = _fingerprint()
    tampered = sorted(
        "%s.%s" % (group, name)
        for group in before
        for name in set(before[group]) | set(after[group])
        if before[group].get(name) != after[group].get(name)
    )
    report = {"tests": results, "tampered": tampered}
    temporary = args.report + ".part"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(report))
    os.replace(temporary, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
