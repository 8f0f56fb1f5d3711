"""Readings of the service other than ours: switches that make the emulator answer the way the owner's
panel or a public SDK suggests the live service may (issue 23; docs/api-choices.md "Variants").

Every switch defaults to today's behaviour. Set them at start (``--variant NAME=VALUE``, repeatable, or
the config key ``variants``) or at run time (``POST /_emulator/variants``); ``POST /_emulator/reset``
restores the values the emulator started with.

Standard library only.
"""

# name -> (default, allowed values, what it means). ``job_words`` also takes "SUCCESS/FAILURE".
SWITCHES = {
    "bad_key_status": ("403", ("403", "401"),
                       "status of a missing or wrong API key (sites of another client stay 403)"),
    "paging": ("honour", ("honour", "ignore", "refuse"),
               "get-sites limit/after: honoured; ignored (the whole list on every call); refused (400)"),
    "list_allow_key": ("listed", ("listed", "refused", "dropped"),
                       "allow_site_migration as a get-sites meta segment: a column; refused (400); "
                       "accepted but left out of every entry"),
    "create_allow_meta": ("kept", ("kept", "dropped"),
                          "create-site's meta[allow_site_migration]: sets the flag; ignored"),
    "job_words": ("doc", ("doc", "wpconcierge"),
                  "the final words of a job: success/failure (docs); done/failed (the PHP SDK's poller); "
                  "or any SUCCESS/FAILURE pair, e.g. Completed/Error"),
}
JOB_WORD_PRESETS = {"doc": ("success", "failure"), "wpconcierge": ("done", "failed")}


def _check(name, value):
    if name not in SWITCHES:
        raise ValueError("unknown variant %r (one of %s)" % (name, ", ".join(sorted(SWITCHES))))
    value = str(value).strip()
    allowed = SWITCHES[name][1]
    if value in allowed:
        return value
    if name == "job_words" and value.count("/") == 1 and all(part.strip() for part in value.split("/")):
        return value
    raise ValueError("variant %s takes %s%s, not %r" % (
        name, " | ".join(allowed), " | SUCCESS/FAILURE" if name == "job_words" else "", value))


def parse_pairs(pairs):
    """``["paging=ignore", ...]`` (the command line) as a dict, checked."""
    values = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep:
            raise ValueError("--variant takes NAME=VALUE, not %r" % pair)
        values[name.strip()] = _check(name.strip(), value)
    return values


class Variants:
    """The current switches (read by the service and the HTTP layer without a lock: each is one string)."""

    def __init__(self, start=None):
        self.start = dict((name, _check(name, value)) for name, value in (start or {}).items())
        self.values = {}
        self.reset()

    def reset(self):
        self.values = dict((name, spec[0]) for name, spec in SWITCHES.items())
        self.values.update(self.start)

    def update(self, given):
        checked = dict((name, _check(name, value)) for name, value in given.items())
        self.values.update(checked)
        return self.view()

    def view(self):
        return dict(self.values)

    def __getitem__(self, name):
        return self.values[name]

    @property
    def bad_key_status(self):
        return int(self.values["bad_key_status"])

    def job_word(self, status):
        """The word a job's status is shown with: the final ones renamed, queued and running as they are."""
        words = self.values["job_words"]
        success, failure = JOB_WORD_PRESETS.get(words) or tuple(part.strip() for part in words.split("/"))
        return {"success": success, "failure": failure}.get(status, status)
