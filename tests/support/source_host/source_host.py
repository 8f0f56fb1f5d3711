"""A real SSH migration source on loopback: a WordPress-shaped site behind a private sshd and MariaDB.

Used by the system tests (session fixtures) and by ``make demo``. Needs root (it creates a unix user)
and these programs, which it checks for but never installs: sshd, ssh-keygen, rsync, mariadbd (or
mysqld), mariadb-install-db, the mariadb client and mariadb-dump, php (CLI), openssl, useradd/userdel,
chpasswd. Everything listens on 127.0.0.1 only; all state lives under the work directory.

Function API::

    host = start_source_host("/tmp/src1")        # port 0: a free high port
    host.port, host.user, host.password, host.client_key, host.known_hosts
    with host.variant("rsync_missing"): ...      # wp_cli_missing, rsync_missing, docroot_missing
    host.stop()

CLI::

    python tests/support/source_host/source_host.py start --workdir DIR --json-out FILE [--port N] [--user U]
    python tests/support/source_host/source_host.py stop --workdir DIR [--purge]

The work directory and each of its parents must be traversable by other users (the source user and
``mysql`` live below it); a directory from ``tempfile.mkdtemp()`` under /tmp is fine once chmod 0755,
pytest's ``tmp_path`` (below a 0700 directory) is not.
"""

import argparse
import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
STATE_FILE = "source-host.json"
VARIANTS = ("wp_cli_missing", "rsync_missing", "docroot_missing")
DEFAULT_DOMAIN = "source.example"
DEFAULT_THEME = "twentysource"
DEFAULT_PLUGIN = "hello-source"
WP_VERSION = "6.8.3"
# An 8x8 red PNG: the "small binary image" under uploads.
PIXEL_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000080000000808020000004b6d29dc0000001549444154789c63f8"
    "cfc0f09f8108e05f2a0c2005001f1b7f81f3b1c5a80000000049454e44ae426082")


class SourceHostError(RuntimeError):
    """The source host could not be started or changed."""


# --------------------------------------------------------------------------- helpers

def _find(*names, dirs=("/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin")):
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        for directory in dirs:
            path = os.path.join(directory, name)
            if os.access(path, os.X_OK):
                return path
    return None


def check_prerequisites():
    """Return {tool: path} or raise SourceHostError listing what is missing (and the Debian package)."""
    wanted = {
        "sshd": (("sshd",), "openssh-server"),
        "ssh-keygen": (("ssh-keygen",), "openssh-client"),
        "ssh": (("ssh",), "openssh-client"),
        "rsync": (("rsync",), "rsync"),
        "mariadbd": (("mariadbd", "mysqld"), "mariadb-server"),
        "mariadb-install-db": (("mariadb-install-db", "mysql_install_db"), "mariadb-server"),
        "mariadb": (("mariadb", "mysql"), "mariadb-client"),
        "mariadb-admin": (("mariadb-admin", "mysqladmin"), "mariadb-client"),
        "mariadb-dump": (("mariadb-dump", "mysqldump"), "mariadb-client"),
        "php": (("php",), "php-cli"),
        "openssl": (("openssl",), "openssl"),
        "useradd": (("useradd",), "passwd"),
        "userdel": (("userdel",), "passwd"),
        "chpasswd": (("chpasswd",), "passwd"),
    }
    tools, missing = {}, []
    for key, (names, package) in wanted.items():
        path = _find(*names)
        if path:
            tools[key] = path
        else:
            missing.append("%s (Debian package %s)" % ("/".join(names), package))
    if missing:
        raise SourceHostError("missing programs for the source host: " + ", ".join(missing))
    if os.geteuid() != 0:
        raise SourceHostError("the source host must be started as root (it creates a unix user)")
    return tools


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_port(port, timeout, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
        time.sleep(0.05)
    return False


def _run(argv, input=None, check=True, **kwargs):
    proc = subprocess.run(argv, input=input, capture_output=True, text=True, check=False, **kwargs)
    if check and proc.returncode != 0:
        raise SourceHostError("%s failed (%s): %s" % (argv[0], proc.returncode, (proc.stderr or proc.stdout).strip()))
    return proc


def _check_traversable(path):
    """The source user and mysql must be able to reach below ``path``."""
    path = os.path.abspath(path)
    current = path
    while True:
        mode = os.stat(current).st_mode
        if not mode & stat.S_IXOTH:
            raise SourceHostError(
                "%s is not traversable by other users (mode %o); the source host's user and MariaDB live "
                "below %s. Use a work directory whose parents are all o+x (e.g. tempfile.mkdtemp())."
                % (current, stat.S_IMODE(mode), path))
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def _chown_tree(path, uid, gid):
    os.lchown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


def _sql_str(value):
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --------------------------------------------------------------------------- key material

def make_keypair(path, passphrase=None, comment="wpcloud-test"):
    """Write an ed25519 key pair (``path`` 0600, ``path + '.pub'``), optionally passphrase-protected.

    Uses ``cryptography`` so a passphrase never reaches a command line; falls back to ssh-keygen for
    unprotected keys when cryptography is not importable. Returns (private key text, public key line).
    """
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        if passphrase:
            raise SourceHostError("cryptography is needed for passphrase-protected keys")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path])
        with open(path) as handle:
            private = handle.read()
        with open(path + ".pub") as handle:
            return private, handle.read().strip()
    key = Ed25519PrivateKey.generate()
    encryption = (serialization.BestAvailableEncryption(passphrase.encode()) if passphrase
                  else serialization.NoEncryption())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                encryption).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode() + " " + comment
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(private)
    os.chmod(path, 0o600)
    _write(path + ".pub", public + "\n", 0o644)
    return private, public


