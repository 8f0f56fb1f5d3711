#!/usr/bin/env python
"""Start the emulator as a subprocess and talk to its hooks (stdlib only, usable anywhere).

In Python::

    emu = start_emulator(workdir)            # waits for the JSON line (30 s)
    status, body = emu.api("migration/get/5001")
    emu.stop()

From a Makefile (detached; the JSON line goes to FILE)::

    python tests/support/emulator/launcher.py --json-out FILE --pid-file PIDFILE [server.py args]
    python tests/support/emulator/launcher.py --stop PIDFILE [--no-kill]   (SIGTERM; SIGKILL after 10 s unless --no-kill)
"""

import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "server.py")
START_TIMEOUT = 30.0


class EmulatorError(RuntimeError):
    pass


def _wait_for_line(proc, stdout_path, log_path, timeout=START_TIMEOUT):
    # The server writes its stdout to a file (not a pipe) so a detached server never blocks on it.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(stdout_path, encoding="utf-8") as handle:
                line = handle.readline()
        except FileNotFoundError:
            line = ""
        if line.endswith("\n"):
            return json.loads(line)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    tail = ""
    if os.path.exists(log_path):
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            tail = handle.read()[-2000:]
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        raise EmulatorError("emulator did not start within %ss; log:\n%s" % (timeout, tail))
    raise EmulatorError("emulator exited with %s; log:\n%s" % (proc.returncode, tail))


def _spawn(workdir, args, python, detached=False, env=None):
    os.makedirs(workdir, exist_ok=True)
    stdout_path = os.path.join(workdir, "emulator.stdout")
    log_path = os.path.join(workdir, "emulator.log")
    if os.path.exists(stdout_path):
        os.unlink(stdout_path)
    with open(stdout_path, "w") as out, open(log_path, "a") as err:
        proc = subprocess.Popen([python, SERVER, "--workdir", workdir] + list(args), stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=detached, cwd=HERE, env=env)
    return proc, _wait_for_line(proc, stdout_path, log_path)


class Emulator:
    """A running emulator: connection facts plus small helpers around the API and the hooks."""

    def __init__(self, proc, info, workdir):
        self.proc = proc
        self.workdir = workdir
        self.info = info
        self.url = info["url"]
        self.api_key = info["api_key"]
        self.ca_path = info["ca_path"]
        self.client = info["client"]
        self._context = ssl.create_default_context(cafile=self.ca_path)

    @property
    def api_url(self):
        return self.url + "/api/v1.0/"

    def _request(self, method, path, data=None, json_body=None, headers=None):
        headers = dict(headers or {})
        body = None
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        elif data is not None:
            body = urllib.parse.urlencode(data).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def api(self, path, method="GET", data=None):
        """Call the API with the key; ``path`` is under /api/v1.0/ unless it starts with '/'.
        GET data goes in the query string, other methods send it as a form body. Returns (status, body)."""
        if not path.startswith("/"):
            path = "/api/v1.0/" + path
        if data is not None and method == "GET":
            path += "?" + urllib.parse.urlencode(data)
            data = None
        return self._request(method, path, data=data, headers={"Auth": self.api_key})

    def _hook(self, method, name, body=None):
        status, payload = self._request(method, "/_emulator/" + name, json_body=body)
        if status != 200:
            raise EmulatorError("hook %s %s: %s %s" % (method, name, status, payload))
        return payload

    def requests_log(self, since=0):
        return self._hook("GET", "requests?since=%d" % since)["requests"]

    def last_seq(self):
        """The sequence number of the last request logged (0: none yet): ``requests_log(since)`` from here on."""
        log = self.requests_log()
        return log[-1]["seq"] if log else 0

    def faults(self):
        """The rules as they stand (each with ``remaining``: what is left of its ``count``)."""
        return self._hook("GET", "faults")["rules"]

    def set_faults(self, rules, seed=None):
        """The rules left (with ``remaining``); ``seed`` seeds the probability draws (logged either way)."""
        body = {"rules": list(rules)}
        if seed is not None:
            body["seed"] = seed
        answer = self._hook("POST", "faults", body)
        self.fault_seed = answer.get("seed")
        return answer["rules"]

    def reset(self):
        return self._hook("POST", "reset", {})

    def set_variants(self, **switches):
        """Answer as another reading of the service (variants.py), until the next reset."""
        return self._hook("POST", "variants", switches)["variants"]

    def release_runs(self):
        """End the scripted runs planned with ``"hold": true`` (now and until the next set_executor)."""
        return self._hook("POST", "executor/release", {})

    def add_site(self, id, domain, allow_migration=False, provisioned=False):  # noqa: A002 - hook field name
        return self._hook("POST", "sites", {"id": id, "domain": domain, "allow_migration": allow_migration,
                                            "provisioned": provisioned})

    def site(self, id):  # noqa: A002
        return self._hook("GET", "sites/%s" % id)

    def set_dns(self, domain, arrived=None, txt=None):
        """DNS of ``domain`` points here (``arrived=True``) or no longer does (False); ``txt`` publishes a TXT value."""
        body = {"domain": domain}
        if arrived is not None:
            body["arrived"] = arrived
        if txt is not None:
            body["txt"] = txt
        return self._hook("POST", "dns", body)

    def set_ssl(self, cfg):
        """SSL timings (certificates.py): attempt, retry_base, retry_cap seconds."""
        return self._hook("POST", "ssl", cfg)["ssl"]

    def set_backups(self, cfg):
        """Backup timings, quota, per-domain outcomes (backups.py)."""
        return self._hook("POST", "backups", cfg)["backups"]

    def set_provisioning(self, cfg):
        """Job timings (jobs.py): create, delete, domain, restore."""
        return self._hook("POST", "provisioning", cfg)["provisioning"]

    def automatic_backup(self, site, kind):
        """An automatic backup (type fs or db) of ``site`` taken and listed now; its list record."""
        return self._hook("POST", "automatic-backup", {"site": site, "type": kind})

    def set_executor(self, cfg):
        return self._hook("POST", "executor", cfg)["executor"]

    def emit(self, event, atomic_site_id=None, data=None, client=None):
        body = {"event": event, "atomic_site_id": atomic_site_id, "data": [] if data is None else data}
        if client:
            body["client"] = client
        return self._hook("POST", "events", body)

    def deliveries(self):
        return self._hook("GET", "deliveries")["deliveries"]

    def stop(self, timeout=10, signum=signal.SIGTERM, kill=True):
        """Send ``signum`` (SIGTERM; SIGINT is Ctrl-C) and wait up to ``timeout`` s. Returns the exit code.

        Still running then: ``kill=True`` SIGKILLs it (a fixture must not leave a process behind);
        ``kill=False`` raises EmulatorError with every thread's stack (SIGUSR1 makes the server dump
        them into its log) and leaves the process running for the caller to inspect or kill: use it
        where a stop that hangs is the bug under test, which the SIGKILL would hide.
        """
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                if kill:
                    self.proc.kill()
                    self.proc.wait()
                else:
                    raise EmulatorError("emulator (pid %d) still running %ss after %s; its stacks:\n%s" % (
                        self.proc.pid, timeout, signal.Signals(signum).name, self.dump_stacks())) from None
        return self.proc.returncode

    def dump_stacks(self, wait=1.0):
        """Every thread's stack of the running server (SIGUSR1 -> faulthandler), from its log."""
        log_path = os.path.join(self.workdir, "emulator.log")
        size = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        try:
            self.proc.send_signal(signal.SIGUSR1)
        except ProcessLookupError:
            return "(process gone)"
        time.sleep(wait)
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            handle.seek(size)
            return handle.read()[-20000:]


