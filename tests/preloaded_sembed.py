"""A `sembed` command whose Python has already started: a fork server for tests that run many shell pipelines.

Each `sembed` process of a pipeline spends seconds importing torch, transformers, spaCy and FAISS before it reads a
line, and the help examples start over a hundred of them. Here one server imports those once; the `sembed` on the
pipelines' PATH is a small client that hands the server its arguments, working folder, environment and its
stdin, stdout and stderr (the file descriptors themselves, SCM_RIGHTS), and the server forks a process that runs
`python -m sembed_cli` on them. That process is a real one: it reads and writes the pipeline's own pipes and
files, and its exit status (or the signal that ended it) becomes the client's, so `bash -o pipefail` sees what it
would see. Only the start-up is shared.

    python preloaded_sembed.py serve SOCKET     # imports the heavy modules, then forks a sembed per client
    python -I preloaded_sembed.py SOCKET ARGS   # the client: what a `sembed` shim runs

The server must be started with the environment the pipelines have (libgomp reads OMP_NUM_THREADS once, at load).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import socket
import sys

PRELOAD = ("numpy", "torch", "transformers", "sentence_transformers", "spacy", "faiss", "sembed_cli.main")
HEADER = 1 << 20  # the largest request (arguments and environment), in bytes


def client(path: str, args: list[str]) -> None:
    """Run `sembed ARGS` in the server at `path` on this process's stdio; exit as that process did."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(path)
    request = {"argv": ["sembed", *args], "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the forked sembed holds the pipeline's ends now: a reader's EOF must not wait for us
        os.dup2(null, fd)
    os.close(null)
    pid = int(conn.recv(64))

    def forward(number, _frame):  # a signal meant for sembed reaches it
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    status = int(conn.recv(64))
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status))


def serve(path: str) -> None:
    """Import the heavy modules, then fork one sembed process per client, for ever."""
    import importlib

    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the per-client handlers reap themselves
    gc.freeze()  # the collector in a forked sembed leaves the server's objects (and their pages) alone
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            handle(conn)  # returns only in the forked sembed
            return
        conn.close()


def handle(conn: socket.socket) -> None:
    """Fork the client's sembed and report its pid and exit status; return (only) in the sembed process."""
    try:
        message, fds, _, _ = socket.recv_fds(conn, HEADER, 3)
        request = json.loads(message)
        pid = os.fork()
    except BaseException:
        os._exit(1)
    if pid == 0:
        conn.close()
        become(request, fds)
        return
    try:
        for fd in fds:
            os.close(fd)
        conn.send(str(pid).encode())
        _, status = os.waitpid(pid, 0)
        conn.send(str(status).encode())
    finally:
        os._exit(0)


def become(request: dict, fds: list[int]) -> None:
    """Turn this forked process into `sembed ARGV` as a fresh interpreter would start it."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdin, sys.stdout, sys.stderr = (stdio(fd, like) for fd, like in enumerate((sys.stdin, sys.stdout, sys.stderr)))
    sys.argv = request["argv"]
    sys.path[0] = request["cwd"]  # where `python -m` looks first


def stdio(fd: int, like) -> io.TextIOWrapper:
    """A fresh text stream on `fd` with the encoding and error handler of the interpreter's own, buffered as Python
    buffers a standard stream (line by line on a terminal, stderr always)."""
    raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
    buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    interactive = raw.isatty()
    return io.TextIOWrapper(
        buffered,
        encoding=like.encoding,
        errors=like.errors,
        line_buffering=interactive or fd == 2,
        write_through=fd == 2,
    )


def run_sembed() -> None:
    """`python -m sembed_cli` in this forked process, ending as the interpreter would end it (non-daemon threads
    joined, atexit, stdout flushed or exit status 120, an escaped Ctrl-C re-raised as SIGINT) but without tearing
    the interpreter down: that touches every page the server imported, copying each, and costs seconds."""
    import atexit
    import runpy
    import threading
    import traceback

    code = 0
    try:
        runpy.run_module("sembed_cli", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        print("Exception ignored while flushing sys.stdout", file=sys.stderr)
        code = 120
    sys.stderr.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
        run_sembed()  # here only in a forked sembed
    else:
        client(sys.argv[1], sys.argv[2:])
