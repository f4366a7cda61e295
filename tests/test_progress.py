"""The progress views: plain lines off a terminal, a rich live panel on one."""

from __future__ import annotations

import io

import pytest

from srperf.measure.progress import (PlainProgress, ProgressEvents, ProgressState, RichProgress,
                             describe_state, make_progress)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drive(view: ProgressEvents) -> None:
    view.run_started("r1", "quick", "virtual", "linux", total_searches=4)
    view.search_started("end", 64, 1, 1, thresholds_pct=(0.5,))
    view.trial_done(400e3, 1.0, 0.0)
    view.trial_done(800e3, 1.0, 0.2)
    view.trial_done(600e3, 1.0, 0.001)
    view.trial_done(700e3, 1.0, 0.0, usable=False)  # generator-limited: never a bound
    view("end size 64 rep 1: PDR@0.5% [600.0, 800.0] kpps")
    view.search_done()
    view.run_done("finished")


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    view = make_progress(out)
    assert isinstance(view, PlainProgress)
    _drive(view)
    lines = out.getvalue().splitlines()
    assert lines[0] == "run r1: 4 searches planned"
    # Each trial: search i/n, behavior, repetition, trial count, rate, loss, bounds.
    assert lines[3].startswith("  search 1/4 end 64B rep 1: trial 3 at 600.0 kpps, "
                               "loss 0.100 %, seen PDR@0.5%: highest pass 600.0, "
                               "lowest fail 800.0 (kpps)")
    assert "(generator-limited)" in lines[4]
    assert "highest pass 600.0, lowest fail 800.0" in lines[4]
    assert lines[5] == "end size 64 rep 1: PDR@0.5% [600.0, 800.0] kpps"
    assert lines[6].startswith("run r1 finished: 1 search in ")


def test_bounds_from_the_search_win_over_bounds_seen() -> None:
    st = ProgressState(total_searches=2, thresholds_pct=(0.5,))
    st.on_trial(500e3, 0.0, None, None, True)
    st.on_trial(550e3, 0.0, 480e3, 560e3, True)
    assert (st.lower_pps, st.upper_pps, st.bounds_seen) == (480e3, 560e3, False)
    assert "bounds [480.0, 560.0] kpps" in describe_state(st)


def test_what_the_trials_show_is_labelled_per_goal_never_an_empty_interval() -> None:
    """Issue 49 item 4: ``bounds seen [511.7, 501.5] kpps`` (End, NDR and PDR in one
    search, noisy trials) read as an interval whose lower end is above its upper."""
    st = ProgressState(total_searches=1, thresholds_pct=(0.0, 0.5))
    st.on_trial(511.7e3, 0.0, None, None, True)      # passes both goals
    st.on_trial(501.5e3, 0.003, None, None, True)    # fails NDR, passes PDR@0.5%
    st.on_trial(600e3, 0.2, None, None, True)        # fails both
    line = describe_state(st)
    assert "[511.7, 501.5]" not in line and "bounds seen" not in line
    assert ("seen NDR: highest pass 511.7, lowest fail 501.5 (trials disagree: a pass "
            "above a fail); PDR@0.5%: highest pass 511.7, lowest fail 600.0 (kpps)") in line
    fresh = ProgressState(total_searches=1, thresholds_pct=(0.0,))
    fresh.on_trial(100e3, 0.0, None, None, True)
    assert "NDR: highest pass 100.0, lowest fail - (kpps)" in describe_state(fresh)


def test_a_new_search_forgets_what_the_last_one_saw() -> None:
    view = make_progress(io.StringIO())
    view.search_started("end", 64, 1, 1, thresholds_pct=(0.5,))
    view.trial_done(400e3, 1.0, 0.0)
    view.search_started("end_x", 64, 1, 2, thresholds_pct=(0.5,))
    view.trial_done(300e3, 1.0, 0.5)
    assert "highest pass -, lowest fail 300.0" in describe_state(view.state)


