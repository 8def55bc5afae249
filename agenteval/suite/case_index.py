"""What loading keeps of each case, so a run can select cases without holding them: one
selection bit per case and a 64-bit hash per case id.

A dict of id strings costs about 190 bytes a case (59 MB at 100,000 cases); a flat array of
id hashes with open addressing costs 12 to 24 bytes, and is dropped after loading unless a
selection needs it. Equal hashes are only suspects: the
loader re-checks them against the exact ids before it reports a duplicate.
"""

from __future__ import annotations

from array import array

from agenteval.suite.selection import Selection

_EMPTY = 0


def _base(key: int) -> int:
    """The hash with its low bit cleared (the bit stores a flag); never the empty marker."""
    return key & -2 or 2


class IdHashes:
    """A set of 64-bit hashes in one array('q') at most 2/3 full, each with a one-bit flag."""

    def __init__(self) -> None:
        self._slots = array("q", bytes(8 * 1024))
        self._count = 0
        self._limit = 2 * len(self._slots) // 3  # grow before a hash would make it fuller than 2/3

    def reserve(self, count: int) -> None:
        """Make room for `count` hashes at once: growing step by step would briefly hold two tables."""
        size = len(self._slots)
        while 2 * size < 3 * count:
            size *= 2
        if size > len(self._slots):
            self._grow(size)

    def add(self, key: int, flag: bool) -> bool:
        """Store the hash; False when it was there already (a duplicate id, or rarely an equal hash).
        (`_insert` inline: every case of a file passes here.)"""
        if self._count >= self._limit:
            self._grow(2 * len(self._slots))
        slots = self._slots
        base, mask = key & -2 or 2, len(slots) - 1
        slot = (base >> 1) & mask
        value = slots[slot]
        while value != _EMPTY:
            if value & -2 == base:
                return False
            slot = (slot + 1) & mask
            value = slots[slot]
        slots[slot] = base | flag
        self._count += 1
        return True

    def set_flag(self, key: int, flag: bool) -> None:
        """Change the flag stored with a hash that is in the set."""
        slots = self._slots
        base, mask = _base(key), len(slots) - 1
        slot = (base >> 1) & mask
        while slots[slot] != _EMPTY:
            if slots[slot] & -2 == base:
                slots[slot] = base | flag
                return
            slot = (slot + 1) & mask

    def flag(self, key: int) -> bool | None:
        """The flag stored with the hash, or None when the hash is not in the set."""
        slots = self._slots
        base, mask = _base(key), len(slots) - 1
        slot = (base >> 1) & mask
        while True:
            value = slots[slot]
            if value == _EMPTY:
                return None
            if value & -2 == base:
                return bool(value & 1)
            slot = (slot + 1) & mask

    def _grow(self, size: int) -> None:
        old, self._slots = self._slots, array("q", bytes(8 * size))
        self._limit = 2 * size // 3
        for value in old:
            if value != _EMPTY:
                _insert(self._slots, value)


def _insert(slots: array, stored: int) -> bool:
    base, mask = stored & -2, len(slots) - 1
    slot = (base >> 1) & mask
    while True:
        value = slots[slot]
        if value == _EMPTY:
            slots[slot] = stored
            return True
        if value & -2 == base:
            return False
        slot = (slot + 1) & mask


