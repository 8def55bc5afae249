"""One regular expression for a whole word list, shaped as a trie of the words' characters.

Python's re tries the branches of `a|b|c` one after another at every position, so a list of
hundreds of words costs hundreds of attempts per character. A trie-shaped pattern branches on
one character at a time: a text is scanned in one pass, almost as fast as for a single word.
Like a longest-first alternation, it prefers the longest word that matches at a position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any


def trie_pattern(words: Iterable[str]) -> str:
    """A regular expression (no anchors, no groups that capture) matching exactly the given words."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here
    return _branch(root)


def _branch(node: dict[str, Any]) -> str:
    run = ""  # a chain of single children is one literal run (keeps the recursion shallow)
    while len(node) == 1 and "" not in node:
        char, node = next(iter(node.items()))
        run += re.escape(char)
    ends = "" in node
    leaves, branches = [], []
    for char in sorted(key for key in node if key):
        rest = _branch(node[char])
        if rest:
            branches.append(re.escape(char) + rest)
        else:
            leaves.append(re.escape(char))
    if leaves:
        branches.append(leaves[0] if len(leaves) == 1 else "[" + "".join(leaves) + "]")
    if not branches:
        return run
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return run + (f"(?:{body})?" if ends else body)
