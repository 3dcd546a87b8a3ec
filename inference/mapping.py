"""One skeleton's joints ↔ another's: detected from names and hierarchy, for rigs and data sets alike.

Names are read through the schemes rigs come with: a namespace (``mixamorig:``, ``Armature|``), a
prefix (Rigify's ``DEF-``, 3ds Max's ``Bip01``), a side marker (``Left``/``Right`` words, ``_L``,
``.R``, ``l_``, as :mod:`.mirror` reads them, or a letter glued onto a body part: Daz's ``lThigh``, CMU's
ASF names ``rfemur``) and a body part under one of its common
names (``UpLeg``/``UpperLeg``/``thigh``, ``ForeArm``/``LowerArm``, ``Toe``/``ToeBase``/``ball``, …);
where a side has two shoulders, a collar above a shoulder (Biovision), the lower is the upper arm.
Limbs map by part and side. The spine and neck map by structure: the chain from the hips to the bone
that carries both shoulders, and from there to the head, matched end to end when the counts differ
(LaFAN1's Spine, Spine1, Spine2 onto Bandai's Spine, Chest). What is left maps by equal names, up to
case, separators and an index's zeros (the dog's ``Tail1`` is a rig's ``tail.001``).

The add-on maps a rig's bones onto a model's joints with it (``addon/mapping.py`` stores the result on
the armature); training maps another data set's skeleton onto its own (:mod:`.retarget`). bpy-free.
"""

import re
from functools import lru_cache

from .mirror import unsided

_NAMESPACE = re.compile(r"^.*[:|]")
_PREFIX = re.compile(r"^(?:DEF[-_.]|Bip0*1[ _]?|Character\d*_)", re.IGNORECASE)
_INDEX = re.compile(r"^(.*?)(\d*)$")

CENTRE = {"hips": "hips", "hip": "hips", "pelvis": "hips", "root": "root", "jointroot": "root",
          "spine": "spine", "chest": "spine", "upperchest": "spine", "lowerback": "spine", "torso": "spine",
          "abdomen": "spine", "thorax": "spine", "upperback": "spine", "neck": "neck", "lowerneck": "neck",
          "upperneck": "neck", "head": "head"}
SIDED = {"shoulder": "shoulder", "clavicle": "shoulder", "collar": "shoulder", "collarbone": "shoulder",
         "arm": "upperarm", "upperarm": "upperarm", "uparm": "upperarm", "humerus": "upperarm", "shldr": "upperarm",
         "forearm": "forearm", "lowerarm": "forearm", "elbow": "forearm", "radius": "forearm",
         "hand": "hand", "wrist": "hand",
         "upleg": "thigh", "upperleg": "thigh", "thigh": "thigh", "hip": "thigh", "femur": "thigh",
         "leg": "shin", "lowerleg": "shin", "shin": "shin", "calf": "shin", "knee": "shin", "tibia": "shin",
         "foot": "foot", "ankle": "foot",
         "toe": "toe", "toes": "toe", "toebase": "toe", "ball": "toe"}


@lru_cache(maxsize=4096)   # a rig's names are read again by every operation and every panel draw
def describe(name):
    """``(side, role or None, index, core)`` of a joint or bone name; ``core`` is the name without its
    namespace and prefix, as (side, base, index), so that ``Tail1`` and ``tail.001`` are one."""
    core = _PREFIX.sub("", _NAMESPACE.sub("", name))
    side, rest = unsided(core)
    token = re.sub(r"[^a-z0-9]", "", rest.lower())
    base, digits = _INDEX.match(token).groups()
    if not side and base[:1] in ("l", "r") and base[1:] in SIDED:   # a side letter glued on: lThigh, rfemur
        side, base = base[0].upper(), base[1:]
    index = int(digits) if digits else -1
    role = (SIDED if side else CENTRE).get(base)
    return side, role, index, (side, base, index)


def detect(joints, joint_parents, bones, bone_parents):
    """{joint name: bone name} for a model skeleton and a rig (names and parent indices, -1 for roots)."""
    return dict(_detect(tuple(joints), tuple(map(int, joint_parents)), tuple(bones), tuple(map(int, bone_parents))))


