"""Where along a path the MANN controller reads its desired trajectory (``inference/mann/pursuit.py``):
the path's timing held back to a character that lags it (but not where the path idles), caught up
with where the character catches up, and in curves the future spaced at the character's pace and the
sideways drift corrected. Plain arithmetic on real desired paths (``path.desired``); the shipped
model's paths are in test_mann_runtime.py."""

import numpy as np
import pytest

from inference.mann.path import Path, desired
from inference.mann.pursuit import Pursuit

FPS, AHEAD = 60, 60
ACTIONS = ("idle", "move")


def line(speed=100.0, seconds=4.0, still=0.0):
    """A straight path along +Z at ``speed`` (cm/s), standing still for ``still`` seconds at its end."""
    times = [0.0, seconds] + ([seconds + still] if still else [])
    end = speed * seconds
    points = [[0.0, 0.0], [0.0, end]] + ([[0.0, end]] if still else [])
    return desired(Path(np.array(times), np.array(points)), FPS, AHEAD, ACTIONS, 22.4)


def pursued(want, **options):
    return Pursuit([want], want.frames + AHEAD + 1, FPS, **options)


def test_the_plain_pursuit_keeps_to_the_paths_timing():
    want = line()
    pursuit = pursued(want)
    for step in range(30):
        pursuit.advance(step, np.zeros((1, 2)))        # the character never moves
    assert pursuit.clock[0] == 30
    future = pursuit.future(AHEAD)
    assert np.allclose(future[0, :, :2], want.positions[31:31 + AHEAD])
    assert np.allclose(pursuit.desire([0, 12])[0], want.speed[[30, 42]][None])


def test_a_character_behind_its_path_is_led_on_from_where_it_is_and_catches_up():
    """1 m/s, so a frame is 1.67 cm: 25 cm of lead is 15 frames ahead of the character's nearest one."""
    want = line()
    pursuit = pursued(want, lead=25.0)
    for step in range(60):
        pursuit.advance(step, np.array([[0.0, 10.0]]))   # stuck 10 cm along (frame 6)
    assert pursuit.clock[0] == 6 + 15
    assert np.allclose(pursuit.future(AHEAD)[0, 0, :2], want.positions[22])
    pursuit.advance(60, np.array([[0.0, 95.0]]))          # caught up to within 25 cm of the timing's 100 cm
    assert pursuit.clock[0] == 61
    pursuit.advance(61, np.array([[0.0, 200.0]]))         # ahead of the timing: the timing it is
    assert pursuit.clock[0] == 62


def test_where_the_path_idles_a_character_that_stopped_short_does_not_hold_the_clock():
    """A path that stops after a second and stands for two, and a character that stops 40 cm short of
    where it stands (more than the lead): where the path idles there is nothing to wait for."""
    want = line(seconds=1.0, still=2.0)
    pursuit = pursued(want, lead=25.0, idle=22.4)
    for step in range(150):
        pursuit.advance(step, np.minimum(want.positions[min(step + 1, 60)], [0.0, 60.0])[None])
    assert pursuit.clock[0] == 150
    held = pursued(want, lead=25.0)                       # without the idle speed it waits for ever
    for step in range(150):
        held.advance(step, np.minimum(want.positions[min(step + 1, 60)], [0.0, 60.0])[None])
    assert held.clock[0] < 60