def test_a_resumed_run_keeps_its_search_numbers_and_counts_the_kept_ones_done() -> None:
    """Issue 49 item 3: the killed run printed ``search 2/7 h_encaps``, the resumed one
    ``search 1/7 h_encaps``: the number is the search's place in the plan."""
    out = io.StringIO()
    view = make_progress(out)
    view.run_started("r1", "quick", "virtual", "linux", total_searches=7)
    view.searches_kept(1)
    view.search_started("h_encaps", 64, 1, 2, thresholds_pct=(0.5,))
    view.trial_done(400e3, 1.0, 0.0)
    assert "search 2/7 h_encaps 64B rep 1" in out.getvalue()
    st = ProgressState(total_searches=7, searches_kept=3, searches_done=2, run_start=0.0,
                       last_done_at=20.0)
    assert st.time_left_s(now=20.0) == pytest.approx(20.0)   # 2 left at 10 s each


def test_time_left_by_hand() -> None:
    st = ProgressState(total_searches=10, searches_done=4, run_start=100.0,
                       last_done_at=180.0)
    # 4 searches done in 80 s: 20 s each; 6 left = 120 s, minus 10 s since the last one.
    assert st.time_left_s(now=190.0) == pytest.approx(110.0)
    assert ProgressState(total_searches=3).time_left_s() is None


def test_rich_live_view_on_a_terminal() -> None:
    from rich.console import Console

    assert isinstance(make_progress(_Tty()), RichProgress)
    buf = io.StringIO()
    view = RichProgress(Console(file=buf, force_terminal=True, width=100,
                                color_system=None))
    view.run_started("r1", "quick", "virtual", "linux", total_searches=4)
    view.search_started("end", 64, 1, 1, thresholds_pct=(0.5,))
    view.trial_done(400e3, 1.0, 0.0)
    view.trial_done(800e3, 1.0, 0.2)
    panel = buf.getvalue()
    assert "800.0 kpps, loss 20.000 %" in panel
    assert "PDR@0.5%: highest pass 400.0, lowest fail 800.0" in panel
    assert "time left" in panel and "1/4" in panel and "end 64B rep 1" in panel
    view("a message")
    view.search_done()
    view.run_done("finished")
    assert "a message" in buf.getvalue() and "run r1 finished" in buf.getvalue()
    assert not view.live.is_started


@pytest.mark.parametrize(("n", "planned", "ended"), [
    (0, "run r1: 0 searches planned", "run r1 failed: 0 searches in "),
    (1, "run r1: 1 search planned", "run r1 finished: 1 search in "),
    (7, "run r1: 7 searches planned", "run r1 finished: 7 searches in ")])
def test_plain_lines_read_as_english_at_0_1_and_many(n: int, planned: str, ended: str) -> None:
    out = io.StringIO()
    view = PlainProgress(out)
    view.run_started("r1", "quick", "virtual", "linux", total_searches=n)
    for i in range(n):
        view.search_started("end", 64, 1, i + 1, thresholds_pct=(0.5,))
        view.search_done()
    view.run_done("failed" if n == 0 else "finished")
    lines = out.getvalue().splitlines()
    assert lines[0] == planned and lines[-1].startswith(ended), lines


def test_the_live_views_first_frame_says_what_is_planned() -> None:
    """Before its first search the panel said 'search 1/0  0B rep 0'."""
    from rich.console import Console

    for total, words in ((0, "0 searches planned"), (1, "1 search planned"),
                         (4, "4 searches planned")):
        buf = io.StringIO()
        view = RichProgress(Console(file=buf, force_terminal=True, width=100,
                                    color_system=None))
        view.run_started("r1", "quick", "virtual", "linux", total_searches=total)
        view.live.refresh()
        panel = buf.getvalue()
        view.close()
        assert f"none started yet ({words})" in panel, panel
        assert "0B" not in panel and "rep 0" not in panel and "/0" not in panel, panel
        assert "time left" in panel and "not known yet" in panel, panel


def test_count_words() -> None:
    from srperf.util.wording import count, plural

    assert [count(n, "search") for n in (0, 1, 2)] == ["0 searches", "1 search", "2 searches"]
    assert count(0, "trial", zero="no") == "no trials" and count(1, "trial") == "1 trial"
    assert [plural(w, 2) for w in ("VNF", "entry", "day", "box", "step")] == \
        ["VNFs", "entries", "days", "boxes", "steps"]
