"""Release the emulator's held runs once the migration given has been read after the request-log mark.

Started in the background (async) before a task that must find a run still active, whatever the
machine's load: the run is held (scripted ``hold: true``) until that task has read it, then released,
so that the task follows it to its end.

    python release_when_read.py EMULATOR_URL CA_PATH MARK MIGRATION_ID
"""

import json
import ssl
import sys
import time
import urllib.request


def hook(base, context, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + "/_emulator/" + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def main(base, ca_path, mark, migration_id):
    context = ssl.create_default_context(cafile=ca_path)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        log = hook(base, context, "GET", "requests?since=%d" % int(mark))["requests"]
        if any(e["endpoint"] == "migration.get" and e["path"].rstrip("/").endswith("/%s" % migration_id)
               for e in log if e["seq"] > int(mark)):
            break
        time.sleep(0.2)
    hook(base, context, "POST", "executor/release", {})


if __name__ == "__main__":
    main(*sys.argv[1:5])
