"""5. Every accepted webhook is processed at least once, even if the whole process tree dies: the soak.

The issue's experiment, twenty times (test_rel_webhook_crash.py has the setting, and one kill at each
point in `make test`): a burst of 4 signed deliveries, slow playbooks, a SIGKILL of the whole process
tree at a random point stratified over the kill window, a restart, the service's retries, the wait until
every accepted delivery's playbook has run to its acknowledgement. Most of its 10-15 minutes is
ansible-rulebook restarting. Run by `make soak` (with the final canary scan), not by `make test`: every
test here is marked ``soak``, which tests/reliability/conftest.py leaves out unless pytest gets --soak.

Figures (docs/reliability.md, section 5): lost deliveries (must be 0), playbooks run again, time to
recover (from the restart until the last accepted delivery of the repetition is acknowledged), where
the kills landed.
"""

from __future__ import annotations

import random

import pytest

import reliability_support as rs
import webhook_harness as wh

pytestmark = pytest.mark.soak

KEY = "crash-suite-key-3b8e1d6f0a2c4e7b9d5f"
REPETITIONS = 20
BURST = 4
KILL_WINDOW = 10.0        # seconds after the burst starts; about the time its four playbooks take


@pytest.fixture(scope="module")
def crashes(rel_dir):
    wh.rulebook_bin()
    out = rel_dir / "out" / "webhook-crash"
    out.mkdir(parents=True)
    rng = random.Random(16)
    points = [(n + rng.random()) * KILL_WINDOW / REPETITIONS for n in range(REPETITIONS)]
    rng.shuffle(points)
    experiment = wh.CrashExperiment(out, KEY, burst=BURST, slow=0.1, gap=0.25, kill_window=KILL_WINDOW,
                                    seed=16).start()
    summary = rs.run_crash_experiment("webhook crash suite", experiment, [{"kill_at": p} for p in points])
    return experiment, summary


def test_no_accepted_delivery_is_lost_across_twenty_kills(crashes):
    experiment, summary = crashes
    rs.assert_no_delivery_lost(experiment, summary, REPETITIONS, BURST)


def test_the_kills_hit_every_phase(crashes):
    """Otherwise the repetitions prove less than they claim: kills landed during the deliveries, inside
    playbooks and between actions."""
    experiment, summary = crashes
    phases = summary["phases"]
    assert sum(n for phase, n in phases.items() if phase.startswith("in a playbook")) >= 5, phases
    assert sum(n for phase, n in phases.items() if "deliver" in phase) >= 1, phases


def test_work_repeated_after_a_kill_is_bounded(crashes):
    """At least once, not at most once: a playbook killed before its acknowledgement runs again, but only
    the events in flight at the kill are repeated (the rule engine runs one playbook at a time)."""
    experiment, summary = crashes
    assert summary["duplicate_runs"] <= 2 * REPETITIONS, summary
