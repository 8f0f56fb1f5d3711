"""The emulator's SSH executor (tests/support/emulator/executors/ssh.py) against the real source host.

Drives SSHExecutor directly with a small ticket object and migration records shaped like the
emulator's, plus one end-to-end pass through the emulator started with ``--executor ssh``.
"""

import copy
import glob
import os
import re
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest

from executors import messages as M
from executors.scripted import ScriptedExecutor
from executors.ssh import SSHExecutor, rewrite_domain
from file_tree import snapshot
from source_host import make_keypair
from source_host_fixtures import source_host  # noqa: F401 pylint: disable=unused-import

DEST_DOMAIN = "dest.example"


class Ticket:
    def __init__(self):
        self.messages = []

    def add_message(self, text):
        self.messages.append(str(text))

    @property
    def text(self):
        return "\n".join(self.messages)


@pytest.fixture(scope="module")
def executor():
    return SSHExecutor({})


@pytest.fixture
def migration(source_host):
    """Factory: a migration record as the emulator hands it to executors."""
    counter = iter(range(1, 10000))

    def make(auth="key", **extra):
        args = {"remote-host": source_host.host, "remote-user": source_host.user, "remote-port": source_host.port}
        if auth == "password":
            args["remote-pass"] = source_host.password
        elif auth == "key":
            args["ssh-id"] = Path(source_host.client_key).read_text()
        elif auth == "key-passphrase":
            args["ssh-id"] = Path(source_host.passphrase_key).read_text()
            args["ssh-id-pass"] = source_host.key_passphrase
        args.update(extra)
        return {"id": next(counter), "site_id": 1002, "auth": auth, "state": "preflight-running", "args": args}
    return make


@pytest.fixture
def site(tmp_path):
    return {"id": 1002, "domain": DEST_DOMAIN, "domain_name": DEST_DOMAIN, "storage": str(tmp_path / "storage")}


def preflight(executor, mig):
    ticket = Ticket()
    return executor.preflight(mig, ticket), ticket


def scripted_lines(mig, outcome):
    scripted = ScriptedExecutor({"config": {"default": {"preflight": {"outcome": outcome, "duration": 0}}}})
    ticket = Ticket()
    scripted.preflight(copy.deepcopy(mig), ticket)
    return ticket.messages


# ----------------------------------------------------------------------------- preflight: auth

@pytest.mark.parametrize("auth", ["password", "key", "key-passphrase"])
def test_preflight_succeeds(executor, migration, auth, source_host):
    ok, ticket = preflight(executor, migration(auth))
    assert ok, ticket.text
    method = "password" if auth == "password" else "publickey"
    assert ticket.messages[:5] == [
        M.connecting(source_host.user, "127.0.0.1", source_host.port),
        M.authenticated("127.0.0.1", source_host.port, method),
        M.looking_for(M.COMMON_DOCROOTS_TEXT),
        M.docroot_found("public_html"),
        M.wp_cli_found("2.11.0", "6.8.3")]
    assert re.match(r"rsync\s+version \d", ticket.messages[5])
    assert ticket.messages[-1] == M.PREFLIGHT_PASSED


def test_preflight_generated_identity(executor, migration, source_host, tmp_path):
    # What migration.create does when no ssh-id is sent: the public half goes to the partner (who must
    # authorize it, spec 4.5 step 3), the private half stays in the record as generated-ssh-id.
    private, public = make_keypair(str(tmp_path / "generated"), comment="wpcloud-migration-77")
    mig = migration("generated", **{"generated-ssh-id": private})
    ok, ticket = preflight(executor, mig)
    assert not ok and M.permission_denied(source_host.user, "127.0.0.1") in ticket.messages
    source_host.authorize_key(public)
    try:
        ok, ticket = preflight(executor, mig)
        assert ok, ticket.text
        assert M.authenticated("127.0.0.1", source_host.port, "publickey") in ticket.messages
    finally:
        source_host.unauthorize_key(public)


