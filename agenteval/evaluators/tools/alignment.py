"""Assign actual calls to expected calls 1:1, so two expected calls to one tool need two calls.

`satisfying[i]` lists (ascending) the actual calls that satisfy expected call `i`. Required
calls come first: no optional call is ever satisfied at the cost of a required one.
"""

from __future__ import annotations


def align_any_order(satisfying: list[list[int]], required: list[bool]) -> dict[int, int]:
    """The most expected calls satisfied, in any order (maximum bipartite matching by augmenting
    paths, searched with an explicit stack: a path may be thousands of pairs long, deeper than
    Python's recursion limit). Returns expected index -> actual index."""
    owner: dict[int, int] = {}  # actual -> expected
    for expected in sorted(range(len(satisfying)), key=lambda i: not required[i]):
        if satisfying[expected]:
            _augment(expected, satisfying, owner)
    return {expected: actual for actual, expected in owner.items()}


def _free_call(expected: int, satisfying: list[list[int]], owner: dict[int, int]) -> int | None:
    for actual in satisfying[expected]:  # a free call first: earlier pairs move only when they must
        if actual not in owner:
            return actual
    return None


def _augment(root: int, satisfying: list[list[int]], owner: dict[int, int]) -> bool:
    """Give `root` a call, moving earlier pairs along one augmenting path (depth-first, iterative)."""
    free = _free_call(root, satisfying, owner)
    if free is not None:
        owner[free] = root
        return True
    seen: set[int] = set()
    stack = [(root, iter(satisfying[root]))]
    path: list[tuple[int, int]] = []  # (expected, the call it takes over) at each level below the top
    while stack:
        expected, candidates = stack[-1]
        for actual in candidates:
            if actual in seen:
                continue
            seen.add(actual)
            displaced = owner[actual]
            free = _free_call(displaced, satisfying, owner)
            if free is not None:
                owner[free] = displaced
                owner[actual] = expected
                for earlier, taken in path:
                    owner[taken] = earlier
                return True
            path.append((expected, actual))
            stack.append((displaced, iter(satisfying[displaced])))
            break
        else:
            stack.pop()
            if path:
                path.pop()
    return False


def align_in_order(satisfying: list[list[int]], required: list[bool], call_count: int) -> dict[int, int]:
    """The most expected calls satisfied as a subsequence of the trajectory (each expected call
    by a later call than the one before it). Returns expected index -> actual index.

    A heaviest increasing chain over the satisfying pairs only, with a Fenwick tree of prefix
    maxima over call positions: O(pairs x log calls), not expected x calls.
    """
    count = len(satisfying)
    weights = [count + 1 if is_required else 1 for is_required in required]
    best_at = [0] * (call_count + 1)  # Fenwick tree: best chain weight ending at a call <= position
    node_at = [-1] * (call_count + 1)
    chain: list[tuple[int, int, int]] = []  # (expected, actual, previous node)
    best, best_node = 0, -1
    for expected in range(count):
        extended = []
        for actual in satisfying[expected]:
            value, previous, position = 0, -1, actual  # chains ending strictly before `actual`
            while position > 0:
                if best_at[position] > value:
                    value, previous = best_at[position], node_at[position]
                position -= position & -position
            extended.append((actual, value + weights[expected], previous))
        for actual, value, previous in extended:  # after the queries: one expected call, one link
            chain.append((expected, actual, previous))
            node = len(chain) - 1
            position = actual + 1
            while position <= call_count:
                if value > best_at[position]:
                    best_at[position], node_at[position] = value, node
                position += position & -position
            if value > best:
                best, best_node = value, node
    pairs: dict[int, int] = {}
    while best_node >= 0:
        expected, actual, best_node = chain[best_node]
        pairs[expected] = actual
    return pairs
