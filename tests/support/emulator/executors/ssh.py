"""SSH executor: a real pull from the migration's source host (paramiko + the local rsync).

Connection
    remote-host:remote-port as remote-user, with remote-pass, or ssh-id (+ ssh-id-pass), or the
    identity the emulator generated for the migration (``generated-ssh-id``). Agent and ~/.ssh keys
    are never used. Option ``resolve`` maps a remote-host name to the address to dial (the host key is
    still remembered under the name), e.g. ``{"source.example": "127.0.0.1"}``.

Host keys: trust on first use
    The first key a host:port presents is accepted and remembered for the executor's lifetime (and in
    the file named by option ``known_hosts``, OpenSSH format, when set); a later different key fails
    the operation with a "REMOTE HOST IDENTIFICATION HAS CHANGED" message. This is what a migration
    service that takes no host key from its API can do at best. ``configure({"forget_host_keys": true})``
    clears the memory.

Preflight
    connect (authentication failure: "Permission denied (publickey,password)."), locate the docroot
    (remote-docroot, else public_html, htdocs, www, /var/www/html relative to the home, recognised by
    wp-config.php), ``wp --info`` + ``wp core version`` + ``wp core is-installed``, ``rsync --version``.
    The texts come from messages.py, shared with the scripted executor.

Run
    ``wp db export - --add-drop-table`` streamed into ``storage/db.sql``, the domain rewritten in it
    (see rewrite_domain and _domains), then the docroot copied with the local rsync into
    ``storage/files/`` (``-rlptD --delete``: contents, symlinks, permissions and times byte for byte;
    ownership is the emulator's, as the destination's own user would own them).

How rsync travels (no secret leaves this process)
    The local rsync gets ``-e "<python> <tmp>/bridge.py <tmp>/bridge.sock"`` as its remote shell. The
    bridge connects to a unix socket in a 0700 temporary directory served by this executor, which
    opens an exec channel on the already authenticated paramiko connection and pumps the bytes both
    ways. So password, key and passphrase authentication all work the same way, without sshpass,
    without a key file on disk, and nothing secret ever appears on a command line or in the
    environment of a child process. The temporary directory (script and socket only) is removed
    after the copy.
"""

import base64
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import paramiko

from executors import messages as M
from executors.base import Executor

BRIDGE_SOURCE = r'''
import json, os, socket, sys, threading
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
args = sys.argv[2:]
if args[:1] == ["-l"]:
    args = args[2:]
sock.sendall((json.dumps(args[1:]) + "\n").encode())
def upstream():
    try:
        while True:
            data = os.read(0, 65536)
            if not data:
                break
            sock.sendall(data)
    except OSError:
        pass
    with __import__("contextlib").suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
threading.Thread(target=upstream, daemon=True).start()
out = sys.stdout.buffer
while True:
    data = sock.recv(65536)
    if not data:
        break
    out.write(data)
    out.flush()
sys.exit(0)
'''

_MYSQL_UNESCAPE = {b"0": b"\x00", b"'": b"'", b'"': b'"', b"b": b"\x08", b"n": b"\n", b"r": b"\r",
                   b"t": b"\t", b"Z": b"\x1a", b"\\": b"\\"}
_SERIALIZED = re.compile(rb's:(\d+):\\"(.*?)\\";', re.S)


def _sql_unescape(data):
    return re.sub(rb"\\(.)", lambda m: _MYSQL_UNESCAPE.get(m.group(1), m.group(1)), data, flags=re.S)


