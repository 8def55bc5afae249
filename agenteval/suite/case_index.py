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

    def reserve(self, count: int) -> None:
        """Make room for `count` hashes at once: growing step by step would briefly hold two tables."""
        size = len(self._slots)
        while 2 * size < 3 * count:
            size *= 2
        if size > len(self._slots):
            self._grow(size)

    def add(self, key: int, flag: bool) -> bool:
        """Store the hash; False when it was there already (a duplicate id, or rarely an equal hash)."""
        if 3 * (self._count + 1) > 2 * len(self._slots):
            self._grow(2 * len(self._slots))
        if _insert(self._slots, _base(key) | flag):
            self._count += 1
            return True
        return False

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
        self._chosen: bytearray | None = None if selection.everything else bytearray()

    def add(self, case_id: str, tags: list[str]) -> None:
        position = self.count
        self.count += 1
        take = True
        if self._chosen is not None:
            take = self.selection.matches(case_id, tags)
            if take:
                take = self.selection.in_shard(self._matched)
                self._matched += 1
            if position >> 3 == len(self._chosen):
                self._chosen.append(0)
            if take:
                self._chosen[position >> 3] |= 1 << (position & 7)
        self.selected_count += take
        key = hash(case_id)
        assert self.ids is not None, "cases are added before release_ids()"
        if not self.ids.add(key, take):
            self.suspects.add(_base(key))

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