def test_at_its_path_s_end_a_character_short_of_it_is_asked_to_go_on_there_and_the_clock_waits():
    """The same path and character, arrival on (10 cm): where the path has stopped for good the desired
    speed is the character's 40 cm over the speed's second and the action is move, not the path's idle;
    10 cm or closer, move fades into idle; at the end it is the path's idle."""
    want = line(seconds=1.0, still=2.0)
    pursuit = pursued(want, lead=25.0, idle=22.4, arrive=10.0)
    short = np.array([[0.0, 60.0]])
    for step in range(150):
        pursuit.advance(step, np.minimum(want.positions[min(step + 1, 60)][None], short))
    assert pursuit.clock[0] < 60 + 15 and pursuit.clock[0] >= pursuit.rest[0]   # waiting, a lead ahead
    speed, actions = pursuit.desire([0, 60])
    assert np.allclose(speed, 40.0) and np.allclose(actions[..., 1], 1.0) and np.allclose(actions[..., 0], 0.0)
    pursuit.advance(150, np.array([[0.0, 95.0]]))
    speed, actions = pursuit.desire([0])
    assert np.isclose(speed[0, 0], 5.0) and np.isclose(actions[0, 0, 1], 0.5)
    pursuit.advance(151, np.array([[0.0, 100.0]]))
    speed, actions = pursuit.desire([0])
    assert speed[0, 0] == 0.0 and actions[0, 0, 0] == 1.0
    assert np.allclose(pursued(want, lead=25.0, idle=22.4).desire([0])[1], want.actions[[0]])   # off by default


def circle(radius=200.0, speed=100.0, seconds=3.0, still=3.0):
    """An arc turning left (its centre at (radius, 0)) at ``speed`` (cm/s), then standing still."""
    t = np.linspace(0, seconds, 181)
    a = t * speed / radius
    points = np.stack([radius * (1 - np.cos(a)), radius * np.sin(a)], axis=-1)
    if still:
        t, points = np.append(t, seconds + still), np.vstack([points, points[-1:]])
    path = Path(t, points)
    return desired(path, FPS, AHEAD, ACTIONS, 22.4)


def test_a_steady_drift_inside_a_curve_is_corrected_and_the_correction_fades_where_the_path_stops():
    want, centre = circle(), np.array([200.0, 0.0])
    pursuit = pursued(want, gain=2.0, walking=70.0, straight=500.0)
    inside = lambda p: p + 10.0 * (centre - p) / np.linalg.norm(centre - p)   # noqa: E731
    for step in range(60):                                # 10 cm inside the curve, keeping its timing
        pursuit.advance(step, inside(want.positions[step + 1])[None])
    # 2 cm a second per cm off, over the frames where the path already walks (its first ~0.1 s does not)
    assert 16.0 < pursuit.offset[0] <= 20.0
    radius = np.linalg.norm(pursuit.future(AHEAD)[0, :, :2] - centre, axis=-1)
    assert np.allclose(radius, 200.0 + pursuit.offset[0])   # the desired positions moved out of the curve
    for step in range(60, 300):                           # the path stops at 3 s
        pursuit.advance(step, inside(want.positions[min(step + 1, 180)])[None])
    assert abs(pursuit.offset[0]) < 1.0
    assert np.allclose(pursuit.future(AHEAD)[0, :, :2], want.positions[180])   # a standing path is not moved


def test_in_a_curve_the_future_turns_toward_the_path_by_the_characters_distance_from_it():
    """15 cm inside the circle with ``steer`` 15 cm: every desired direction turns 45 degrees out toward
    the path, the velocities by the same angle at their own speed; on the path, nothing turns."""
    want, centre = circle(), np.array([200.0, 0.0])
    for off, angle in ((15.0, 45.0), (0.0, 0.0)):
        pursuit = pursued(want, walking=70.0, straight=500.0, steer=15.0)
        for step in range(60):
            here = want.positions[step + 1]
            pursuit.advance(step, (here + off * (centre - here) / np.linalg.norm(centre - here))[None])
        future, plain = pursuit.future(AHEAD)[0], pursued(want, walking=70.0, straight=500.0)
        plain.clock = pursuit.clock
        path = plain.future(AHEAD)[0]
        turn = lambda a, b: np.degrees(np.arctan2(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0], np.sum(a * b, axis=-1)))  # noqa: E731
        assert np.allclose(np.abs(turn(path[:, 2:4], future[:, 2:4])), angle, atol=0.5)
        assert np.allclose(turn(path[:, 4:6], future[:, 4:6]), turn(path[:, 2:4], future[:, 2:4]), atol=0.5)
        assert np.allclose(np.linalg.norm(future[:, 4:6], axis=-1), np.linalg.norm(path[:, 4:6], axis=-1))
        if off:   # inside the curve: turned outward, to the path
            assert (np.sum((future[:, 2:4] - path[:, 2:4]) * (path[:, :2] - centre), axis=-1) > 0).all()


