"""Scripted executor: outcomes and durations per remote host, no network.

Configuration (config file key ``executor`` and ``POST /_emulator/executor``)::

    {"default": {"preflight": {"outcome": "success", "duration": 0.5},
                 "run": {"outcome": "success", "duration": 1.0}},
     "hosts": {"src1.example": {"preflight": {"outcome": "auth_failed", "duration": 2}}}}

A host entry overrides the default per operation; missing fields fall back to the default. The
messages mimic what a real SSH/rsync/WP-CLI pull prints, so clients can be tested on telling the
failure kinds apart from the ticket text (spec 4.5 step 4).
"""

import copy
import os
import shutil
import threading
import time

from executors.base import Executor

PREFLIGHT_OUTCOMES = ("success", "auth_failed", "docroot_missing", "wp_cli_missing", "rsync_missing")
RUN_OUTCOMES = ("success", "failure")
COMMON_DOCROOTS = "public_html, htdocs, www, /var/www/html"

DEFAULT_CONFIG = {
    "default": {"preflight": {"outcome": "success", "duration": 0.5},
                "run": {"outcome": "success", "duration": 1.0}},
    "hosts": {},
}


def _validate_op(op, value, where):
    if not isinstance(value, dict):
        raise ValueError("%s.%s must be an object" % (where, op))
    allowed = PREFLIGHT_OUTCOMES if op == "preflight" else RUN_OUTCOMES
    unknown = set(value) - {"outcome", "duration"}
    if unknown:
        raise ValueError("%s.%s: unknown fields %s" % (where, op, ", ".join(sorted(unknown))))
    if "outcome" in value and value["outcome"] not in allowed:
        raise ValueError("%s.%s.outcome must be one of %s" % (where, op, ", ".join(allowed)))
    if "duration" in value:
        duration = value["duration"]
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0:
            raise ValueError("%s.%s.duration must be a number of seconds >= 0" % (where, op))


def normalize_config(config):
    """Validate a scripted configuration and fill in the defaults; raises ValueError."""
    config = copy.deepcopy(config or {})
    if not isinstance(config, dict) or set(config) - {"default", "hosts"}:
        raise ValueError("executor configuration takes only 'default' and 'hosts'")
    result = copy.deepcopy(DEFAULT_CONFIG)
    default = config.get("default") or {}
    if not isinstance(default, dict) or set(default) - {"preflight", "run"}:
        raise ValueError("'default' takes only 'preflight' and 'run'")
    for op, value in default.items():
        _validate_op(op, value, "default")
        result["default"][op].update(value)
    hosts = config.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise ValueError("'hosts' must be an object keyed by remote host")
    for host, entry in hosts.items():
        if not isinstance(entry, dict) or set(entry) - {"preflight", "run"}:
            raise ValueError("hosts.%s takes only 'preflight' and 'run'" % host)
        for op, value in entry.items():
            _validate_op(op, value, "hosts.%s" % host)
        result["hosts"][host.lower()] = copy.deepcopy(entry)
    return result


