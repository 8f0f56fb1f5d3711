#!/usr/bin/env python
"""Write the offline stand-in for ansible-test's pip bootstrap script.

ansible-test creates every venv without pip and then runs get-pip.py, which it downloads from
Ansible's CI-files server (unreachable here) into ~/.ansible/test/cache/get_pip_<version>.py.
Pre-seeding that path with a script that installs pip from ensurepip + PyPI avoids the download.
Run with the venv's Python whose ansible-core should be served:  .venv/bin/python tests/utils/seed_get_pip.py
"""
from __future__ import annotations

import os
import re
import sys

STAND_IN = '''\
# Offline stand-in for get-pip.py, written by wpcloud.hosting's tests/utils/seed_get_pip.py.
# ansible-test calls it as: python get_pip.py [pip options] pip==X [setuptools==Y wheel==Z]
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'], stdout=subprocess.DEVNULL)
subprocess.check_call([sys.executable, '-m', 'pip', 'install', '--upgrade'] + args)
'''


def pip_version() -> str:
    """Return the pip version ansible-test bootstraps, from its python_requirements.py."""
    import ansible_test  # pylint: disable=import-outside-toplevel

    path = os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')
    with open(path, encoding='utf-8') as source:
        text = source.read()
    match = re.search(r"default_packages\s*=\s*dict\(\s*pip='([^']+)'", text)
    if not match:
        sys.exit(f'seed_get_pip: cannot find the pip version in {path}')
    return match.group(1)


def main() -> None:
    """Write the stand-in unless an identical one is already there."""
    version = pip_version()
    cache = os.path.expanduser('~/.ansible/test/cache')
    target = os.path.join(cache, 'get_pip_%s.py' % version.replace('.', '_'))
    if os.path.exists(target):
        with open(target, encoding='utf-8') as current:
            if current.read() == STAND_IN:
                return
    os.makedirs(cache, exist_ok=True)
    with open(target, 'w', encoding='utf-8') as out:
        out.write(STAND_IN)
    print(f'seed_get_pip: wrote {target}')


if __name__ == '__main__':
    main()