@pytest.mark.parametrize("case", ["wrong-password", "unauthorized-key", "wrong-passphrase", "garbage-key"])
def test_preflight_auth_failed(executor, migration, source_host, tmp_path, case):
    if case == "wrong-password":
        mig = migration("password", **{"remote-pass": source_host.password + "-nope"})
    elif case == "unauthorized-key":
        mig = migration("key", **{"ssh-id": make_keypair(str(tmp_path / "stranger"))[0]})
    elif case == "wrong-passphrase":
        mig = migration("key-passphrase", **{"ssh-id-pass": "not-the-passphrase"})
    else:
        mig = migration("key", **{"ssh-id": "-----BEGIN OPENSSH PRIVATE KEY-----\nbm9wZQ==\n"
                                            "-----END OPENSSH PRIVATE KEY-----\n"})
    ok, ticket = preflight(executor, mig)
    assert not ok
    assert ticket.messages[-2:] == [M.permission_denied(source_host.user, "127.0.0.1"),
                                    M.auth_failed("127.0.0.1", source_host.user)]
    if case == "wrong-passphrase":
        assert M.key_not_loaded("incorrect passphrase supplied to decrypt private key") in ticket.messages
    if case in ("wrong-password", "unauthorized-key"):
        # same lines, in the same order, as the scripted executor's auth_failed
        assert ticket.messages == scripted_lines(mig, "auth_failed")


def test_preflight_connection_refused(executor, migration):
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ok, ticket = preflight(executor, migration("key", **{"remote-port": port}))
    assert not ok
    assert ticket.messages[-2:] == [M.connect_error("127.0.0.1", port, "Connection refused"),
                                    M.connect_failed("127.0.0.1", port)]


# ----------------------------------------------------------------------------- preflight: causes

@pytest.mark.parametrize("cause", ["docroot_missing", "wp_cli_missing", "rsync_missing"])
def test_preflight_failure_causes(executor, migration, source_host, cause):
    mig = migration("password")
    with source_host.variant(cause):
        ok, ticket = preflight(executor, mig)
    assert not ok
    expected = {"docroot_missing": [M.docroot_missing(M.COMMON_DOCROOTS_TEXT), M.DOCROOT_MISSING_HINT],
                "wp_cli_missing": [M.WP_NOT_FOUND, M.WP_CLI_MISSING],
                "rsync_missing": [M.RSYNC_NOT_FOUND, M.RSYNC_MISSING]}[cause]
    assert ticket.messages[-2:] == expected
    # identical to what the scripted executor says for the same cause
    assert ticket.messages == scripted_lines(mig, cause)
    assert source_host.password not in ticket.text


def test_docroot_missing_fixed_by_remote_docroot(executor, migration, source_host):
    with source_host.variant("docroot_missing"):
        ok, ticket = preflight(executor, migration("key", **{"remote-docroot": "sites/blog"}))
        assert ok, ticket.text
        assert M.docroot_found("sites/blog") in ticket.messages
        ok, ticket = preflight(executor, migration("key", **{"remote-docroot": source_host.moved_docroot}))
        assert ok, ticket.text


@pytest.mark.parametrize("docroot", ["~/public_html", "public_html/", "DOCROOT"])
def test_remote_docroot_forms(executor, migration, source_host, docroot):
    docroot = source_host.docroot if docroot == "DOCROOT" else docroot
    ok, ticket = preflight(executor, migration("key", **{"remote-docroot": docroot}))
    assert ok, ticket.text
    assert M.looking_for(docroot) in ticket.messages


def test_remote_docroot_without_wordpress(executor, migration):
    ok, ticket = preflight(executor, migration("key", **{"remote-docroot": "bin"}))
    assert not ok
    assert ticket.messages[-2:] == [M.docroot_missing("bin"), M.DOCROOT_MISSING_HINT]


# ----------------------------------------------------------------------------- host keys (TOFU)

def test_host_key_remembered_and_checked(migration, source_host, tmp_path):
    known = tmp_path / "known_hosts"
    first = SSHExecutor({"known_hosts": str(known)})
    assert preflight(first, migration("key"))[0]
    name = "[127.0.0.1]:%d" % source_host.port
    assert first.config["remembered_host_keys"] == [name]
    assert source_host.host_key_pub.split()[1] in known.read_text()
    # A different key under the same name: refused.
    other = make_keypair(str(tmp_path / "impostor"))[1].split()
    known.write_text("%s %s %s\n" % (name, other[0], other[1]))
    ok, ticket = preflight(SSHExecutor({"known_hosts": str(known)}), migration("key"))
    assert not ok
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in ticket.messages[-2]


