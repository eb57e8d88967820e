"""Starting and stopping loom-serve for the tests: port 0 for every endpoint asked for, the real
ports read from its "loom-serve: <endpoint> listening on ADDRESS:PORT" lines, "loom-serve: ready"
awaited with a time limit, SIGTERM to stop with exit 0 required; the process is always killed at
the end, whatever happened. Standard library only."""
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

LISTENING = re.compile(r"^loom-serve: (\S+) listening on (\S+):(\d+)$")
READY = "loom-serve: ready"


class ServeError(Exception):
    """loom-serve did not come up, or did not stop as it should; the message holds its stderr."""


def supports_flag(loom_serve, flag):
    """Whether `loom_serve --help` lists `flag` (the gRPC port exists only where gRPC is built)."""
    shown = subprocess.run([loom_serve, "--help"], capture_output=True, text=True, timeout=30)
    return flag in shown.stdout


class Server:
    """A running loom-serve. Use as a context manager:

        with Server(loom_serve, repo, http=0) as server:
            url = server.url("HTTP")      # "127.0.0.1:PORT"
        # left: stopped with SIGTERM (exit 0 required) or killed

    http, grpc, metrics: the port flag's value (0 = a free port), None = off (-1; for gRPC, not
    passed when the binary has no --grpc-port). `extra` are more flags."""

    def __init__(self, loom_serve, repository, http=0, grpc=None, metrics=None, extra=(), ready_timeout=180,
                 device="cpu"):
        self.command = [loom_serve, "--model-repository", repository, "--device", device,
                        "--http-port", str(-1 if http is None else http),
                        "--metrics-port", str(-1 if metrics is None else metrics)]
        if grpc is not None or supports_flag(loom_serve, "--grpc-port"):
            self.command += ["--grpc-port", str(-1 if grpc is None else grpc)]
        self.command += list(extra)
        self.ready_timeout = ready_timeout
        self.endpoints = {}  # "HTTP" / "gRPC" / "metrics" -> (address, port)
        self.stdout_lines = []
        self.process = None
        self._lines = queue.Queue()
        self._stderr = None

    def url(self, endpoint="HTTP"):
        address, port = self.endpoints[endpoint]
        return f"{address}:{port}"

    def stderr_text(self):
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def _read_stdout(self):
        for line in self.process.stdout:
            self._lines.put(line.decode("utf-8", "replace").rstrip("\n"))
        self._lines.put(None)  # end of output

    def start(self):
        self._stderr = tempfile.TemporaryFile()
        print("  $ " + " ".join(self.command), flush=True)
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=self._stderr)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        deadline = time.monotonic() + self.ready_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise ServeError(f"loom-serve did not print '{READY}' within {self.ready_timeout} s; "
                                 f"stdout:\n" + "\n".join(self.stdout_lines) + "\nstderr:\n" + self.stderr_text())
            try:
                line = self._lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if line is None:
                code = self.process.wait(timeout=30)
                raise ServeError(f"loom-serve exited {code} before it was ready; stdout:\n" +
                                 "\n".join(self.stdout_lines) + "\nstderr:\n" + self.stderr_text())
            self.stdout_lines.append(line)
            found = LISTENING.match(line)
            if found:
                self.endpoints[found.group(1)] = (found.group(2), int(found.group(3)))
            elif line == READY:
                return self

    def stop(self, timeout=60):
        """SIGTERM, then waits up to `timeout` s; raises ServeError unless it exited 0."""
        if self.process is None or self.process.poll() is not None:
            code = None if self.process is None else self.process.returncode
            raise ServeError(f"loom-serve was not running at stop (exit {code}); stderr:\n" + self.stderr_text())
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ServeError(f"loom-serve did not exit within {timeout} s of SIGTERM; stderr:\n" + self.stderr_text())
        if code != 0:
            raise ServeError(f"loom-serve exited {code} after SIGTERM (0 expected); stderr:\n" + self.stderr_text())

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, kind, value, traceback):
        try:
            if kind is None:
                self.stop()
        finally:
            self.kill()
            if self._stderr is not None:
                self._stderr.close()
        return False


def run_loom_serve(command, timeout=120):
    """Runs loom-serve expecting it to exit by itself (bad flags, a port in use): the
    CompletedProcess, killed after `timeout` s."""
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