def start_emulator(workdir, executor="scripted", state_file=None, config=None, extra_args=(),
                   python=sys.executable, env=None):
    """Start server.py and wait for its JSON line; ``env``: the server's environment (default: ours)."""
    args = ["--executor", executor]
    if state_file:
        args += ["--state-file", str(state_file)]
    if config:
        args += ["--config", str(config)]
    args += [str(a) for a in extra_args]
    workdir = os.path.abspath(str(workdir))
    proc, info = _spawn(workdir, args, python, env=env)
    return Emulator(proc, info, workdir)


def _stop_pidfile(pidfile, timeout=10, kill=True):
    """SIGTERM the detached emulator; after ``timeout`` s SIGKILL it (``kill``) or fail (exit 1)."""
    try:
        with open(pidfile) as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        print("launcher: no usable pid file %s" % pidfile, file=sys.stderr)
        return 1
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.1)
        if not kill:
            print("launcher: emulator (pid %d) still running %ss after SIGTERM" % (pid, timeout), file=sys.stderr)
            return 1
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.unlink(pidfile)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: launcher.py --json-out FILE --pid-file FILE [server.py args]\n"
             "       launcher.py --stop PIDFILE [--no-kill]")

    def take(flag):
        if flag in argv:
            index = argv.index(flag)
            if index + 1 >= len(argv):
                raise SystemExit(usage)
            value = argv[index + 1]
            del argv[index:index + 2]
            return value
        return None

    stop = take("--stop")
    if stop:
        kill = "--no-kill" not in argv
        return _stop_pidfile(stop, kill=kill)
    json_out, pid_file = take("--json-out"), take("--pid-file")
    if not json_out or not pid_file:
        raise SystemExit(usage)
    workdir = take("--workdir") or os.path.join(os.path.dirname(os.path.abspath(json_out)), "emulator-work")
    workdir = os.path.abspath(workdir)
    try:
        proc, info = _spawn(workdir, argv, sys.executable, detached=True)
    except EmulatorError as exc:
        print("launcher: %s" % exc, file=sys.stderr)
        return 1
    with open(pid_file, "w") as handle:
        handle.write("%d\n" % proc.pid)
    with open(json_out, "w") as handle:
        handle.write(json.dumps(info) + "\n")
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
