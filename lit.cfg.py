# lit configuration for ipu-stack's FileCheck tests (test/filecheck/**.mlir).
import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import lit.formats

config.name = "ipu-stack"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["examples", "bench", "docs", "venv", ".venv", "build", "Output"]

# Make the interpreter's console scripts (ipu-opt, filecheck) visible even when the
# venv is not activated: lit itself runs under that interpreter.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
config.environment["PYTHONPATH"] = config.test_source_root

# Round-trip macros in the style of xDSL's XDSL_ROUNDTRIP / XDSL_GENERIC_ROUNDTRIP.
config.substitutions.append(
    ("IPU_ROUNDTRIP",
     "ipu-opt %s --print-op-generic --split-input-file | ipu-opt --split-input-file | filecheck %s"))
config.substitutions.append(
    ("IPU_GENERIC_ROUNDTRIP",
     "ipu-opt %s --print-op-generic --split-input-file | filecheck %s --check-prefix=CHECK-GENERIC"))
config.substitutions.append(("%examples", os.path.join(config.test_source_root, "examples")))



def tool_server() -> str | None:
    """The socket of this lit run's fork server (test/lit_tool_server.py), started once: the
    RUN lines then pay the tools' imports once, not per command. IPU_LIT_NO_SERVER=1 runs
    every command as its own interpreter instead."""
    if os.environ.get("IPU_LIT_NO_SERVER") or not hasattr(socket, "send_fds"):
        return None
    if os.environ.get("IPU_LIT_TOOL_SERVER"):  # lit loads this file again in its workers
        return os.environ["IPU_LIT_TOOL_SERVER"]
    directory = tempfile.mkdtemp(prefix="ipu-lit-")
    path = os.path.join(directory, "tools.sock")
    environment = dict(os.environ, PYTHONPATH=config.test_source_root, OPENBLAS_NUM_THREADS="1")
    server = subprocess.Popen([sys.executable, SERVER, "serve", path], env=environment,
                              stdin=subprocess.DEVNULL)
    for _ in range(600):  # the imports take a second or two on a loaded machine
        if os.path.exists(path) or server.poll() is not None:
            break
        time.sleep(0.05)
    if not os.path.exists(path):
        server.kill()
        return None
    atexit.register(stop_server, server, directory)
    os.environ["IPU_LIT_TOOL_SERVER"] = path
    return path


def stop_server(server: subprocess.Popen, directory: str) -> None:
    server.terminate()  # the server waits for its last commands, so `time lit` counts them
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
    shutil.rmtree(directory, ignore_errors=True)


SERVER = os.path.join(config.test_source_root, "test", "lit_tool_server.py")
socket_path = tool_server()
# Substitutions apply in order: these come after the macros that mention the tools. A tool
# name is replaced only as a word of its own, not inside a path such as test/filecheck/.
for tool, module in [("ipu-opt", "tools.ipu_opt"), ("ipu-run", "tools.ipu_run"),
                     ("ipu-objdump", "tools.ipu_objdump"), ("ipu-as", "tools.ipu_as"),
                     ("filecheck", None)]:
    pattern = rf"(?<![\w./-]){tool}(?![\w./-])"
    if socket_path is not None:
        config.substitutions.append(
            (pattern, f"{sys.executable} -S {SERVER} client {socket_path} {tool}"))
    elif module and shutil.which(tool, path=config.environment["PATH"]) is None:
        config.substitutions.append((pattern, f"{sys.executable} -m {module}"))

# lit 23's internal shell runs its `cat` and `diff` as Python scripts and, doing so, sets
# PYTHONPATH to lit's own directory in the environment every later command of the test
# shares: after the first `diff`, `ipu-opt` would import the installed ipu-stack instead of
# this checkout's (a git worktree's) code. The system's tools leave the environment alone.
for tool in ("cat", "diff"):
    if (found := shutil.which(tool)) is not None:
        config.substitutions.append((rf"(?<![\w./-]){tool}(?![\w./-])", found))