# --------------------------------------------------------------------------- the host

@dataclass
class SourceHost:
    """A running source host. ``to_json()`` is what the CLI writes (see the module docstring)."""

    workdir: str
    user: str
    password: str
    port: int
    home: str
    docroot: str
    domain: str
    theme: str
    plugin: str
    client_key: str
    client_key_pub: str
    passphrase_key: str
    passphrase_key_pub: str
    key_passphrase: str
    known_hosts: str
    host_key_pub: str
    sshd_pid: int
    sshd_log: str
    db: dict = field(default_factory=dict)
    host: str = "127.0.0.1"
    session_path: str = ""
    tools: dict = field(default_factory=dict, repr=False)
    variants: list = field(default_factory=list)

    # -- convenience for clients ------------------------------------------------------------
    @property
    def docroot_rel(self):
        return os.path.relpath(self.docroot, self.home)

    def ssh_options(self):
        return ["-p", str(self.port), "-o", "UserKnownHostsFile=" + self.known_hosts,
                "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR"]

    def ssh_argv(self, command, key=None):
        """argv running ``command`` on the host with the OpenSSH client and a key (default: client_key)."""
        return ["ssh", "-i", key or self.client_key] + self.ssh_options() + [
            "%s@%s" % (self.user, self.host), command]

    def ssh(self, command, key=None, input=None, timeout=60, text=True):
        return subprocess.run(self.ssh_argv(command, key), input=input, capture_output=True, text=text,
                              timeout=timeout, check=False)

    def ansible_vars(self):
        return {"ansible_host": self.host, "ansible_port": self.port, "ansible_user": self.user,
                "ansible_ssh_private_key_file": self.client_key,
                "ansible_ssh_common_args": "-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes "
                                           "-o IdentitiesOnly=yes" % self.known_hosts,
                "ansible_python_interpreter": "/usr/bin/python3"}

    def to_json(self):
        data = asdict(self)
        data.pop("tools")
        data["docroot_rel"] = self.docroot_rel
        data["ansible"] = self.ansible_vars()
        return data

    def _pw(self):
        return pwd.getpwnam(self.user)

    # -- auth material ----------------------------------------------------------------------
    def authorize_key(self, public_key_line):
        """Append a public key line to the user's authorized_keys (idempotent)."""
        path = os.path.join(self.home, ".ssh", "authorized_keys")
        line = public_key_line.strip()
        with open(path) as handle:
            present = {entry.strip() for entry in handle}
        if line not in present:
            with open(path, "a") as handle:
                handle.write(line + "\n")

    def unauthorize_key(self, public_key_line):
        path = os.path.join(self.home, ".ssh", "authorized_keys")
        line = public_key_line.strip()
        with open(path) as handle:
            kept = [entry for entry in handle if entry.strip() != line]
        with open(path, "w") as handle:
            handle.writelines(kept)

    def set_password(self, password):
        """Set the unix password (hash made by openssl from stdin, handed to chpasswd -e on stdin)."""
        hashed = _run([self.tools.get("openssl", "openssl"), "passwd", "-6", "-stdin"],
                      input=password + "\n").stdout.strip()
        _run([self.tools.get("chpasswd", "chpasswd"), "-e"], input="%s:%s\n" % (self.user, hashed))
        self.password = password

    # -- failure variants -------------------------------------------------------------------
    def set_variant(self, name, active=True):
        """Switch a failure cause on or off without restarting anything.

        wp_cli_missing: ~/bin/wp is renamed away. rsync_missing: the sessions' PATH entry
        ``<workdir>/sys`` (a symlink to /usr/bin) points to a copy of /usr/bin made of symlinks minus
        rsync. docroot_missing: the docroot moves to ~/sites/blog, outside the common paths.
        """
        if name not in VARIANTS:
            raise ValueError("unknown variant %r (choose from %s)" % (name, ", ".join(VARIANTS)))
        if name == "wp_cli_missing":
            live, hidden = os.path.join(self.home, "bin", "wp"), os.path.join(self.home, "bin", ".wp.hidden")
            src, dst = (live, hidden) if active else (hidden, live)
            if os.path.lexists(src):
                os.replace(src, dst)
        elif name == "rsync_missing":
            target = _restricted_bin(self.workdir) if active else "/usr/bin"
            link = os.path.join(self.workdir, "sys")
            tmp = link + ".new"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.symlink(target, tmp)
            os.replace(tmp, link)
        elif name == "docroot_missing":
            live, away = self.docroot, os.path.join(self.home, "sites", "blog")
            src, dst = (live, away) if active else (away, live)
            if os.path.isdir(src):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.replace(src, dst)
                os.lchown(os.path.dirname(dst), self._pw().pw_uid, self._pw().pw_gid)
        if active and name not in self.variants:
            self.variants.append(name)
        if not active and name in self.variants:
            self.variants.remove(name)
        self._save_state()

    @property
    def moved_docroot(self):
        """Where the docroot lives while docroot_missing is active."""
        return os.path.join(self.home, "sites", "blog")

    @contextlib.contextmanager
    def variant(self, name):
        self.set_variant(name, True)
        try:
            yield self
        finally:
            self.set_variant(name, False)

    # -- lifecycle --------------------------------------------------------------------------
    def _save_state(self):
        path = os.path.join(self.workdir, STATE_FILE)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(self.to_json(), handle, indent=2)

    def stop(self, purge=False):
        stop_source_host(self.workdir, purge=purge, user=self.user)