@lru_cache(maxsize=256)   # a panel draw and an operation detect a rig's mapping for each model's skeleton, again
def _detect(joints, joint_parents, bones, bone_parents):
    model = _Body(joints, joint_parents)
    rig = _Body(bones, bone_parents)
    found = {}
    for key, j in model.parts.items():
        if key in rig.parts:
            found[j] = rig.parts[key]
    for part, anchor in (("spine", -1), ("neck", 0)):
        for j, b in _match_chain(model.chains.get(part, []), rig.chains.get(part, []), anchor):
            found.setdefault(j, b)
    taken = set(found.values())
    cores = {}
    for b, name in enumerate(bones):
        cores.setdefault(describe(name)[3], b)
    for j, name in enumerate(joints):
        b = cores.get(describe(name)[3])
        if j not in found and b is not None and b not in taken:
            found[j] = b
            taken.add(b)
    used, out = set(), {}
    for j in sorted(found):
        if found[j] not in used:
            used.add(found[j])
            out[joints[j]] = bones[found[j]]
    return out


class _Body:
    """A hierarchy read as body parts: ``parts`` {(role, side): index}, ``chains`` {'spine'|'neck': [...]}."""

    def __init__(self, names, parents):
        self.parents = [int(p) for p in parents]
        described = [describe(n) for n in names]
        depth = [0] * len(names)
        for i, p in enumerate(self.parents):
            depth[i] = depth[p] + 1 if 0 <= p < i else 0
        candidates = {}
        for i, (side, role, index, _) in enumerate(described):
            if role is not None:
                candidates.setdefault((role, side), []).append((index > 0, depth[i], index, i))
        for side in "LR":   # Biovision: a Collar, then a Shoulder that is the upper arm
            shoulders = candidates.get(("shoulder", side), [])
            if ("upperarm", side) not in candidates and len(shoulders) > 1:
                candidates[("upperarm", side)] = [shoulders.pop(shoulders.index(max(shoulders, key=lambda c: c[1])))]
        self.parts = {key: min(found)[3] for key, found in candidates.items()}
        self.chains = {}
        hips = self.parts.get(("hips", ""))
        thighs = [self.parts.get(("thigh", s)) for s in "LR"]
        if hips is None and None not in thighs:
            hips = self._common(*thighs)
        arms = [self.parts.get(("shoulder", s), self.parts.get(("upperarm", s))) for s in "LR"]
        chest = self._common(*arms) if None not in arms else None
        if hips is None or chest is None or hips not in self._ancestors(chest):
            return
        self.parts[("hips", "")] = hips
        self.chains["spine"] = self._path(hips, chest)
        head = self.parts.get(("head", ""))
        if head is None:   # Rigify: spine.004 … spine.006 run on above the chest
            above = [i for i, d in enumerate(described) if d[1] in ("spine", "neck")
                     and chest in self._ancestors(i) and i != chest]
            head = max(above, key=lambda i: depth[i]) if above else None
            if head is not None:
                self.parts[("head", "")] = head
        if head is not None and chest in self._ancestors(head):
            self.chains["neck"] = self._path(chest, head)[:-1]
        for key in [k for k in self.parts if k[0] in ("spine", "neck")]:
            del self.parts[key]

    def _ancestors(self, i):
        out = []
        while i is not None and i >= 0:
            out.append(i)
            i = self.parents[i]
        return out

    def _common(self, a, b):
        mine = self._ancestors(a)
        return next((i for i in self._ancestors(b) if i in mine), None)

    def _path(self, top, bottom):
        """Bones from below ``top`` down to ``bottom``, top first."""
        chain = self._ancestors(bottom)
        return chain[:chain.index(top)][::-1]


def _match_chain(model, rig, anchor):
    """Pairs along two chains of different lengths: ends to ends, the rest spread evenly."""
    if not model or not rig:
        return []
    if len(model) == 1 or len(rig) == 1:
        return [(model[anchor], rig[anchor])]
    if len(rig) <= len(model):
        return [(model[round(r * (len(model) - 1) / (len(rig) - 1))], b) for r, b in enumerate(rig)]
    return [(j, rig[round(m * (len(rig) - 1) / (len(model) - 1))]) for m, j in enumerate(model)]
