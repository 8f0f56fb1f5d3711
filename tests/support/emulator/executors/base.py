"""The executor interface of the emulator (tests/support/emulator/README.md, "Executors").

The server calls these methods in a worker thread per operation, so they may block for as long as
the operation takes; the HTTP side keeps answering meanwhile.
"""


class Executor:
    """Decides the outcome of a preflight and a migration run.

    ``migration`` is the emulator's full record (a copy), secrets included: ``remote-pass``,
    ``ssh-id``, ``ssh-id-pass`` and ``generated-ssh-id`` live under ``migration["args"]`` the way
    they were sent (``generated-ssh-id`` is the private half of a generated identity, OpenSSH PEM);
    for convenience every ``args`` entry is also copied to the top level (``migration["remote-host"]``).
    ``migration["auth"]`` is ``password``, ``key``, ``key-passphrase`` or ``generated``.
    ``site`` has ``id``, ``domain`` and ``storage`` (created before ``run`` is called).
    ``ticket.add_message(text)`` appends one progress line to the response ticket.
    """

    def __init__(self, options=None):
        self.options = dict(options or {})

    def preflight(self, migration, ticket):  # pragma: no cover - interface
        """Write progress with ticket.add_message(text); return True on success."""
        raise NotImplementedError

    def run(self, migration, site, ticket):  # pragma: no cover - interface
        """Copy the source into site["storage"] (files/ and db.sql); return True on success."""
        raise NotImplementedError

    def configure(self, config):
        """Take new settings from POST /_emulator/executor; executors without settings refuse."""
        raise ValueError("the %s executor takes no runtime configuration" % type(self).__name__)