def _restricted_bin(workdir):
    """A directory of symlinks to every program in /usr/bin (and a non-merged /bin) except rsync."""
    path = os.path.join(workdir, "sys-norsync")
    if os.path.isdir(path):
        return path
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp, mode=0o755)
    sources = ["/usr/bin"] + ([] if os.path.islink("/bin") else ["/bin"])
    for directory in sources:
        for name in os.listdir(directory):
            if name == "rsync" or name.startswith("rsync-") or os.path.lexists(os.path.join(tmp, name)):
                continue
            os.symlink(os.path.join(directory, name), os.path.join(tmp, name))
    os.replace(tmp, path)
    return path


def _session_path(home, workdir):
    # <workdir>/sys is the indirection that lets rsync_missing hide /usr/bin's rsync from this user only.
    parts = [os.path.join(home, "bin"), "/usr/local/bin", os.path.join(workdir, "sys"), "/usr/local/sbin",
             "/usr/sbin"]
    if not os.path.islink("/sbin"):
        parts.append("/sbin")
    if not os.path.islink("/bin"):
        parts.append("/bin")
    return ":".join(parts)


SSHD_CONFIG = """\
# Private sshd of the wpcloud.hosting test source host. Loopback only.
Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {pid_file}
AuthorizedKeysFile .ssh/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitEmptyPasswords no
UsePAM no
PermitRootLogin no
AllowUsers {user}
StrictModes yes
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PermitTunnel no
AcceptEnv none
PermitUserEnvironment no
# PATH for every session (exec, rsync --server, sftp): overrides sshd's compiled-in default.
SetEnv PATH={session_path}
Subsystem sftp internal-sftp
MaxStartups 50:30:100
LogLevel VERBOSE
{penalties}"""

