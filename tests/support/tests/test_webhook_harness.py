"""The system suites' wait (``webhook_harness.wait_for``): what its timeout means and what a timeout says."""

import itertools

import pytest

import webhook_harness


def test_a_wait_that_keeps_progressing_outlasts_its_timeout():
    # Progress changes at every look, so the 0.05 s timeout (the longest wait WITHOUT progress) never runs out
    # although the whole wait takes 8 x 0.02 s; a loaded machine makes it longer, never red.
    calls = itertools.count()
    ticks = itertools.count()
    assert webhook_harness.wait_for(lambda: next(calls) >= 8, 0.05, 0.02, "eight looks", progress=lambda: next(ticks))


def test_a_timed_out_wait_says_what_it_waited_for_its_last_progress_and_the_detail():
    with pytest.raises(AssertionError) as failure:
        webhook_harness.wait_for(lambda: False, 0.05, 0.01, "the playbook", progress=lambda: (3, 1),
                                 detail=lambda: "TASK [record the event]")
    message = str(failure.value)
    assert message.startswith("timed out after 0.05s without progress waiting for the playbook")
    assert "(last progress: (3, 1))" in message
    assert message.endswith("\nTASK [record the event]")


def test_a_rulebook_tail_is_the_end_of_its_output(tmp_path):
    rulebook = webhook_harness.Rulebook(tmp_path, [], {})
    rulebook.runs = 2
    (tmp_path / "rulebook-1.out").write_text("first start\n")
    (tmp_path / "rulebook-2.out").write_text("x" * 50 + "END")
    tail = rulebook.tail(10)
    assert tail.endswith("xxxxxxxEND") and "first start" not in tail
    assert tail.startswith("--- ansible-rulebook output (last 10 characters) ---\n")


def test_a_delivery_is_processed_when_its_acknowledgement_is_in_the_spool_and_its_run_started():
    # the callback's "acked" line is not needed: a kill between the acknowledgement's write and that line
    # takes the line only. A run that never acknowledged, or an acknowledgement nobody's run wrote, is not.
    runs = {"sig-a": {"starts": ["1"], "acked": 1}, "sig-b": {"starts": ["1"], "acked": 0},
            "sig-c": {"starts": ["1", "2"], "acked": 0}}
    assert webhook_harness.processed_ids(runs, {"sig-a", "sig-b", "sig-d"}) == {"sig-a", "sig-b"}


def test_the_spools_mark_and_seqs_are_read_from_its_files(tmp_path):
    # the mark: the highest whole line (a line a kill cut short is not one); seqs from both segments
    assert webhook_harness.emitted_mark(tmp_path) == 0
    (tmp_path / "emitted.log").write_bytes(b"3\n12\n7\n1")
    (tmp_path / "spool.log.1").write_bytes(b"1\tsig-a\tfp\t{}\n")
    (tmp_path / "spool.log").write_bytes(b"2\tsig-b\tfp\t{\"x\": \"a\\tb\"}\n3\tsig-c\tf")
    assert webhook_harness.emitted_mark(tmp_path) == 12
    assert webhook_harness.stored_seqs(tmp_path) == {"sig-a": 1, "sig-b": 2}