class ScriptedExecutor(Executor):
    """Plays back canned message sequences spread evenly over the configured duration."""

    def __init__(self, options=None):
        super().__init__(options)
        self._lock = threading.Lock()
        self._config = normalize_config(self.options.get("config"))

    def configure(self, config):
        config = normalize_config(config)
        with self._lock:
            self._config = config
        return copy.deepcopy(config)

    @property
    def config(self):
        with self._lock:
            return copy.deepcopy(self._config)

    def _plan(self, host, op):
        with self._lock:
            plan = dict(self._config["default"][op])
            plan.update(self._config["hosts"].get((host or "").lower(), {}).get(op, {}))
        return plan["outcome"], float(plan["duration"])

    @staticmethod
    def _play(ticket, lines, duration):
        # Spread the lines over the duration so pollers see response_count grow.
        pause = duration / len(lines) if lines else 0
        for line in lines:
            time.sleep(pause)
            ticket.add_message(line)

    def preflight(self, migration, ticket):
        args = migration["args"]
        host, user, port = args["remote-host"], args["remote-user"], args.get("remote-port", 22)
        outcome, duration = self._plan(host, "preflight")
        method = {"password": "password", "generated": "publickey", "key": "publickey",
                  "key-passphrase": "publickey"}.get(migration.get("auth"), "publickey")
        docroot = args.get("remote-docroot") or ""
        connect = "Connecting to %s@%s:%s" % (user, host, port)
        authed = "Authenticated to %s ([%s]:%s) using \"%s\"." % (host, host, port, method)
        lines = [connect]
        if outcome == "auth_failed":
            lines += ["%s@%s: Permission denied (publickey,password)." % (user, host),
                      "Preflight failed: could not authenticate to %s as %s." % (host, user)]
        else:
            lines.append(authed)
            lines.append("Looking for a WordPress installation in: %s" % (docroot or COMMON_DOCROOTS))
            if outcome == "docroot_missing":
                lines += ["Could not locate a WordPress installation (wp-config.php) in: %s"
                          % (docroot or COMMON_DOCROOTS),
                          "Preflight failed: set remote-docroot to the directory that holds wp-config.php."]
            else:
                found = docroot or "public_html"
                lines.append("Found WordPress installation in %s" % found)
                if outcome == "wp_cli_missing":
                    lines += ["bash: line 1: wp: command not found",
                              "Preflight failed: WP-CLI is not available on the remote host."]
                else:
                    lines.append("WP-CLI 2.11.0 found; WordPress 6.8.3, database reachable")
                    if outcome == "rsync_missing":
                        lines += ["bash: line 1: rsync: command not found",
                                  "Preflight failed: rsync is not installed on the remote host."]
                    else:
                        lines += ["rsync  version 3.2.7  protocol version 31",
                                  "Preflight checks passed."]
        self._play(ticket, lines, duration)
        return outcome == "success"

    def run(self, migration, site, ticket):
        args = migration["args"]
        host, user = args["remote-host"], args["remote-user"]
        outcome, duration = self._plan(host, "run")
        source = args.get("remote-docroot") or "public_html"
        lines = ["Starting migration from %s@%s:%s to site %s (%s)"
                 % (user, host, source, site["id"], site["domain"]),
                 "Exporting database on %s" % host,
                 "Database export complete: 12 tables, 1.2 MB",
                 "Syncing files: 25%", "Syncing files: 50%"]
        if outcome == "failure":
            lines += ["rsync: [receiver] write failed on \"wp-content/uploads/2024/archive.zip\": "
                      "No space left on device (28)",
                      "rsync error: error in file IO (code 11) at receiver.c(381) [receiver=3.2.7]",
                      "Migration failed: the file copy did not complete."]
            self._play(ticket, lines, duration)
            return False
        lines += ["Syncing files: 75%", "Syncing files: 100%", "Importing database"]
        if args.get("remote-domain"):
            lines.append("Replacing %s with %s in the database" % (args["remote-domain"], site["domain"]))
        lines.append("Migration complete.")
        self._play(ticket, lines[:-1], duration)
        self._write_storage(migration, site)
        ticket.add_message(lines[-1])
        return True

    @staticmethod
    def _write_storage(migration, site):
        # A run overwrites the destination entirely (spec 4.5 step 6): not incremental.
        storage = site["storage"]
        files = os.path.join(storage, "files")
        shutil.rmtree(files, ignore_errors=True)
        os.makedirs(files, exist_ok=True)
        args = migration["args"]
        with open(os.path.join(files, "index.php"), "w", encoding="utf-8") as handle:
            handle.write("<?php\n// Scripted copy of %s\nrequire __DIR__ . '/wp-blog-header.php';\n"
                         % args["remote-host"])
        with open(os.path.join(files, "wp-config.php"), "w", encoding="utf-8") as handle:
            handle.write("<?php\n// migrated by the scripted executor (migration %s)\n" % migration["id"])
        with open(os.path.join(storage, "db.sql"), "w", encoding="utf-8") as handle:
            handle.write("-- scripted export of %s, migration %s\nCREATE TABLE wp_options (option_name "
                         "varchar(191), option_value longtext);\n" % (args["remote-host"], migration["id"]))