# OpenSSH >= 9.8 penalises sources with failed logins by refusing their connections for a while; the
# tests fail logins on purpose from 127.0.0.1. Older sshd rejects the option, so it is probed.
PENALTIES = "PerSourcePenalties no\n"


def _site_files(docroot, db, domain, theme, plugin):
    """Write the WordPress-shaped docroot. Returns nothing; modes/symlinks are set here."""
    host_port = "127.0.0.1:%d" % db["port"]
    _write(os.path.join(docroot, "wp-config.php"), """<?php
/** Test source site for wpcloud.hosting (not a real WordPress install). */
define( 'DB_NAME', '{name}' );
define( 'DB_USER', '{user}' );
define( 'DB_PASSWORD', '{password}' );
define( 'DB_HOST', '{host}' );
define( 'DB_CHARSET', 'utf8mb4' );
define( 'DB_COLLATE', '' );
$table_prefix = 'wp_';
define( 'WP_DEBUG', false );
if ( ! defined( 'ABSPATH' ) ) {{
    define( 'ABSPATH', __DIR__ . '/' );
}}
""".format(name=db["name"], user=db["user"], password=db["password"], host=host_port), 0o600)
    _write(os.path.join(docroot, "index.php"),
           "<?php\n/** Front to the WordPress application. */\ndefine( 'WP_USE_THEMES', true );\n"
           "require __DIR__ . '/wp-blog-header.php';\n")
    _write(os.path.join(docroot, ".htaccess"),
           "# BEGIN WordPress\nRewriteEngine On\nRewriteRule ^index\\.php$ - [L]\n# END WordPress\n")
    _write(os.path.join(docroot, "wp-includes", "version.php"),
           "<?php\n$wp_version = '%s';\n$wp_db_version = 58975;\n" % WP_VERSION)
    themedir = os.path.join(docroot, "wp-content", "themes", theme)
    _write(os.path.join(themedir, "style.css"),
           "/*\nTheme Name: Twenty Source\nAuthor: wpcloud.hosting tests\nVersion: 1.0\n*/\n"
           "body { font-family: sans-serif; }\n")
    _write(os.path.join(themedir, "functions.php"),
           "<?php\nadd_action( 'wp_enqueue_scripts', function () {\n"
           "    wp_enqueue_style( '%s', get_stylesheet_uri() );\n} );\n" % theme)
    _write(os.path.join(docroot, "wp-content", "plugins", plugin, plugin + ".php"),
           "<?php\n/**\n * Plugin Name: Hello Source\n * Version: 0.1\n */\n"
           "add_filter( 'the_content', function ( $c ) { return $c . ' (from %s)'; } );\n" % domain)
    uploads = os.path.join(docroot, "wp-content", "uploads", "2026", "11")
    _write(os.path.join(uploads, "pixel.png"), PIXEL_PNG)
    _write(os.path.join(uploads, "random.bin"), secrets.token_bytes(4096))
    _write(os.path.join(uploads, "café menu.txt"), "Crème brûlée — 7 €\n")
    os.symlink("uploads/2026/11/pixel.png", os.path.join(docroot, "wp-content", "latest-upload.png"))
    os.makedirs(os.path.join(docroot, "wp-content", "upgrade"))                  # empty directory
    _write(os.path.join(docroot, "wp-content", "debug.log"), "PHP Notice: nothing to see\n", 0o600)
    private = os.path.join(docroot, "wp-content", "uploads", "private")
    _write(os.path.join(private, "report.csv"), "id,total\n1,42\n", 0o640)
    os.chmod(private, 0o750)