class CaseIndex:
    """Cases in file order as they validate: which are selected, how many, and their id hashes."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        self.count = 0
        self.selected_count = 0
        self.ids: IdHashes | None = IdHashes()
        self.suspects: set[int] = set()  # id hashes seen twice, for the exact duplicate check
        self._matched = 0
        self._eligible = 0  # cases past --filter, --tag and --shard: what --first and --sample choose from
        self._chosen: bytearray | None = None if selection.everything else bytearray()
        self._candidates = _Candidates(selection.seed) if selection.sample is not None else None
        self.sampled_from = 0  # a smoke run: how many cases it was drawn from
        if self._chosen is None:
            self.add = self._add_taken  # type: ignore[method-assign]

    def add(self, case_id: str, tags: list[str]) -> None:
        position = self.count
        self.count = position + 1
        take = True if self._chosen is None else self._choose(position, case_id, tags)
        self.selected_count += take
        key = hash(case_id)
        assert self.ids is not None, "cases are added before release_ids()"
        if not self.ids.add(key, take):
            self.suspects.add(_base(key))

    def _add_taken(self, case_id: str, tags: list[str]) -> None:
        """`add` when the run takes every case (no selection bits to keep): every case of every file passes here."""
        self.count += 1
        self.selected_count += 1
        key = hash(case_id)
        ids = self.ids
        assert ids is not None, "cases are added before release_ids()"
        if not ids.add(key, True):
            self.suspects.add(_base(key))

    def _choose(self, position: int, case_id: str, tags: list[str]) -> bool:
        """Whether the selection takes the case at `position` (marked in the selection bits)."""
        assert self._chosen is not None
        take = self.selection.matches(case_id, tags)
        if take:
            take = self.selection.in_shard(self._matched)
            self._matched += 1
        if take:
            self._eligible += 1
            if self.selection.first is not None:
                take = self._eligible <= self.selection.first
        if position >> 3 == len(self._chosen):
            self._chosen.append(0)
        if take:
            self._chosen[position >> 3] |= 1 << (position & 7)
            if self._candidates is not None:
                self._candidates.append(position, case_id, tags)
        return take

    def expect(self, count: int) -> None:
        """About how many cases are coming (estimated from the file size), so the id index is sized once."""
        if self.ids is not None:
            self.ids.reserve(count)

    def is_suspect(self, case_id: str) -> bool:
        return _base(hash(case_id)) in self.suspects

    def chosen(self, position: int) -> bool:
        """Whether the case at `position` (0-based, in file order) is selected."""
        chosen = self._chosen
        return chosen is None or bool(chosen[position >> 3] >> (position & 7) & 1)

    def is_selected(self, case_id: str) -> bool:
        """Whether the case with this id is selected (by its id hash; ids were checked unique)."""
        if self._chosen is None:
            return True
        return self.ids is not None and self.ids.flag(hash(case_id)) is True

    def finish(self) -> None:
        """Once every case is read: draw `--sample` from the cases kept so far (and say how many a
        smoke run chose from)."""
        if self.selection.first is not None or self.selection.sample is not None:
            self.sampled_from = self._eligible
        if self._candidates is None or self._chosen is None or self.ids is None:
            return
        dropped = self._candidates.not_drawn(self.selection.sample or 0)
        for position, id_hash in dropped:
            self._chosen[position >> 3] &= ~(1 << (position & 7)) & 0xFF
            self.ids.set_flag(id_hash, False)
        self.selected_count -= len(dropped)
        self._candidates = None

    def release_ids(self) -> None:
        """Drop the id hashes once duplicates are checked, when no selection needs them later."""
        if self._chosen is None:
            self.ids = None


class SelectedCases:
    """The cases a run selected, without holding their ids: len(), `in` and `& ids` (by id hash)."""

    def __init__(self, index: CaseIndex) -> None:
        self._index = index

    def __len__(self) -> int:
        return self._index.selected_count

    def __contains__(self, case_id: object) -> bool:
        return isinstance(case_id, str) and self._index.is_selected(case_id)

    def __and__(self, ids: set[str]) -> set[str]:
        return {case_id for case_id in ids if case_id in self}


class _Candidates:
    """The cases a sample is drawn from, compactly (about 30 bytes a case): position, a seeded
    64-bit key of the id (the draw: the smallest keys win, so every run with the same seed draws
    the same cases whatever their order), the stratum (the case's tags), and the id's hash (to
    clear its selection flag)."""

    def __init__(self, seed: int) -> None:
        self._seed = seed.to_bytes(8, "little", signed=True)
        self.positions = array("q")
        self.keys = array("Q")
        self.strata = array("l")
        self.id_hashes = array("q")
        self._stratum_of: dict[tuple[str, ...], int] = {}

    def append(self, position: int, case_id: str, tags: list[str]) -> None:
        import hashlib

        digest = hashlib.blake2b(case_id.encode("utf-8", "surrogatepass"), digest_size=8, key=self._seed).digest()
        self.positions.append(position)
        self.keys.append(int.from_bytes(digest, "little"))
        self.strata.append(self._stratum_of.setdefault(tuple(sorted(set(tags))), len(self._stratum_of)))
        self.id_hashes.append(hash(case_id))

    def not_drawn(self, size: int) -> list[tuple[int, int]]:
        """(position, id hash) of the cases left out of a sample of `size`: each stratum gets its share
        of the sample (largest remainders, ties to the stratum seen first), filled by smallest key."""
        total = len(self.positions)
        if size >= total:
            return []
        members: dict[int, list[int]] = {}
        for index, stratum in enumerate(self.strata):
            members.setdefault(stratum, []).append(index)
        exact = {stratum: size * len(indexes) / total for stratum, indexes in members.items()}
        quota = {stratum: int(share) for stratum, share in exact.items()}
        left = size - sum(quota.values())
        for stratum in sorted(exact, key=lambda s: (-(exact[s] - quota[s]), s))[:left]:
            quota[stratum] += 1
        drawn: set[int] = set()
        for stratum, indexes in members.items():
            indexes.sort(key=lambda index: self.keys[index])
            drawn.update(indexes[: quota[stratum]])
        return [(self.positions[index], self.id_hashes[index]) for index in range(total) if index not in drawn]