def test_configure(executor):
    # The emulator's reset hands the scripted configuration to whichever executor runs: accepted, ignored.
    assert executor.configure({"default": {"preflight": {"outcome": "success"}}, "hosts": {}})["executor"] == "ssh"
    with pytest.raises(ValueError):
        executor.configure({"bogus": 1})


# ----------------------------------------------------------------------------- run

class ProcessWatcher:
    """Samples every process's command line and environment while a run goes on."""

    def __init__(self, needles):
        self.needles = [n.encode() for n in needles if n]
        self.hits = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self._stop.is_set():
            for path in glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ"):
                try:
                    with open(path, "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                for needle in self.needles:
                    if needle in data:
                        self.hits.append(path)
            time.sleep(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("auth", ["password", "key-passphrase"])
def test_run_copies_files_and_database(executor, migration, source_host, site, auth, tmp_path, monkeypatch):
    mig = migration(auth)
    own_tmp = tmp_path / "tmp"                   # the run's wpmig-* directory, apart from other test runs'
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    secrets_ = [s for s in (mig["args"].get("remote-pass"), mig["args"].get("ssh-id-pass"),
                            source_host.db["password"]) if s]
    stale = Path(site["storage"], "files", "stale.txt")
    stale.parent.mkdir(parents=True)
    stale.write_text("from an earlier run")
    ticket = Ticket()
    with ProcessWatcher(secrets_) as watcher:
        ok = executor.run(mig, site, ticket)
    assert ok, ticket.text
    assert watcher.hits == []
    assert list(own_tmp.iterdir()) == []          # the executor removed its temporary directory
    for secret in secrets_:
        assert secret not in ticket.text
    assert ticket.messages[-1] == M.MIGRATION_COMPLETE
    assert M.syncing(100) in ticket.messages

    files = Path(site["storage"], "files")
    assert snapshot(files) == snapshot(source_host.docroot)    # byte for byte, modes, links, empty dir
    assert not stale.exists()
    assert (files / "wp-content" / "upgrade").is_dir()
    assert (files / "wp-content" / "uploads" / "2026" / "11" / "café menu.txt").is_file()
    assert stat.S_IMODE((files / "wp-config.php").stat().st_mode) == 0o600

    dump = Path(site["storage"], "db.sql").read_text()
    assert not Path(site["storage"], "db.sql.part").exists()
    assert "DROP TABLE IF EXISTS `wp_posts`" in dump
    assert "Hello from the source" in dump and "'admin'" in dump
    assert "'siteurl','http://%s'" % DEST_DOMAIN in dump
    assert "source.example" not in dump
    assert M.export_complete(3, M.human_size(len(dump.encode()))) in ticket.messages or \
        any(m.startswith("Database export complete: 3 tables") for m in ticket.messages)


def _serialized_ok(dump):
    """Every s:N:\\"...\\"; in the dump has the right byte length (as PHP's unserialize needs)."""
    checked = 0
    for match in re.finditer(r's:(\d+):\\"(.*?)\\";', dump):
        body = match.group(2).replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")
        assert int(match.group(1)) == len(body.encode()), match.group(0)
        checked += 1
    return checked


@pytest.mark.parametrize("case,expected_domain,replaced", [
    ("absent", DEST_DOMAIN, True),
    ("same-as-source", DEST_DOMAIN, True),
    ("other", "source.example", False),
    ("empty", "default.dest.example", True),
])
def test_run_remote_domain(executor, migration, site, case, expected_domain, replaced):
    extra = {"absent": {}, "same-as-source": {"remote-domain": "source.example"},
             "other": {"remote-domain": "other.example"}, "empty": {"remote-domain": ""}}[case]
    site["default_domain"] = "default.dest.example"
    ticket = Ticket()
    assert executor.run(migration("key", **extra), site, ticket), ticket.text
    dump = Path(site["storage"], "db.sql").read_text()
    assert "'siteurl','http://%s'" % expected_domain in dump
    assert "'admin_email','admin@%s'" % expected_domain in dump
    assert _serialized_ok(dump) >= 4
    if case == "other":
        assert M.replacing("other.example", DEST_DOMAIN) in ticket.messages
        assert any(m.startswith("0 occurrences of other.example") for m in ticket.messages)
    else:
        assert M.replacing("source.example", expected_domain) in ticket.messages
        assert "source.example" not in dump


def test_run_auth_failure(executor, migration, source_host, site):
    ticket = Ticket()
    assert not executor.run(migration("password", **{"remote-pass": "wrong"}), site, ticket)
    assert ticket.messages[-1] == M.auth_failed("127.0.0.1", source_host.user)
    assert not Path(site["storage"], "db.sql").exists()


def test_run_rsync_missing(executor, migration, source_host, site):
    ticket = Ticket()
    with source_host.variant("rsync_missing"):
        assert not executor.run(migration("key"), site, ticket)
    assert M.RSYNC_NOT_FOUND.split(": ", 1)[1] in ticket.text      # the remote shell's own words
    assert ticket.messages[-1] == M.FILE_COPY_FAILED
    assert not Path(site["storage"], "db.sql").exists()


def test_run_wp_missing(executor, migration, source_host, site):
    ticket = Ticket()
    with source_host.variant("wp_cli_missing"):
        assert not executor.run(migration("key"), site, ticket)
    assert "wp: command not found" in ticket.text
    assert ticket.messages[-1] == M.EXPORT_FAILED


# ----------------------------------------------------------------------------- rewrite_domain

def test_rewrite_domain_boundaries():
    data = (b"http://old.example/ www.old.example admin@old.example old.example.org notold.example "
            b"old.example:8080 old-example")
    out, count = rewrite_domain(data, "old.example", "new.example")
    assert out == (b"http://new.example/ www.new.example admin@new.example old.example.org notold.example "
                   b"new.example:8080 old-example")
    assert count == 4


def test_rewrite_domain_serialized():
    value = 'a:2:{s:3:"url";s:24:"http://old.example/caf\xc3\xa9";s:1:"q";s:5:"it\'s";}'
    # as mysqldump escapes it inside a quoted string
    sql = ("INSERT INTO t VALUES ('" + value.replace("\\", "\\\\").replace("'", "\\'").replace('"', '\\"')
           + "');").encode("latin-1")
    out, count = rewrite_domain(sql, "old.example", "a-much-longer.example")
    assert count == 1
    assert b's:34:\\"http://a-much-longer.example/caf\xc3\xa9\\";' in out
    assert b"s:5:\\\"it\\'s\\\";" in out                            # untouched


# ----------------------------------------------------------------------------- through the emulator

def test_end_to_end_through_emulator(source_host, tmp_path):
    """Emulator with --executor ssh: create (generated identity), authorize, preflight, ready."""
    from launcher import start_emulator
    emu = start_emulator(tmp_path / "emu", executor="ssh", extra_args=["--accept-delay", "0.1"])
    public = None
    try:
        emu.reset()                                   # works with the ssh executor too
        status, body = emu.api("migration/create/1002", "POST", {
            "remote-host": source_host.host, "remote-user": source_host.user,
            "remote-port": str(source_host.port)})
        assert status == 200, body
        mid, public = body["data"]["migration-id"], body["data"]["ssh-id-pub"]
        source_host.authorize_key(public)

        def wait(ticket_id):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                status, body = emu.api("response-ticket/get/full", "POST", {"response-ticket-id": ticket_id})
                if status == 200 and body["data"]["status"] != "running":
                    return body["data"]
                time.sleep(0.1)
            raise AssertionError("ticket %s did not finish" % ticket_id)

        status, body = emu.api("migration/preflight/%s" % mid, "POST")
        result = wait(body["data"]["response-ticket-id"])
        messages = [r["message"] for r in result["responses"]]
        assert result["status"] == "success", messages
        assert messages[-1] == M.PREFLIGHT_PASSED
        status, body = emu.api("migration/ready/%s" % mid, "POST")
        result = wait(body["data"]["response-ticket-id"])
        messages = [r["message"] for r in result["responses"]]
        assert result["status"] == "success", messages
        storage = emu.site(1002)["storage"]
        assert snapshot(os.path.join(storage, "files")) == snapshot(source_host.docroot)
        dump = Path(storage, "db.sql").read_text()
        assert "'siteurl','http://dest2.example'" in dump
        assert emu.api("migration/get/%s" % mid)[1]["data"]["state"] == "migration-succeeded"
    finally:
        if public:
            source_host.unauthorize_key(public)
        emu.stop()