def _seed_sql(db, domain, password_hash):
    url = "http://" + domain
    widget = 'a:1:{i:2;a:2:{s:5:"title";s:5:"Links";s:4:"text";s:%d:"%s";}}'
    widget_text = "Visit %s/shop" % url
    widget = widget % (len(widget_text.encode()), widget_text)
    options = [("siteurl", url), ("home", url), ("blogname", "Source Blog"),
               ("admin_email", "admin@" + domain), ("template", DEFAULT_THEME),
               ("stylesheet", DEFAULT_THEME), ("active_plugins", 'a:1:{i:0;s:%d:"%s";}' % (
                   len("%s/%s.php" % (DEFAULT_PLUGIN, DEFAULT_PLUGIN)), "%s/%s.php" % (DEFAULT_PLUGIN, DEFAULT_PLUGIN))),
               ("widget_text", widget)]
    posts = [(1, "Hello from the source", "hello-source",
              "Welcome to <a href=\"%s/\">the source</a>. It's café time." % url),
             (2, "Second post", "second-post", "Line one\nLine two with a 'quote' and a \\ backslash."),
             (3, "About", "about", "About page at %s/about/" % url)]
    lines = [
        "CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;" % db["name"],
        "CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY %s;" % (db["user"], _sql_str(db["password"])),
        "CREATE USER '%s'@'localhost' IDENTIFIED BY %s;" % (db["user"], _sql_str(db["password"])),
        "GRANT ALL ON `%s`.* TO '%s'@'127.0.0.1';" % (db["name"], db["user"]),
        "GRANT ALL ON `%s`.* TO '%s'@'localhost';" % (db["name"], db["user"]),
        "USE `%s`;" % db["name"],
        "CREATE TABLE wp_options (option_id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, "
        "option_name varchar(191) NOT NULL UNIQUE, option_value longtext NOT NULL, "
        "autoload varchar(20) NOT NULL DEFAULT 'yes') ENGINE=InnoDB;",
        "CREATE TABLE wp_posts (ID bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, "
        "post_author bigint unsigned NOT NULL DEFAULT 0, post_date datetime NOT NULL, "
        "post_content longtext NOT NULL, post_title text NOT NULL, post_status varchar(20) NOT NULL "
        "DEFAULT 'publish', post_name varchar(200) NOT NULL, post_type varchar(20) NOT NULL DEFAULT 'post', "
        "guid varchar(255) NOT NULL) ENGINE=InnoDB;",
        "CREATE TABLE wp_users (ID bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, "
        "user_login varchar(60) NOT NULL, user_pass varchar(255) NOT NULL, user_nicename varchar(50) NOT NULL, "
        "user_email varchar(100) NOT NULL, user_url varchar(100) NOT NULL DEFAULT '', "
        "user_registered datetime NOT NULL, display_name varchar(250) NOT NULL) ENGINE=InnoDB;",
    ]
    for name, value in options:
        lines.append("INSERT INTO wp_options (option_name, option_value) VALUES (%s, %s);"
                     % (_sql_str(name), _sql_str(value)))
    for pid, title, slug, content in posts:
        lines.append("INSERT INTO wp_posts (ID, post_author, post_date, post_content, post_title, post_name, "
                     "guid) VALUES (%d, 1, '2026-11-0%d 10:00:00', %s, %s, %s, %s);"
                     % (pid, pid, _sql_str(content), _sql_str(title), _sql_str(slug),
                        _sql_str("%s/?p=%d" % (url, pid))))
    lines.append("INSERT INTO wp_users VALUES (1, 'admin', %s, 'admin', %s, %s, '2026-11-01 09:00:00', "
                 "'Site Admin');" % (_sql_str(password_hash), _sql_str("admin@" + domain), _sql_str(url)))
    return "\n".join(lines) + "\n"


