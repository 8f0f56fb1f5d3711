"""Ticket message texts shared by the executors (one place, so scripted and SSH runs read alike).

Clients tell the preflight failure causes apart from these lines (spec 4.5 step 4), so the texts are
part of the emulator contract (tests/support/emulator/README.md): ``Permission denied (publickey,password).``,
``Could not locate a WordPress installation (wp-config.php) in: ...``, ``wp: command not found``,
``rsync: command not found``. They mimic what OpenSSH, bash, WP-CLI and rsync print. The scripted
executor currently spells the same texts inline; tests/support/tests/test_ssh_executor.py checks that both
agree. Never put a secret (password, key, passphrase) into any of these.
"""

COMMON_DOCROOTS = ("public_html", "htdocs", "www", "/var/www/html")
COMMON_DOCROOTS_TEXT = ", ".join(COMMON_DOCROOTS)


# -- connection / authentication
def connecting(user, host, port):
    return "Connecting to %s@%s:%s" % (user, host, port)


def authenticated(host, port, method):
    """method: "password" or "publickey" (OpenSSH's names)."""
    return "Authenticated to %s ([%s]:%s) using \"%s\"." % (host, host, port, method)


def permission_denied(user, host):
    return "%s@%s: Permission denied (publickey,password)." % (user, host)


def auth_failed(host, user):
    return "Preflight failed: could not authenticate to %s as %s." % (host, user)


def key_not_loaded(reason):
    """reason: "incorrect passphrase supplied to decrypt private key" or "invalid format"."""
    return "Load key \"ssh-id\": %s" % reason


def connect_error(host, port, reason):
    return "ssh: connect to host %s port %s: %s" % (host, port, reason)


def connect_failed(host, port):
    return "Preflight failed: could not connect to %s port %s." % (host, port)


def host_key_changed(host, port):
    return ("WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! The host key of [%s]:%s differs from the "
            "one seen before. Host key verification failed." % (host, port))


# -- document root
def looking_for(where):
    return "Looking for a WordPress installation in: %s" % where


def docroot_missing(where):
    return "Could not locate a WordPress installation (wp-config.php) in: %s" % where


DOCROOT_MISSING_HINT = "Preflight failed: set remote-docroot to the directory that holds wp-config.php."


def docroot_found(docroot):
    return "Found WordPress installation in %s" % docroot


# -- WP-CLI
WP_NOT_FOUND = "bash: line 1: wp: command not found"
WP_CLI_MISSING = "Preflight failed: WP-CLI is not available on the remote host."


def wp_cli_found(cli_version, wp_version):
    return "WP-CLI %s found; WordPress %s, database reachable" % (cli_version, wp_version)


WP_DB_UNREACHABLE = "Preflight failed: WP-CLI could not reach the WordPress database."

# -- rsync
RSYNC_NOT_FOUND = "bash: line 1: rsync: command not found"
RSYNC_MISSING = "Preflight failed: rsync is not installed on the remote host."
PREFLIGHT_PASSED = "Preflight checks passed."


# -- migration run
def starting(user, host, docroot, site_id, domain):
    return "Starting migration from %s@%s:%s to site %s (%s)" % (user, host, docroot, site_id, domain)


def exporting(host):
    return "Exporting database on %s" % host


def export_complete(tables, size_text):
    return "Database export complete: %d tables, %s" % (tables, size_text)


EXPORT_FAILED = "Migration failed: the database export did not complete."


def syncing(percent):
    return "Syncing files: %d%%" % percent


FILE_COPY_FAILED = "Migration failed: the file copy did not complete."
IMPORTING = "Importing database"


def replacing(old, new):
    return "Replacing %s with %s in the database" % (old, new)


MIGRATION_COMPLETE = "Migration complete."


def human_size(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return ("%d %s" % (size, unit)) if unit == "bytes" else ("%.1f %s" % (size, unit))
        size /= 1024.0
    return "%d bytes" % size  # pragma: no cover
