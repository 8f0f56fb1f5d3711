# -*- coding: utf-8 -*-
# Copyright (c) wpcloud.hosting contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one way the collection keeps secrets out of what it shows: one placeholder, one function.

Note that this module util is PRIVATE to the collection. It can have breaking changes at any time.

Every path goes through ``mask``: a task's result and warnings on both runners (the controller action
and the classic module), the client's error texts, progress lines, and migration records (whose
credential fields are replaced whole, whatever the service put there). The placeholder is the one
Ansible itself shows for a no_log value inside a text.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from urllib.parse import quote

MASK = "********"
# A secret is masked wherever its text occurs, as Ansible masks a no_log value: a very short one is masked in words
# that have nothing to do with it (a one-character password "e" shows "old-s********rv********r.********xampl********").
# Below this length the task warns (short_secret_warning), naming the option, never the value.
SHORT_SECRET = 6


def mask(value, secrets=(), fields=()):
    """``value`` fit to show: in every text (at any depth of lists and dicts) each of ``secrets``, and its
    URL-encoded form, becomes MASK; so does a number written like one, and the value of every key named
    in ``fields``. Other values, and values without a secret, come back as they are."""
    texts = set()
    for secret in secrets:
        if secret not in (None, ""):
            texts.update((str(secret), quote(str(secret), safe="")))
    if not texts and not fields:
        return value
    return _mask(value, sorted(texts, key=len, reverse=True), frozenset(fields))


def _mask(value, texts, fields):
    if isinstance(value, str):
        for text in texts:
            if text in value:
                value = value.replace(text, MASK)
        return value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return MASK if str(value) in texts else value
    if isinstance(value, Mapping):
        return dict((key, MASK if key in fields else _mask(item, texts, fields)) for key, item in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_mask(item, texts, fields) for item in value]
    return value


class Secrets(object):
    """The texts one task must never show: its no_log values and any it learns later. Thread-safe."""

    def __init__(self, values=()):
        self._values = set()
        self._lock = threading.Lock()
        for value in values:
            self.add(value)

    def add(self, value):
        if value not in (None, ""):
            with self._lock:
                self._values.add(str(value))

    def mask(self, value, fields=()):
        with self._lock:
            values = tuple(self._values)
        return mask(value, values, fields)


def no_log_values(argument_spec, params):
    """The texts of every no_log option that ``params`` gives, in suboptions too (as AnsibleModule
    collects them), for a Secrets of the task."""
    found = set()
    for name, option in argument_spec.items():
        value = params.get(name) if isinstance(params, Mapping) else None
        if value is None:
            continue
        if option.get("no_log"):
            found.update(_leaves(value))
        if option.get("options"):
            for item in (value if isinstance(value, list) else [value]):
                if isinstance(item, Mapping):
                    found.update(no_log_values(option["options"], item))
    return found


def _leaves(value):
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return set(text for item in value for text in _leaves(item))
    if value is None or isinstance(value, bool) or value == "":
        return set()
    return set([str(value)])


def short_secret_warning(name):
    """What a too short secret does to the output, for the option or variable ``name``."""
    return ("%s is shorter than %d characters: the output shows %s wherever its text occurs, also inside words that "
            "have nothing to do with it (a one-character secret masks that character everywhere). A real password or "
            "key is longer." % (name, SHORT_SECRET, MASK))


def short_secret_warnings(named):
    """One warning per name of ``named`` (``{name: texts}``) with a text shorter than SHORT_SECRET, in name order."""
    return [short_secret_warning(name) for name in sorted(named)
            if any(len(str(text)) < SHORT_SECRET for text in named[name] or ())]


def short_no_log_options(argument_spec, params, prefix=""):
    """The names of the no_log options whose value in ``params`` is shorter than SHORT_SECRET (suboptions of a list
    as ``option[].suboption``), in name order."""
    found = set()
    for name, option in argument_spec.items():
        value = params.get(name) if isinstance(params, Mapping) else None
        if value is None:
            continue
        if option.get("no_log") and any(len(text) < SHORT_SECRET for text in _leaves(value)):
            found.add(prefix + name)
        if option.get("options"):
            inner = prefix + name + ("[]." if isinstance(value, list) else ".")
            for item in (value if isinstance(value, list) else [value]):
                found.update(short_no_log_options(option["options"], item, inner))
    return sorted(found)
