"""A control rig's split chains read along their chords (inference/chords.py), on LaFAN1's test subject."""

import zipfile

import numpy as np
import pytest

from inference import chords, quat
from inference.bvh import parse_bvh
from inference.motion import forward_kinematics
from inference.twist import turned_in_world


@pytest.fixture(scope="module")
def walk(lafan1_zip):
    with zipfile.ZipFile(lafan1_zip) as z:
        return parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5").frames(1000, 1300)


def test_a_bone_read_along_its_first_segment_points_at_its_child_again_and_writing_undoes_it(walk):
    """A neck of three bones read from the first: the model's Neck turned 25 degrees off the line to the head.
    Aimed, it points at the head's place again, no other bone turns in the world, and undoing gives the read back."""
    sk = walk.skeleton
    neck, head = sk.index("Neck"), sk.index("Head")
    grot, heads = forward_kinematics(walk.rotations, walk.positions, sk.parents)
    bent = np.tile(quat.from_angle_axis(np.radians(25.0), np.array([1.0, 0.0, 0.0])), (walk.n_frames, 1, 1))
    read = turned_in_world(walk.rotations, grot, sk.parents, [neck], bent)
    out, swings = chords.aimed(read, walk.positions, sk, [(neck, head)], {neck: heads[:, neck], head: heads[:, head]})
    g_read, g_out = (forward_kinematics(r, walk.positions, sk.parents)[0] for r in (read, out))
    def off(g):   # degrees between the Neck's bone and the line to the head
        bone = quat.rotate(g[:, neck], sk.offsets[head])
        line = heads[:, head] - heads[:, neck]
        cos = np.sum(bone * line, -1) / np.linalg.norm(bone, axis=-1) / np.linalg.norm(line, axis=-1)
        return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    assert off(g_read).mean() > 15.0 and off(g_out).max() < 0.01
    others = [j for j in range(len(sk)) if j != neck]
    assert np.abs(np.abs(np.sum(g_out[:, others] * g_read[:, others], -1)) - 1.0).max() < 1e-9
    back = swings.undone(out, walk.positions, np.arange(walk.n_frames))
    assert np.abs(np.abs(np.sum(back * read, -1)) - 1.0).max() < 1e-9
