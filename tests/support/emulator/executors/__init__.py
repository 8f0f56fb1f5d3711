"""Pluggable executors that decide what a preflight or a migration run does (see base.py)."""

import importlib

KNOWN = ("scripted", "ssh")


def load_executor(name, options):
    """Import ``executors.<name>`` lazily, so a missing optional executor only fails when chosen."""
    if name not in KNOWN:
        raise ValueError("unknown executor %r (choose from %s)" % (name, ", ".join(KNOWN)))
    class_name = {"scripted": "ScriptedExecutor", "ssh": "SSHExecutor"}[name]
    try:
        module = importlib.import_module("executors.%s" % name)
    except ModuleNotFoundError as exc:
        if exc.name != "executors.%s" % name:
            # The module exists but one of its own imports (e.g. paramiko) is missing.
            raise RuntimeError("executor %r needs the Python package %r, which is not installed"
                               % (name, exc.name)) from exc
        raise RuntimeError("executor %r is not available: tests/support/emulator/executors/%s.py is missing"
                           % (name, name)) from exc
    try:
        cls = getattr(module, class_name)
    except AttributeError as exc:
        raise RuntimeError("tests/support/emulator/executors/%s.py does not define %s" % (name, class_name)) from exc
    return cls(options)