def test_in_a_faster_curve_the_future_turns_toward_the_path_over_the_way_it_goes_in_steer_time():
    """The same 15 cm inside a circle run at 2 m/s with ``steer`` 15 cm and ``steer_time`` 0.3 s: the turn is
    over the 60 cm the path goes in 0.3 s, atan(15 / 60) = 14 degrees, not 45; at 0.3 m/s the 15 cm hold."""
    centre = np.array([200.0, 0.0])
    for speed, angle in ((200.0, np.degrees(np.arctan(15.0 / 60.0))), (30.0, 45.0)):
        want = circle(speed=speed, seconds=600.0 / speed, still=0.0)
        pursuit = pursued(want, walking=20.0, straight=500.0, steer=15.0, steer_time=0.3)
        for step in range(60):
            here = want.positions[step + 1]
            pursuit.advance(step, (here + 15.0 * (centre - here) / np.linalg.norm(centre - here))[None])
        plain = pursued(want, walking=20.0, straight=500.0)
        plain.clock = pursuit.clock
        path, future = plain.future(AHEAD)[0], pursuit.future(AHEAD)[0]
        turned = np.degrees(np.arccos(np.clip(np.sum(path[:, 2:4] * future[:, 2:4], axis=-1), -1, 1)))
        assert np.allclose(turned, angle, atol=0.5), (speed, turned[:3])


def test_in_a_curve_the_future_is_spaced_at_the_characters_pace():
    """Three quarters of the path's pace round the circle: the desired future covers three quarters
    of the path's distance a second, at three quarters of its velocity; half the pace is spaced at
    ``slowest`` (0.6); a straight path at its own pace."""
    want = circle(seconds=3.0, still=0.0)
    for share, rate in ((0.75, 0.75), (0.5, 0.6)):
        pursuit = pursued(want, lead=25.0, slowest=0.6, walking=70.0, straight=500.0)
        for step in range(90):
            pursuit.advance(step, want.positions[int(share * (step + 1))][None])
        assert pursuit.rate[0] == pytest.approx(rate, abs=0.02)
        future = pursuit.future(AHEAD)[0, :, :2]
        ahead = slice(pursuit.clock[0] + 1, pursuit.clock[0] + 1 + AHEAD)
        timed = want.positions[ahead]
        walked = lambda p: np.linalg.norm(np.diff(p, axis=0), axis=-1).sum()   # noqa: E731
        assert walked(future) == pytest.approx(rate * walked(timed), rel=0.03)
        speed = np.linalg.norm(pursuit.future(AHEAD)[0, :, 4:6], axis=-1)          # the velocities say the same
        assert np.allclose(speed, rate * np.linalg.norm(want.velocities[ahead], axis=-1), rtol=0.03)
    straight = line()
    pursuit = pursued(straight, lead=25.0, slowest=0.6, walking=70.0, straight=500.0)
    for step in range(90):
        pursuit.advance(step, straight.positions[int(0.75 * (step + 1))][None])
    assert pursuit.rate[0] == 1.0


def test_a_straight_path_is_not_corrected():
    """Off to one side of a straight path (as after cutting a corner) is no drift inside a curve."""
    want = line()
    pursuit = pursued(want, gain=2.0, walking=70.0, straight=500.0, steer=15.0)
    for step in range(60):
        pursuit.advance(step, want.positions[step + 1][None] + [-10.0, 0.0])
    assert pursuit.offset[0] == 0.0
    assert np.allclose(pursuit.future(AHEAD)[0, :, :2], want.positions[61:61 + AHEAD])
    assert np.allclose(pursuit.future(AHEAD)[0, :, 2:], np.c_[want.directions, want.velocities][61:61 + AHEAD])
