"""Which cases a run takes (--filter, --tag, --shard, then --first or --sample), decided case by
case while the cases are read (a sample once they all are: agenteval.suite.case_index)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Selection:
    """Globs on case ids and tags (any of each), then every N-th of the matching cases from the I-th."""

    filters: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None  # (I, N), 1-based
    first: int | None = None  # --first N: the first N of the cases the above keep, in file order
    sample: int | None = None  # --sample N: N of them drawn with `seed`, stratified by tags
    seed: int = 0

    @property
    def everything(self) -> bool:
        return not self.filters and not self.tags and self.shard is None and self.first is None and self.sample is None

    @property
    def smoke(self) -> dict[str, int] | None:
        """What the summary says of a smoke run (`--first` or `--sample`), or None for a full one."""
        if self.first is not None:
            return {"first": self.first}
        if self.sample is not None:
            return {"sample": self.sample, "seed": self.seed}
        return None

    def matches(self, case_id: str, tags: list[str]) -> bool:
        """Whether a case passes --filter and --tag (the shard is decided on the matching cases, in order)."""
        return (not self.filters or self._by_filter(case_id)) and (not self.tags or any(tag in tags for tag in self.tags))

    def _by_filter(self, case_id: str) -> bool:
        exact, globs = self._filters
        return case_id in exact or any(fnmatch.fnmatchcase(case_id, glob) for glob in globs)

    @cached_property
    def _filters(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """The filters that name one id (`[*]` escapes a star) as a set, the others as globs: a
        selection of 10,000 ids (pytest's `-k`) is a lookup per case, not 10,000 matches."""
        exact, globs = set(), []
        for glob in self.filters:
            literal = _literal(glob)
            if literal is None:
                globs.append(glob)
            else:
                exact.add(literal)
        return frozenset(exact), tuple(globs)

    def in_shard(self, position: int) -> bool:
        """Whether the matching case at `position` (0-based, in file order) is in this shard."""
        return self.shard is None or position % self.shard[1] == self.shard[0] - 1


def _literal(glob: str) -> str | None:
    """The one text `glob` matches, when it has no wildcard (a `[c]` of one character is that character), else None."""
    text, position = [], 0
    while position < len(glob):
        char = glob[position]
        if char in "*?":
            return None
        if char == "[":
            if position + 2 < len(glob) and glob[position + 2] == "]" and glob[position + 1] not in "!]":
                text.append(glob[position + 1])
                position += 3
                continue
            return None
        text.append(char)
        position += 1
    return "".join(text)