def rewrite_domain(data, old, new):
    """Replace the host name ``old`` by ``new`` in a mysqldump (bytes); returns (data, count).

    Matches whole host names only (``www.old`` becomes ``www.new``; ``old.org`` and ``notold`` stay).
    PHP-serialized strings (``s:N:\\"...\\";`` in the dump's escaping) that contain the name get their
    byte length N recomputed, as ``wp search-replace`` does. A serialized string that itself contains
    ``\\";`` is not recognised as one (rare; its length would then be stale).
    """
    name = re.compile(rb"(?<![A-Za-z0-9-])" + re.escape(old.encode()) + rb"(?![A-Za-z0-9-]|\.[A-Za-z0-9])")
    replacement = new.encode()
    count = 0

    def fix(match):
        nonlocal count
        body = match.group(2)
        if int(match.group(1)) != len(_sql_unescape(body)):
            return match.group(0)  # not what it looked like: leave it to the plain pass
        new_body, n = name.subn(replacement, body)
        if not n:
            return match.group(0)
        count += n
        return b's:%d:\\"%s\\";' % (len(_sql_unescape(new_body)), new_body)

    data = _SERIALIZED.sub(fix, data)
    data, n = name.subn(replacement, data)
    return data, count + n


def _host_of(url):
    url = (url or "").strip()
    match = re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//([^/?#]+)", url, re.I)
    netloc = match.group(1) if match else url.split("/")[0]
    return netloc.rsplit("@", 1)[-1].lower()


def _key_is_encrypted(text):
    """True when private key text is passphrase-protected (OpenSSH or PEM format)."""
    if "ENCRYPTED" in text:
        return True
    match = re.search(r"-----BEGIN OPENSSH PRIVATE KEY-----(.*?)-----END", text, re.S)
    if not match:
        return False
    try:
        blob = base64.b64decode("".join(match.group(1).split()))
    except ValueError:
        return False
    magic = b"openssh-key-v1\x00"
    if not blob.startswith(magic) or len(blob) < len(magic) + 4:
        return False
    length = int.from_bytes(blob[len(magic):len(magic) + 4], "big")
    return blob[len(magic) + 4:len(magic) + 4 + length] != b"none"


def _load_key(text, passphrase):
    """A paramiko key from private key text; raises paramiko.SSHException with OpenSSH's reasons."""
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return cls.from_private_key(io.StringIO(text), password=passphrase or None)
        except (paramiko.SSHException, ValueError, TypeError, IndexError):
            continue
    if _key_is_encrypted(text):
        raise paramiko.SSHException("incorrect passphrase supplied to decrypt private key")
    raise paramiko.SSHException("invalid format")


class _Failed(Exception):
    """Ends an operation; the messages were already written."""


class _RememberPolicy(paramiko.MissingHostKeyPolicy):
    def __init__(self, executor, name):
        self.executor, self.name = executor, name

    def missing_host_key(self, client, hostname, key):
        self.executor._remember(self.name, key)
        client.get_host_keys().add(self.name, key.get_name(), key)


class _Bridge:
    """Serves the rsync remote-shell bridge over an authenticated paramiko connection."""

    def __init__(self, client, timeout):
        self.client, self.timeout = client, timeout
        self.tmpdir = tempfile.mkdtemp(prefix="wpmig-")
        os.chmod(self.tmpdir, 0o700)
        self.script = os.path.join(self.tmpdir, "bridge.py")
        with open(self.script, "w") as handle:
            handle.write(BRIDGE_SOURCE)
        self.sock_path = os.path.join(self.tmpdir, "bridge.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.sock_path)
        self.server.listen(4)
        self.server.settimeout(0.2)
        self.stderr = bytearray()
        self.exit_statuses = []
        self._stop = threading.Event()
        self._threads = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True, name="rsync-bridge")
        self._acceptor.start()

    @property
    def remote_shell(self):
        return "'%s' '%s' '%s'" % (sys.executable, self.script, self.sock_path)

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn = self.server.accept()[0]
            except socket.timeout:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn):
        chan = None
        try:
            conn.settimeout(None)
            header = b""
            while not header.endswith(b"\n"):
                chunk = conn.recv(1)
                if not chunk:
                    return
                header += chunk
            command = " ".join(json.loads(header.decode()))
            chan = self.client.get_transport().open_session(timeout=self.timeout)
            chan.exec_command(command)

            def up():
                with contextlib.suppress(OSError, EOFError):
                    while True:
                        data = conn.recv(65536)
                        if not data:
                            break
                        chan.sendall(data)
                with contextlib.suppress(OSError, EOFError):
                    chan.shutdown_write()

            def err():
                with contextlib.suppress(OSError, EOFError):
                    while True:
                        data = chan.recv_stderr(65536)
                        if not data:
                            break
                        self.stderr.extend(data)

            workers = [threading.Thread(target=up, daemon=True), threading.Thread(target=err, daemon=True)]
            for worker in workers:
                worker.start()
            with contextlib.suppress(OSError, EOFError):
                while True:
                    data = chan.recv(65536)
                    if not data:
                        break
                    conn.sendall(data)
            workers[1].join(self.timeout)
            self.exit_statuses.append(chan.recv_exit_status())
        finally:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
            if chan is not None:
                chan.close()

    def close(self):
        self._stop.set()
        with contextlib.suppress(OSError):
            self.server.close()
        self._acceptor.join(2)
        for thread in self._threads:
            thread.join(2)
        shutil.rmtree(self.tmpdir, ignore_errors=True)


