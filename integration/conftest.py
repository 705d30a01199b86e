"""Fixtures that start the real flightd binary for the Python client tests."""

import os
import socket
import subprocess
import tempfile
import time

import pytest


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, data_dir, env=None):
        self.binary = binary
        self.data_dir = data_dir
        self.env = env
        self.addr = f"127.0.0.1:{_free_port()}"
        self.proc = None
        self.log_path = os.path.join(data_dir, "flightd.log")

    @property
    def uri(self):
        return f"grpc://{self.addr}"

    @property
    def warehouse(self):
        return os.path.join(self.data_dir, "warehouse")

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--listen", self.addr, "--data-dir", self.data_dir,
             "--tiering-interval", "1s"],
            stdout=log, stderr=subprocess.STDOUT,
            env=None if self.env is None else {**os.environ, **self.env})
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("flightd exited:\n" + open(self.log_path).read())
            if "flightd listening" in open(self.log_path).read():
                return
            time.sleep(0.05)
        raise RuntimeError("flightd did not start:\n" + open(self.log_path).read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)

    def sql(self, statement):
        """Runs one statement through `flightd sql` and returns its output."""
        out = subprocess.run([self.binary, "sql", "--server", self.addr, statement],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"flightd sql {statement!r}: {out.stderr}")
        return out.stdout


def _serve(env=None):
    binary = os.environ.get("FLIGHTD_BIN")
    if not binary:
        pytest.fail("FLIGHTD_BIN must name the flightd binary (make test-python sets it)")
    with tempfile.TemporaryDirectory() as d:
        s = Server(binary, d, env)
        s.start()
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture
def server():
    yield from _serve()


# The password of auth_server's user "alice".
AUTH_PASSWORD = "pa:ss word"


@pytest.fixture
def auth_server():
    """A server that needs the user alice and AUTH_PASSWORD (no TLS)."""
    yield from _serve({"FLIGHTD_AUTH_USER": "alice", "FLIGHTD_AUTH_PASSWORD": AUTH_PASSWORD})


@pytest.fixture
def metrics_server():
    """A server that serves Prometheus metrics at its .metrics_url."""
    port = _free_port()
    for s in _serve({"FLIGHTD_METRICS_ADDR": f"127.0.0.1:{port}"}):
        s.metrics_url = f"http://127.0.0.1:{port}/metrics"
        yield s


def metric(server, name):
    """The value of an unlabelled metric of a metrics_server."""
    import urllib.request
    for line in urllib.request.urlopen(server.metrics_url, timeout=10).read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def wait_for(predicate, timeout=30.0, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last is True:
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} not met within {timeout}s (last: {last!r})")
