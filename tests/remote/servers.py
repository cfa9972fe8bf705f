"""Test servers on 127.0.0.1 for the remote Env (docs/remote-data.md): nginx serving a folder over HTTP with
range support, s3rver (npm, installed into tests/remote/node_modules by install_s3rver()) serving buckets
over the S3 protocol, and a tiny Python server that fails its first requests with 503.

Each start_* returns a server object with .url (or .endpoint), .stop() and .restart(); they are context
managers. Used by tests/remote/test_remote.py, tests/remote/conformance.py and bench/remote_throughput.py.
"""

import http.server
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process=None, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError("the server exited with status %s" % process.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on 127.0.0.1:%d after %.0f s" % (port, timeout))


class Nginx:
    """nginx serving `root` at http://127.0.0.1:PORT/ (no daemon; its files in a temporary folder).
    `extra` is more text for the server block (e.g. a location that returns 503)."""

    def __init__(self, root, extra=""):
        self.root = str(pathlib.Path(root).resolve())
        self.extra = extra
        self.dir = tempfile.mkdtemp(prefix="cntkio-nginx-")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.access_log = os.path.join(self.dir, "access.log")
        self.process = None

    def _write_config(self):
        # Run as root, nginx's workers would drop to "nobody", which cannot read the test's private folders.
        user = "user root;" if os.geteuid() == 0 else ""
        config = user + """
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
  log_format counted '$request_method $uri $status $http_range $body_bytes_sent';
  access_log {d}/access.log counted;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  sendfile on;
  keepalive_requests 100000;
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    {extra}
  }}
}}
""".format(d=self.dir, port=self.port, root=self.root, extra=self.extra)
        path = os.path.join(self.dir, "nginx.conf")
        with open(path, "w") as f:
            f.write(config)
        return path

    def start(self):
        config = self._write_config()
        # Its own process group: stop() kills the master and its workers at once, as a crash would.
        self.process = subprocess.Popen([NGINX, "-c", config, "-p", self.dir, "-e", os.path.join(self.dir, "error.log")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for_port(self.port, self.process)
        return self

    def stop(self):
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.process = None

    def restart(self):
        self.stop()
        return self.start()

    def requests(self):
        """The access log's records: (method, uri, status, range, bytes sent)."""
        if not os.path.exists(self.access_log):
            return []
        out = []
        with open(self.access_log) as f:
            for line in f:
                method, uri, status, rng, sent = line.split()
                out.append((method, uri, int(status), rng, int(sent)))
        return out

    def bytes_sent(self, uri_contains=""):
        return sum(r[4] for r in self.requests() if uri_contains in r[1])

    def __enter__(self):
        return self.start()

    def __exit__(self, *args):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def s3rver_script():
    return HERE / "node_modules" / "s3rver" / "bin" / "s3rver.js"


def install_s3rver():
    """Installs s3rver (package-lock.json) into tests/remote/node_modules unless it is there. Returns the
    reason it could not, or None."""
    if s3rver_script().exists():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed (scripts/setup.sh installs it)"
    result = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=str(HERE),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0 or not s3rver_script().exists():
        return "npm ci failed in %s: %s" % (HERE, result.stdout[-2000:])
    return None


class S3rver:
    """s3rver at http://127.0.0.1:PORT with buckets = the folders of `buckets` (each a folder of files,
    uploaded at start-up by s3rver's --configure-bucket... it serves from its own folder, so the files are
    copied into it). Credentials S3RVER/S3RVER."""

    ACCESS_KEY = "S3RVER"
    SECRET_KEY = "S3RVER"

    def __init__(self, buckets):
        self.buckets = {name: str(pathlib.Path(folder).resolve()) for name, folder in buckets.items()}
        self.dir = tempfile.mkdtemp(prefix="cntkio-s3rver-")
        self.port = free_port()
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.process = None

    def environment(self):
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY, "AWS_REGION": "us-east-1"}

    def start(self):
        node = shutil.which("node") or "node"
        args = [node, str(s3rver_script()), "--address", "127.0.0.1", "--port", str(self.port),
                "--directory", self.dir, "--silent"]
        for name in self.buckets:
            args += ["--configure-bucket", name]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.port, self.process)
        return self

    def upload(self):
        """Puts every file of the bucket folders into the buckets (with curl: a signed PUT each)."""
        for name, folder in self.buckets.items():
            for path in sorted(pathlib.Path(folder).rglob("*")):
                if not path.is_file():
                    continue
                key = path.relative_to(folder).as_posix()
                subprocess.run(["curl", "-sf", "-o", "/dev/null", "--aws-sigv4", "aws:amz:us-east-1:s3",
                                "--user", "%s:%s" % (self.ACCESS_KEY, self.SECRET_KEY),
                                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-T", str(path),
                                "%s/%s/%s" % (self.endpoint, name, key)], check=True)
        return self

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def __enter__(self):
        return self.start().upload()

    def __exit__(self, *args):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class FailingServer:
    """HTTP on 127.0.0.1 serving `root`, answering its first `failures` requests of the `methods` with `status`
    (503); with `spare_open`, requests for the first bytes (`Range: bytes=0-...`, how a file is opened) are
    served; with `ranges`, ranged GETs get their range (206), else the whole file (200), as http.server does.
    A broken server, with `ranges`: `shift` answers a range that does not start at 0 with the bytes `shift`
    earlier (and says so in Content-Range); `content_range` replaces the Content-Range header's value
    (None: no header); `encoding` sends that Content-Encoding with the (unchanged) bytes; `redirect_loop`
    answers every GET with a redirect to itself; `deny_then_hang` answers the second ranged GET 403 and
    the later ones nothing for a minute (a server that hangs). Ranged answers carry the file's
    Last-Modified, no ETag."""

    def __init__(self, root, failures, status=503, methods=("HEAD", "GET"), spare_open=False, ranges=False,
                 shift=0, content_range="", encoding=None, redirect_loop=False, deny_then_hang=False):
        self.deny_then_hang = deny_then_hang
        self.ranged_gets = 0
        self.encoding = encoding
        self.redirect_loop = redirect_loop
        self.shift = shift
        self.content_range = content_range
        self.spare_open = spare_open
        self.ranges = ranges  # answer `Range: bytes=A-B` with 206 (http.server itself sends the whole file)
        self.root = str(root)
        self.failures = failures
        self.status = status
        self.methods = methods
        self.count = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=outer.root, **kwargs)

            def log_message(self, *args):
                pass

            def _fail(self):
                if self.command not in outer.methods:
                    return False
                if outer.spare_open and (self.headers.get("Range") or "").startswith("bytes=0-"):
                    return False
                with outer.lock:
                    outer.count += 1
                    failing = outer.count <= outer.failures
                if failing:
                    self.send_response(outer.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                return failing

            def do_HEAD(self):
                if not self._fail():
                    super().do_HEAD()

            def do_GET(self):
                if self._fail():
                    return
                if outer.redirect_loop:
                    with outer.lock:
                        outer.count += 1
                    self.send_response(307)
                    self.send_header("Location", self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                wanted = self.headers.get("Range") or ""
                if not (outer.ranges and wanted.startswith("bytes=")):
                    super().do_GET()
                    return
                path = self.translate_path(self.path)
                with open(path, "rb") as f:
                    body = f.read()
                first, _, last = wanted[len("bytes="):].partition("-")
                first, last = int(first), min(int(last), len(body) - 1)
                if outer.deny_then_hang:
                    with outer.lock:
                        outer.ranged_gets += 1
                        n = outer.ranged_gets
                    if n > 2:
                        time.sleep(60)  # hangs: the client must give up or abandon the request
                        return
                    if n == 2:
                        self.send_response(403)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                if first > 0 and outer.shift:
                    first, last = max(0, first - outer.shift), max(0, first - outer.shift) + last - first
                self.send_response(206)
                if outer.content_range == "":
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, len(body)))
                elif outer.content_range is not None:
                    self.send_header("Content-Range", outer.content_range)
                self.send_header("Content-Length", str(last - first + 1))
                self.send_header("Last-Modified", self.date_time_string(int(os.stat(path).st_mtime)))
                if outer.encoding:
                    self.send_header("Content-Encoding", outer.encoding)
                self.end_headers()
                self.wfile.write(body[first:last + 1])

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True  # a stalled answer does not hold up the test's end
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *args):
        self.server.shutdown()
        self.server.server_close()