def _start_mariadb(workdir, tools, port, owner):
    base = os.path.join(workdir, "mariadb")
    datadir = os.path.join(base, "data")
    os.makedirs(base, mode=0o755, exist_ok=True)
    owner_pw = pwd.getpwnam(owner)
    os.chown(base, owner_pw.pw_uid, owner_pw.pw_gid)
    # its own temporary directory: instances started at once by concurrent test runs shared /tmp, and
    # a bootstrap failed deleting its own temporary table ("Error on delete of '/tmp/#sql-temptable-…'")
    tmpdir = os.path.join(base, "tmp")
    os.makedirs(tmpdir, mode=0o700, exist_ok=True)
    os.chown(tmpdir, owner_pw.pw_uid, owner_pw.pw_gid)
    sock = os.path.join(base, "mysqld.sock")
    if len(sock) > 100:
        raise SourceHostError("work directory path too long for a unix socket: %s" % sock)
    _run([tools["mariadb-install-db"], "--no-defaults", "--datadir=" + datadir, "--user=" + owner,
          "--auth-root-authentication-method=socket", "--skip-test-db", "--tmpdir=" + tmpdir], timeout=120)
    log = os.path.join(base, "error.log")
    pid_file = os.path.join(base, "mariadbd.pid")
    argv = [tools["mariadbd"], "--no-defaults", "--datadir=" + datadir, "--socket=" + sock,
            "--port=%d" % port, "--bind-address=127.0.0.1", "--pid-file=" + pid_file, "--user=" + owner,
            "--tmpdir=" + tmpdir,
            "--log-error=" + log, "--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=16M",
            "--innodb-log-file-size=8M", "--performance-schema=OFF"]
    with open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(argv, stdin=devnull, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SourceHostError("mariadbd exited (%s); see %s" % (proc.returncode, log))
        ping = subprocess.run([tools["mariadb-admin"], "--no-defaults", "--socket=" + sock, "-u", "root",
                               "ping"], capture_output=True, check=False)
        if ping.returncode == 0:
            break
        time.sleep(0.1)
    else:
        raise SourceHostError("mariadbd did not answer within 30 s; see %s" % log)
    return {"port": port, "socket": sock, "pid": proc.pid, "pid_file": pid_file, "log": log,
            "datadir": datadir}


def start_source_host(workdir, port=0, user=None, password=None, domain=DEFAULT_DOMAIN,
                      docroot="public_html", db_port=0, theme=DEFAULT_THEME, plugin=DEFAULT_PLUGIN,
                      variants=()):
    """Create the user, site, database and sshd under ``workdir``; return a SourceHost.

    ``port``/``db_port`` 0 pick free high ports. ``user`` defaults to ``wpsrc`` plus 5 random hex
    characters. ``password`` defaults to a random one (available as ``host.password``). ``variants``
    starts with failure causes switched on (see SourceHost.set_variant). On any error everything
    created so far is torn down again.
    """
    tools = check_prerequisites()
    workdir = os.path.abspath(workdir)
    os.makedirs(workdir, exist_ok=True)
    os.chmod(workdir, 0o755)
    _check_traversable(workdir)
    if os.path.exists(os.path.join(workdir, STATE_FILE)):
        raise SourceHostError("%s already holds a source host; stop it first" % workdir)
    user = user or "wpsrc" + secrets.token_hex(3)[:5]
    password = password or secrets.token_urlsafe(12)
    home = os.path.join(workdir, "home", user)
    state = {"workdir": workdir, "user": user}
    _write(os.path.join(workdir, STATE_FILE), json.dumps(state), 0o600)    # lets stop() clean up a half start
    try:
        return _start(tools, workdir, port, user, password, domain, docroot, db_port, theme, plugin, home,
                      variants)
    except BaseException:
        with contextlib.suppress(Exception):
            stop_source_host(workdir, user=user)
        raise


def _start(tools, workdir, port, user, password, domain, docroot, db_port, theme, plugin, home, variants):
    with contextlib.suppress(KeyError):
        pwd.getpwnam(user)
        raise SourceHostError("user %s already exists" % user)
    os.makedirs(os.path.dirname(home), mode=0o755, exist_ok=True)
    _run([tools["useradd"], "--create-home", "--home-dir", home, "--shell", "/bin/bash",
          "--comment", "wpcloud.hosting test source", user])
    _run(["usermod", "-p", "*", user])          # not '!' (locked): sshd without PAM refuses locked accounts
    entry = pwd.getpwnam(user)
    os.chmod(home, 0o711)

    # Session environment: the PATH (set by sshd's SetEnv) and the sys -> /usr/bin indirection.
    os.symlink("/usr/bin", os.path.join(workdir, "sys"))
    session_path = _session_path(home, workdir)

    # Database.
    db = {"name": "wp_" + user, "user": user, "password": secrets.token_urlsafe(12),
          "host": "127.0.0.1"}
    db.update(_start_mariadb(workdir, tools, db_port or free_port(), "mysql" if _has_user("mysql") else user))

    # Site files + wp stand-in.
    docroot_path = docroot if os.path.isabs(docroot) else os.path.join(home, docroot)
    _site_files(docroot_path, db, domain, theme, plugin)
    with open(os.path.join(HERE, "wp-standin.php")) as handle:
        wp_source = handle.read()
    _write(os.path.join(home, "bin", "wp"), "#!%s\n%s" % (tools["php"], wp_source), 0o755)
    _write(os.path.join(home, ".bashrc"), "# wpcloud.hosting test source: PATH comes from sshd (SetEnv)\n")
    os.makedirs(os.path.join(home, ".ssh"), mode=0o700, exist_ok=True)
    keydir = os.path.join(workdir, "keys")
    os.makedirs(keydir, mode=0o700, exist_ok=True)
    client_pub = make_keypair(os.path.join(keydir, "client_ed25519"), comment="client@" + user)[1]
    key_passphrase = secrets.token_urlsafe(9)
    pass_pub = make_keypair(os.path.join(keydir, "client_passphrase_ed25519"), passphrase=key_passphrase,
                            comment="client-passphrase@" + user)[1]
    _write(os.path.join(home, ".ssh", "authorized_keys"), client_pub + "\n" + pass_pub + "\n", 0o600)
    _chown_tree(home, entry.pw_uid, entry.pw_gid)
    if not docroot_path.startswith(home + os.sep):
        _chown_tree(docroot_path, entry.pw_uid, entry.pw_gid)

    # Seed the database (as MariaDB's root over the socket; SQL on stdin).
    _run([tools["mariadb"], "--no-defaults", "--socket=" + db["socket"], "-u", "root"],
         input=_seed_sql(db, domain, "$P$B" + secrets.token_hex(15)))

    # sshd.
    sshdir = os.path.join(workdir, "sshd")
    os.makedirs(sshdir, mode=0o700, exist_ok=True)
    host_key = os.path.join(sshdir, "host_ed25519")
    _run([tools["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-C", "source-host", "-f", host_key])
    with open(host_key + ".pub") as handle:
        host_key_pub = " ".join(handle.read().split()[:2])
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    sshd_log = os.path.join(sshdir, "sshd.log")
    pid_file = os.path.join(sshdir, "sshd.pid")
    config_path = os.path.join(sshdir, "sshd_config")
    sshd_pid = None
    for attempt in range(5):
        sshd_port = port or free_port()
        for penalties in (PENALTIES, ""):
            _write(config_path, SSHD_CONFIG.format(port=sshd_port, host_key=host_key, pid_file=pid_file, user=user,
                                                   session_path=session_path, penalties=penalties), 0o600)
            probe = _run([tools["sshd"], "-t", "-f", config_path], check=False)
            if probe.returncode == 0:
                break
        else:
            raise SourceHostError("sshd rejects its configuration: %s" % probe.stderr.strip())
        with open(os.devnull, "rb") as devnull:
            proc = subprocess.Popen([tools["sshd"], "-D", "-f", config_path, "-E", sshd_log], stdin=devnull,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        if _wait_port(sshd_port, 10, proc):
            sshd_pid = proc.pid
            break
        if proc.poll() is None:
            proc.kill()
        if port:
            break
    if sshd_pid is None:
        raise SourceHostError("sshd did not start; see %s" % sshd_log)
    known_hosts = os.path.join(workdir, "known_hosts")
    _write(known_hosts, "[127.0.0.1]:%d %s\n" % (sshd_port, host_key_pub))

    host = SourceHost(
        workdir=workdir, user=user, password="", port=sshd_port, home=home, docroot=docroot_path,
        domain=domain, theme=theme, plugin=plugin,
        client_key=os.path.join(keydir, "client_ed25519"), client_key_pub=client_pub,
        passphrase_key=os.path.join(keydir, "client_passphrase_ed25519"), passphrase_key_pub=pass_pub,
        key_passphrase=key_passphrase, known_hosts=known_hosts, host_key_pub=host_key_pub,
        sshd_pid=sshd_pid, sshd_log=sshd_log, db=db, session_path=session_path, tools=tools)
    host.set_password(password)
    host._save_state()
    for name in variants:
        host.set_variant(name, True)
    return host


def _has_user(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def load_source_host(workdir):
    """Rebuild a SourceHost from ``<workdir>/source-host.json`` (written by start)."""
    with open(os.path.join(workdir, STATE_FILE)) as handle:
        data = json.load(handle)
    for extra in ("docroot_rel", "ansible"):
        data.pop(extra, None)
    return SourceHost(tools=check_prerequisites(), **data)


def _kill(pid, timeout=10.0):
    if not pid:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # reap if it is our child; otherwise just probe
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _read_pid(path):
    with contextlib.suppress(OSError, ValueError):
        with open(path) as handle:
            return int(handle.read().split()[0])
    return None


def _user_pids(uid):
    """Processes running as the dedicated source user (its SSH sessions); nothing else runs as it."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.stat("/proc/" + entry).st_uid == uid:
                pids.append(int(entry))
    return pids


def stop_source_host(workdir, purge=False, user=None):
    """Stop sshd and mariadbd (by pid), end the user's sessions, remove the user and its home.

    Tolerates a half-started or already stopped host. ``purge`` also removes the work directory
    (logs included); otherwise the logs stay for inspection.
    """
    workdir = os.path.abspath(workdir)
    state = {}
    with contextlib.suppress(OSError, ValueError):
        with open(os.path.join(workdir, STATE_FILE)) as handle:
            state = json.load(handle)
    user = user or state.get("user")
    _kill(state.get("sshd_pid") or _read_pid(os.path.join(workdir, "sshd", "sshd.pid")))
    db = state.get("db") or {}
    _kill(db.get("pid") or _read_pid(os.path.join(workdir, "mariadb", "mariadbd.pid")), timeout=20)
    entry = None
    if user:
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(user)
    # Only ever remove a user whose home is below this work directory: one we created.
    if entry is not None and os.path.abspath(entry.pw_dir).startswith(workdir + os.sep):
        for pid in _user_pids(entry.pw_uid):
            _kill(pid, timeout=2)
        proc = subprocess.run(["userdel", "--remove", user], capture_output=True, text=True, check=False)
        if proc.returncode not in (0, 12) and _has_user(user):   # 12: home could not be removed
            subprocess.run(["userdel", "--force", "--remove", user], capture_output=True, check=False)
    home = state.get("home") or (os.path.join(workdir, "home", user) if user else None)
    if home and os.path.isdir(home):
        shutil.rmtree(home, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(workdir, STATE_FILE))
    if purge:
        shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------- CLI

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a source host and write its description as JSON")
    start.add_argument("--workdir", required=True)
    start.add_argument("--json-out", required=True, help="file for the JSON description (mode 0600)")
    start.add_argument("--port", type=int, default=0)
    start.add_argument("--db-port", type=int, default=0)
    start.add_argument("--user")
    start.add_argument("--domain", default=DEFAULT_DOMAIN)
    start.add_argument("--docroot", default="public_html", help="relative to the user's home, or absolute")
    start.add_argument("--variant", action="append", default=[], choices=VARIANTS)
    stop = sub.add_parser("stop", help="stop the source host in a work directory and remove its user")
    stop.add_argument("--workdir", required=True)
    stop.add_argument("--purge", action="store_true", help="also remove the work directory")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            host = start_source_host(args.workdir, port=args.port, user=args.user, domain=args.domain,
                                     docroot=args.docroot, db_port=args.db_port, variants=args.variant)
            fd = os.open(args.json_out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                json.dump(host.to_json(), handle, indent=2)
                handle.write("\n")
            print("source host %s@127.0.0.1:%d (docroot %s) -> %s"
                  % (host.user, host.port, host.docroot, args.json_out))
        else:
            stop_source_host(args.workdir, purge=args.purge)
    except SourceHostError as exc:
        print("source_host: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