class SSHExecutor(Executor):
    """Preflight and run against a real SSH source (see the module docstring)."""

    SETTINGS = ("connect_timeout", "command_timeout", "known_hosts", "resolve", "rsync", "forget_host_keys")

    def __init__(self, options=None):
        super().__init__(options)
        self._lock = threading.Lock()
        self._host_keys = {}          # "[host]:port" -> paramiko PKey
        self._apply(self.options)
        if self.known_hosts and os.path.exists(self.known_hosts):
            keys = paramiko.HostKeys(self.known_hosts)
            for name in keys.keys():
                for key in keys[name].values():
                    self._host_keys[name] = key

    def _apply(self, settings):
        self.connect_timeout = float(settings.get("connect_timeout", getattr(self, "connect_timeout", 10)))
        self.command_timeout = float(settings.get("command_timeout", getattr(self, "command_timeout", 900)))
        self.known_hosts = settings.get("known_hosts", getattr(self, "known_hosts", None))
        self.resolve = dict(settings.get("resolve", getattr(self, "resolve", {})) or {})
        self.rsync = settings.get("rsync") or getattr(self, "rsync", None) or shutil.which("rsync")

    def configure(self, config):
        """Runtime settings (POST /_emulator/executor and reset). The scripted executor's ``default``
        and ``hosts`` keys are accepted and ignored, so the emulator's reset works with either executor."""
        config = dict(config or {})
        config.pop("default", None)
        config.pop("hosts", None)
        unknown = set(config) - set(self.SETTINGS)
        if unknown:
            raise ValueError("the ssh executor takes only %s (got %s)"
                             % (", ".join(self.SETTINGS), ", ".join(sorted(unknown))))
        with self._lock:
            self._apply(config)
            if config.get("forget_host_keys"):
                self._host_keys.clear()
        return self.config

    @property
    def config(self):
        return {"executor": "ssh", "connect_timeout": self.connect_timeout,
                "command_timeout": self.command_timeout, "known_hosts": self.known_hosts,
                "resolve": dict(self.resolve), "remembered_host_keys": sorted(self._host_keys)}

    # ------------------------------------------------------------------ host keys
    def _remember(self, name, key):
        with self._lock:
            self._host_keys[name] = key
            if self.known_hosts:
                line = "%s %s %s\n" % (name, key.get_name(), key.get_base64())
                with open(self.known_hosts, "a") as handle:
                    handle.write(line)

    # ------------------------------------------------------------------ connection
    @staticmethod
    def _args(migration):
        args = dict(migration.get("args") or {})
        for name in ("generated-ssh-id",):
            if name not in args and name in migration:
                args[name] = migration[name]
        return args

    @staticmethod
    def _auth(migration, args):
        auth = migration.get("auth")
        if auth:
            return auth
        if args.get("remote-pass"):
            return "password"
        if args.get("ssh-id"):
            return "key-passphrase" if args.get("ssh-id-pass") else "key"
        return "generated"

    def _connect(self, migration, ticket, failed_line):
        args = self._args(migration)
        host, user = args["remote-host"], args["remote-user"]
        port = int(args.get("remote-port") or 22)
        auth = self._auth(migration, args)
        ticket.add_message(M.connecting(user, host, port))
        credentials = {}
        if auth == "password":
            credentials["password"] = args.get("remote-pass") or ""
        else:
            text = args.get("generated-ssh-id") if auth == "generated" else args.get("ssh-id")
            try:
                credentials["pkey"] = _load_key(text or "", args.get("ssh-id-pass") if auth != "generated" else None)
            except paramiko.SSHException as exc:
                ticket.add_message(M.key_not_loaded(str(exc)))
                ticket.add_message(M.permission_denied(user, host))
                ticket.add_message(failed_line or M.auth_failed(host, user))
                raise _Failed() from None
        name = host if port == 22 else "[%s]:%d" % (host, port)
        client = paramiko.SSHClient()
        with self._lock:
            known = self._host_keys.get(name)
        if known is not None:
            client.get_host_keys().add(name, known.get_name(), known)
        client.set_missing_host_key_policy(_RememberPolicy(self, name))
        address = self.resolve.get(host, host)
        try:
            sock = socket.create_connection((address, port), timeout=self.connect_timeout)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if isinstance(exc, socket.timeout):
                reason = "Connection timed out"
            elif isinstance(exc, socket.gaierror):
                reason = "Name or service not known"
            ticket.add_message(M.connect_error(host, port, reason))
            ticket.add_message(failed_line or M.connect_failed(host, port))
            raise _Failed() from None
        try:
            client.connect(host, port, username=user, sock=sock, look_for_keys=False, allow_agent=False,
                           timeout=self.connect_timeout, banner_timeout=self.connect_timeout,
                           auth_timeout=self.connect_timeout, **credentials)
        except paramiko.BadHostKeyException:
            client.close()
            ticket.add_message(M.host_key_changed(host, port))
            ticket.add_message(failed_line or M.connect_failed(host, port))
            raise _Failed() from None
        except paramiko.AuthenticationException:
            client.close()
            ticket.add_message(M.permission_denied(user, host))
            ticket.add_message(failed_line or M.auth_failed(host, user))
            raise _Failed() from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            client.close()
            ticket.add_message(M.connect_error(host, port, str(exc) or type(exc).__name__))
            ticket.add_message(failed_line or M.connect_failed(host, port))
            raise _Failed() from None
        ticket.add_message(M.authenticated(host, port, "password" if auth == "password" else "publickey"))
        return client

    def _exec(self, client, command, sink=None, timeout=None):
        """Run ``command``; returns (exit status, stdout bytes (empty when sink is given), stderr text)."""
        timeout = timeout or self.command_timeout
        chan = client.get_transport().open_session(timeout=self.connect_timeout)
        try:
            chan.settimeout(timeout)
            chan.exec_command(command)
            out, err = bytearray(), bytearray()

            def read_err():
                with contextlib.suppress(OSError, EOFError, socket.timeout):
                    while True:
                        data = chan.recv_stderr(65536)
                        if not data:
                            break
                        err.extend(data)

            reader = threading.Thread(target=read_err, daemon=True)
            reader.start()
            try:
                while True:
                    data = chan.recv(65536)
                    if not data:
                        break
                    if sink is not None:
                        sink.write(data)
                    else:
                        out.extend(data)
            except socket.timeout:
                return 124, bytes(out), "timed out after %d s" % timeout
            reader.join(timeout)
            status = chan.recv_exit_status()
            return status, bytes(out), err.decode("utf-8", "replace")
        finally:
            chan.close()

    # ------------------------------------------------------------------ shared steps
    @staticmethod
    def _candidates(args):
        given = args.get("remote-docroot")
        if given:
            value = given.strip()
            if value in ("~", "~/"):
                value = "."
            elif value.startswith("~/"):
                value = value[2:]
            return [value], given
        return list(M.COMMON_DOCROOTS), M.COMMON_DOCROOTS_TEXT

    def _locate_docroot(self, client, args, ticket, failed_line=None):
        candidates, where = self._candidates(args)
        ticket.add_message(M.looking_for(where))
        script = "for d in %s; do if [ -f \"$d/wp-config.php\" ]; then printf '%%s\\n' \"$d\"; exit 0; fi; done; exit 3" % (
            " ".join(shlex.quote(c) for c in candidates))
        status, out, _err = self._exec(client, script, timeout=60)
        if status != 0 or not out.strip():
            ticket.add_message(M.docroot_missing(where))
            ticket.add_message(failed_line or M.DOCROOT_MISSING_HINT)
            raise _Failed()
        docroot = out.decode("utf-8", "replace").strip().splitlines()[0]
        ticket.add_message(M.docroot_found(docroot))
        return docroot

    @staticmethod
    def _not_found(status, stderr, program):
        return status == 127 or ("%s: command not found" % program) in stderr or (
            "%s: not found" % program) in stderr

    def _check_wp(self, client, docroot, ticket, failed_line=None):
        cd = "cd -- %s && " % shlex.quote(docroot)
        status, out, err = self._exec(client, cd + "wp --info", timeout=60)
        if self._not_found(status, err, "wp"):
            ticket.add_message(M.WP_NOT_FOUND)
            ticket.add_message(failed_line or M.WP_CLI_MISSING)
            raise _Failed()
        match = re.search(rb"WP-CLI version:\s*(\S+)", out)
        cli_version = match.group(1).decode() if match else "unknown"
        status, out, err = self._exec(client, cd + "wp core version && wp core is-installed", timeout=60)
        if status != 0:
            for line in err.strip().splitlines()[-2:]:
                ticket.add_message(line)
            ticket.add_message(failed_line or M.WP_DB_UNREACHABLE)
            raise _Failed()
        ticket.add_message(M.wp_cli_found(cli_version, out.decode("utf-8", "replace").strip() or "unknown"))

    def _check_rsync(self, client, ticket, failed_line=None):
        status, out, err = self._exec(client, "rsync --version", timeout=60)
        if self._not_found(status, err, "rsync") or status != 0:
            ticket.add_message(M.RSYNC_NOT_FOUND)
            ticket.add_message(failed_line or M.RSYNC_MISSING)
            raise _Failed()
        first = out.decode("utf-8", "replace").strip().splitlines()
        ticket.add_message(first[0] if first else "rsync found")

    # ------------------------------------------------------------------ interface
    def preflight(self, migration, ticket):
        client = None
        try:
            client = self._connect(migration, ticket, None)
            docroot = self._locate_docroot(client, self._args(migration), ticket)
            self._check_wp(client, docroot, ticket)
            self._check_rsync(client, ticket)
            ticket.add_message(M.PREFLIGHT_PASSED)
            return True
        except _Failed:
            return False
        finally:
            if client is not None:
                client.close()

    def run(self, migration, site, ticket):
        args = self._args(migration)
        client = None
        try:
            client = self._connect(migration, ticket, None)
            docroot = self._locate_docroot(client, args, ticket)
            host, user = args["remote-host"], args["remote-user"]
            ticket.add_message(M.starting(user, host, docroot, site["id"], site["domain"]))
            storage = site["storage"]
            os.makedirs(storage, exist_ok=True)
            source_domain, target_domain, why = self._domains(client, docroot, args, site)
            part = os.path.join(storage, "db.sql.part")
            try:
                self._export(client, docroot, host, part, ticket)
                self._sync(client, docroot, os.path.join(storage, "files"), ticket)
                ticket.add_message(M.IMPORTING)
                self._rewrite(part, source_domain, target_domain, why, ticket)
                os.replace(part, os.path.join(storage, "db.sql"))
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(part)
            ticket.add_message(M.MIGRATION_COMPLETE)
            return True
        except _Failed:
            return False
        finally:
            if client is not None:
                client.close()

    # ------------------------------------------------------------------ run steps
    def _domains(self, client, docroot, args, site):
        """(source domain, destination domain, explanation) following spec 2.3 remote-domain."""
        default_domain = site.get("default_domain") or site["domain"]
        if args.get("remote-domain"):
            return args["remote-domain"].strip().lower(), site["domain"], "remote-domain"
        status, out, _err = self._exec(client, "cd -- %s && wp option get siteurl" % shlex.quote(docroot),
                                       timeout=60)
        source = _host_of(out.decode("utf-8", "replace")) if status == 0 else ""
        if "remote-domain" in args:   # explicitly empty: the destination's default domain
            return source, default_domain, "siteurl; remote-domain empty: destination default domain"
        return source, site["domain"], "siteurl"

    def _export(self, client, docroot, host, path, ticket):
        ticket.add_message(M.exporting(host))
        with open(path, "wb") as sink:
            command = "cd -- %s && wp db export - --add-drop-table" % shlex.quote(docroot)
            status, _out, err = self._exec(client, command, sink=sink)
        if status != 0:
            for line in err.strip().splitlines()[-3:]:
                ticket.add_message(line)
            ticket.add_message(M.EXPORT_FAILED)
            raise _Failed()
        with open(path, "rb") as handle:
            data = handle.read()
        ticket.add_message(M.export_complete(len(re.findall(rb"^CREATE TABLE ", data, re.M)),
                                             M.human_size(len(data))))

    def _rewrite(self, path, source, target, why, ticket):
        if not source:
            ticket.add_message("Could not read the source domain (siteurl); no domain replaced.")
            return
        if source == target.lower():
            ticket.add_message("Source domain %s is the destination's domain; nothing to replace." % source)
            return
        ticket.add_message(M.replacing(source, target))
        with open(path, "rb") as handle:
            data = handle.read()
        data, count = rewrite_domain(data, source, target)
        with open(path, "wb") as handle:
            handle.write(data)
        ticket.add_message("%d occurrence%s of %s replaced (source domain from %s)."
                           % (count, "" if count == 1 else "s", source, why))

    def _sync(self, client, docroot, dest, ticket):
        if not self.rsync:
            ticket.add_message("rsync: command not found (on the migration service)")
            ticket.add_message(M.FILE_COPY_FAILED)
            raise _Failed()
        os.makedirs(dest, exist_ok=True)
        bridge = _Bridge(client, self.connect_timeout)
        try:
            source = "source:" + docroot.rstrip("/") + "/"
            argv = [self.rsync, "-rlptD", "--delete", "--protect-args", "--timeout=%d" % max(30, self.connect_timeout),
                    "--info=progress2", "--no-inc-recursive", "-e", bridge.remote_shell, source, dest + "/"]
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            stderr = bytearray()
            reader = threading.Thread(target=lambda: stderr.extend(proc.stderr.read()), daemon=True)
            reader.start()
            reported = 0
            buffer = b""
            deadline = time.monotonic() + self.command_timeout
            while True:
                chunk = proc.stdout.read1(4096)
                if not chunk:
                    break
                buffer = (buffer + chunk)[-4096:]
                for match in re.finditer(rb"\s(\d{1,3})%", buffer):
                    percent = int(match.group(1))
                    while reported + 25 <= min(percent, 100):
                        reported += 25
                        ticket.add_message(M.syncing(reported))
                buffer = buffer[-64:]
                if time.monotonic() > deadline:
                    proc.kill()
                    break
            status = proc.wait()
            reader.join(5)
        finally:
            bridge.close()
        if status != 0:
            remote = bridge.stderr.decode("utf-8", "replace").strip().splitlines()
            local = stderr.decode("utf-8", "replace").strip().splitlines()
            # Both ends' last words: the remote's "command not found" must not be pushed out by the
            # local rsync's protocol errors that follow it.
            for line in remote[-2:] + local[-2:]:
                ticket.add_message(line)
            ticket.add_message(M.FILE_COPY_FAILED)
            raise _Failed()
        while reported < 100:
            reported += 25
            ticket.add_message(M.syncing(reported))
        count, size = 0, 0
        for root, _dirs, files in os.walk(dest):
            for name in files:
                count += 1
                with contextlib.suppress(OSError):
                    size += os.lstat(os.path.join(root, name)).st_size
        ticket.add_message("Files synced: %d files, %s" % (count, M.human_size(size)))
