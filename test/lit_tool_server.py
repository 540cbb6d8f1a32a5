"""A fork server for the lit suite: the tools' imports are paid once, not once per RUN line.

Most of the lit suite's time was Python start-up: every RUN line starts `ipu-opt`, `ipu-run`,
... and `filecheck`, and each start imports xDSL, NumPy and typer (0.3-0.7 s of CPU) to run
for milliseconds. `lit.cfg.py` starts one server per lit run, which imports the tools once;
each RUN-line command is then a client started with `python -S` (no site-packages, ~10 ms)
that hands its argv, working directory, environment and its stdin/stdout/stderr file
descriptors to the server. The server forks; the child runs the tool's console-script entry
point on those descriptors and sends back the exit status. Each command still runs in its
own process (a fork), so no state is shared between commands, and the output, exit status
and any traceback are the tool's own. If the server cannot be reached, the client runs the
real console script instead.

    python test/lit_tool_server.py serve SOCKET        # lit.cfg.py does this
    python -S test/lit_tool_server.py client SOCKET TOOL [ARGS...]
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

# console script -> (module, function), as pyproject.toml and filecheck declare them
TOOLS = {
    "ipu-opt": ("tools.ipu_opt", "main"),
    "ipu-run": ("tools.ipu_run", "main"),
    "ipu-objdump": ("tools.ipu_objdump", "main"),
    "ipu-as": ("tools.ipu_as", "main"),
    "filecheck": ("filecheck.main", "main"),
}
HEADER = struct.Struct("!I")


def send_request(conn: socket.socket, payload: bytes, fds: list[int]) -> None:
    data = HEADER.pack(len(payload)) + payload
    sent = socket.send_fds(conn, [data], fds)
    conn.sendall(data[sent:])


def receive_exactly(conn: socket.socket, count: int) -> bytes:
    chunks = b""
    while len(chunks) < count:
        chunk = conn.recv(count - len(chunks))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        chunks += chunk
    return chunks


# ---- client --------------------------------------------------------------------------------


def client(path: str, tool: str, args: list[str]) -> int:
    request = json.dumps({"tool": tool, "argv": [tool, *args], "cwd": os.getcwd(),
                          "env": dict(os.environ)}).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            send_request(conn, request, [0, 1, 2])
            return HEADER.unpack(receive_exactly(conn, HEADER.size))[0]
    except OSError:  # no server (or it went away): run the tool the ordinary way
        binary = os.path.join(os.path.dirname(sys.executable), tool)
        os.execv(binary, [tool, *args])


# ---- server --------------------------------------------------------------------------------


def entry_points() -> dict:
    import importlib

    return {tool: getattr(importlib.import_module(module), name)
            for tool, (module, name) in TOOLS.items()}


def run_child(entry, request: dict, fds: list[int]) -> int:
    """In the forked child: become the tool's process and run it."""
    import signal
    import traceback

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    # fresh text streams over the new descriptors, as an interpreter would make at start-up
    # (the server's own wrap other files: /dev/null is seekable, a pipe is not)
    sys.stdin = sys.__stdin__ = open(0, closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", closefd=False, line_buffering=os.isatty(1))
    sys.stderr = sys.__stderr__ = open(2, "w", closefd=False, line_buffering=True,
                                       errors="backslashreplace")
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = request["argv"]
    try:
        result = entry()
        status = result if isinstance(result, int) else 0
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            status = done.code or 0
        else:
            print(done.code, file=sys.stderr)
            status = 1
    except BaseException:  # as the interpreter would: the traceback, then status 1
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    return status


def serve(path: str) -> None:
    import signal

    entries = entry_points()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))  # lit is done: reap, go
    try:
        accept_loop(path, entries)
    finally:
        reap(block=True)


def accept_loop(path: str, entries: dict) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path + ".tmp")
        os.rename(path + ".tmp", path)  # clients see the socket only once it listens
        listener.listen(64)
        listener.settimeout(2.0)
        parent = os.getppid()
        while os.getppid() == parent:  # lit has gone (even without stopping us): stop
            reap()
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            try:
                size_data, fds, _, _ = socket.recv_fds(conn, HEADER.size, 3)
                size = HEADER.unpack(size_data + receive_exactly(conn, HEADER.size - len(size_data)))[0]
                request = json.loads(receive_exactly(conn, size))
            except (OSError, ValueError, struct.error):
                conn.close()
                continue
            if os.fork() == 0:
                listener.close()
                status = 1
                try:
                    status = run_child(entries[request["tool"]], request, fds)
                    conn.sendall(HEADER.pack(status))
                finally:
                    os._exit(status)
            for fd in fds:
                os.close(fd)
            conn.close()


def reap(block: bool = False) -> None:
    """Wait for finished children (they report by the socket; waiting frees them and adds
    their CPU time to ours, so that `time lit` still counts every command)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    role, path, *rest = sys.argv[1:]
    if role == "serve":
        serve(path)
    else:
        sys.exit(client(path, rest[0], rest[1:]))


if __name__ == "__main__":
    main()
