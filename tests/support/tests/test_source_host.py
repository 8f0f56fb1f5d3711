"""The SSH migration source used by the system tests and the demo (tests/support/source_host/source_host.py).

Real processes only: a private sshd and MariaDB on 127.0.0.1 and a dedicated unix user.
"""

import hashlib
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import paramiko
import pytest

from conftest import SOURCE_HOST_DIR
from source_host import make_keypair
from source_host_fixtures import source_host  # noqa: F401 pylint: disable=unused-import


def _paramiko(host, **auth):
    client = paramiko.SSHClient()
    client.load_host_keys(host.known_hosts)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(host.host, host.port, username=host.user, look_for_keys=False, allow_agent=False,
                   timeout=10, **auth)
    return client


def _exec(client, command):
    stdout, stderr = client.exec_command(command, timeout=30)[1:]
    out = stdout.read().decode()
    return stdout.channel.recv_exit_status(), out, stderr.read().decode()


def _listening(port):
    """Local addresses (hex, as in /proc/net/tcp*) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                address, hexport = fields[1].split(":")
                if int(hexport, 16) == port and fields[3] == "0A":
                    found.append(address)
    return found


def test_loopback_only(source_host):
    assert _listening(source_host.port) == ["0100007F"]
    assert _listening(source_host.db["port"]) == ["0100007F"]


def test_key_login(source_host):
    proc = source_host.ssh("id -un; echo \"$PATH\"; pwd")
    assert proc.returncode == 0, proc.stderr
    user, path, cwd = proc.stdout.splitlines()
    assert user == source_host.user
    assert path.split(":")[0] == os.path.join(source_host.home, "bin")
    assert cwd == source_host.home


def test_password_login(source_host):
    client = _paramiko(source_host, password=source_host.password)
    try:
        assert _exec(client, "id -un")[1].strip() == source_host.user
    finally:
        client.close()


def test_passphrase_key_login(source_host):
    key = paramiko.Ed25519Key.from_private_key_file(source_host.passphrase_key, password=source_host.key_passphrase)
    client = _paramiko(source_host, pkey=key)
    client.close()


def test_wrong_password_refused(source_host):
    with pytest.raises(paramiko.AuthenticationException):
        _paramiko(source_host, password=source_host.password + "x")


def test_unknown_key_refused_then_authorized(source_host, tmp_path):
    public = make_keypair(str(tmp_path / "other"))[1]
    proc = source_host.ssh("true", key=str(tmp_path / "other"))
    assert proc.returncode == 255
    assert "Permission denied (publickey,password)" in proc.stderr
    source_host.authorize_key(public)
    try:
        assert source_host.ssh("true", key=str(tmp_path / "other")).returncode == 0
    finally:
        source_host.unauthorize_key(public)
    assert source_host.ssh("true", key=str(tmp_path / "other")).returncode == 255


def test_set_password(source_host):
    old = source_host.password
    source_host.set_password("n3w-Secret-pw")
    try:
        _paramiko(source_host, password="n3w-Secret-pw").close()
        with pytest.raises(paramiko.AuthenticationException):
            _paramiko(source_host, password=old)
    finally:
        source_host.set_password(old)


def test_docroot_shape(source_host):
    root = Path(source_host.docroot)
    config = (root / "wp-config.php").read_text()
    for name in ("DB_NAME", "DB_USER", "DB_PASSWORD", "DB_HOST"):
        assert "'%s'" % name in config
    assert "127.0.0.1:%d" % source_host.db["port"] in config
    assert (root / "wp-content/themes" / source_host.theme / "style.css").is_file()
    assert (root / "wp-content/themes" / source_host.theme / "functions.php").is_file()
    assert (root / "wp-content/plugins" / source_host.plugin / (source_host.plugin + ".php")).is_file()
    assert (root / "wp-content/uploads/2026/11/pixel.png").read_bytes().startswith(b"\x89PNG")
    assert (root / "wp-content/uploads/2026/11/café menu.txt").is_file()
    assert os.readlink(root / "wp-content/latest-upload.png") == "uploads/2026/11/pixel.png"
    assert list((root / "wp-content/upgrade").iterdir()) == []
    assert (root / "wp-config.php").stat().st_mode & 0o777 == 0o600
    owner = pwd.getpwnam(source_host.user).pw_uid
    assert all(p.lstat().st_uid == owner for p in root.rglob("*"))


def test_wp_standin(source_host):
    proc = source_host.ssh("wp --info && cd public_html && wp core version && wp core is-installed "
                           "&& wp option get siteurl && wp option get home")
    assert proc.returncode == 0, proc.stderr
    assert "WP-CLI version:\t2.11.0" in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[-3:] == ["6.8.3", "http://source.example", "http://source.example"]
    proc = source_host.ssh("cd public_html && wp option get no_such_option")
    assert proc.returncode == 1 and "Could not get 'no_such_option' option" in proc.stderr
    proc = source_host.ssh("wp core version")          # not inside a WordPress tree
    assert proc.returncode == 1 and "does not seem to be a WordPress installation" in proc.stderr
    assert source_host.ssh("wp --path=public_html core version").stdout.strip() == "6.8.3"


def test_wp_db_export(source_host):
    proc = source_host.ssh("cd public_html && wp db export - --add-drop-table", text=False)
    assert proc.returncode == 0, proc.stderr
    dump = proc.stdout.decode()
    assert "DROP TABLE IF EXISTS `wp_posts`" in dump
    for table in ("wp_options", "wp_posts", "wp_users"):
        assert "INSERT INTO `%s`" % table in dump
    assert "'siteurl','http://source.example'" in dump
    assert "Hello from the source" in dump and "It\\'s café time." in dump
    assert "'admin'" in dump
    no_drop = source_host.ssh("cd public_html && wp db export -").stdout
    assert "DROP TABLE" not in no_drop and "CREATE TABLE `wp_users`" in no_drop
    proc = source_host.ssh("cd public_html && wp db export ../dump.sql && grep -c 'INSERT INTO' ../dump.sql "
                           "&& rm ../dump.sql")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "Success: Exported to '../dump.sql'."
    dry = source_host.ssh("cd public_html && wp search-replace source.example dest.example --dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("Success: ") and "replacements to be made" in dry.stdout


def test_db_password_not_on_command_line(source_host):
    # The stand-in hands credentials to mariadb-dump through an inherited pipe (/dev/fd/3).
    proc = source_host.ssh("cd public_html && (wp db export - >/dev/null & sleep 0.05; "
                           "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; wait)")
    assert proc.returncode == 0
    assert source_host.db["password"] not in proc.stdout


def test_rsync_over_ssh(source_host, tmp_path):
    dest = tmp_path / "copy"
    ssh = " ".join(["ssh", "-i", source_host.client_key] + source_host.ssh_options())
    proc = subprocess.run(["rsync", "-a", "-e", ssh, "%s@%s:public_html/" % (source_host.user, source_host.host),
                           str(dest) + "/"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    src = Path(source_host.docroot)
    assert hashlib.sha256((dest / "wp-content/uploads/2026/11/random.bin").read_bytes()).digest() == \
        hashlib.sha256((src / "wp-content/uploads/2026/11/random.bin").read_bytes()).digest()


def test_variant_wp_cli_missing(source_host):
    with source_host.variant("wp_cli_missing"):
        proc = source_host.ssh("cd public_html && wp --info")
        assert proc.returncode == 127
        assert "wp: command not found" in proc.stderr
    assert source_host.ssh("wp --info").returncode == 0


def test_variant_rsync_missing(source_host):
    with source_host.variant("rsync_missing"):
        proc = source_host.ssh("rsync --version")
        assert proc.returncode == 127
        assert "rsync: command not found" in proc.stderr
        # only rsync is gone, and only for this user
        assert source_host.ssh("ls / >/dev/null && php -v >/dev/null && cd public_html && wp core version"
                               ).returncode == 0
        assert shutil.which("rsync")
    assert source_host.ssh("rsync --version").returncode == 0


def test_variant_docroot_missing(source_host):
    with source_host.variant("docroot_missing"):
        proc = source_host.ssh("for d in public_html htdocs www /var/www/html; do test -f $d/wp-config.php && "
                               "echo $d; done; test -f sites/blog/wp-config.php && echo moved")
        assert proc.stdout.split() == ["moved"]
        assert os.path.isfile(os.path.join(source_host.moved_docroot, "wp-config.php"))
    assert os.path.isfile(os.path.join(source_host.docroot, "wp-config.php"))


def test_cli_start_stop():
    """The CLI ``make demo`` uses: a second host next to the session one, then a clean stop."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    workdir = tempfile.mkdtemp(prefix="wpsrc-cli-")
    # A name of its own: a Unix user is machine-wide, and another test run may be on this machine.
    user = "wpsrccli" + secrets.token_hex(2)
    out = os.path.join(workdir, "host.json")
    script = str(SOURCE_HOST_DIR / "source_host.py")
    try:
        proc = subprocess.run([sys.executable, script, "start", "--workdir", workdir, "--json-out", out,
                               "--user", user, "--domain", "cli.example"],
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert os.stat(out).st_mode & 0o777 == 0o600
        with open(out) as handle:
            info = json.load(handle)
        assert info["user"] == user and info["host"] == "127.0.0.1"
        assert info["ansible"]["ansible_port"] == info["port"]
        ssh = ["ssh", "-i", info["client_key"], "-p", str(info["port"]), "-o",
               "UserKnownHostsFile=" + info["known_hosts"], "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
               "-o", "IdentitiesOnly=yes", user + "@127.0.0.1", "cd public_html && wp option get siteurl"]
        proc = subprocess.run(ssh, capture_output=True, text=True, timeout=30, check=False)
        assert proc.stdout.strip() == "http://cli.example", proc.stderr
        again = subprocess.run([sys.executable, script, "start", "--workdir", workdir, "--json-out", out],
                               capture_output=True, text=True, timeout=60, check=False)
        assert again.returncode == 1 and "already holds a source host" in again.stderr
    finally:
        stop = subprocess.run([sys.executable, script, "stop", "--workdir", workdir],
                              capture_output=True, text=True, timeout=60, check=False)
    assert stop.returncode == 0, stop.stderr
    with pytest.raises(KeyError):
        pwd.getpwnam(user)
    for pid in (info["sshd_pid"], info["db"]["pid"]):
        assert not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z"
    assert not os.path.exists(info["home"])
    assert os.path.exists(os.path.join(workdir, "sshd", "sshd.log"))        # logs kept without --purge
    again = subprocess.run([sys.executable, script, "stop", "--workdir", workdir, "--purge"],
                           capture_output=True, text=True, timeout=60, check=False)    # tolerates a stopped host
    assert again.returncode == 0 and not os.path.exists(workdir)
