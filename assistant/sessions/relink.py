"""Putting a damaged chat's readable entries back into one tree, on the branch that was
active; the rules: docs/ARCHITECTURE.md ("Damaged chats")."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

from assistant.sessions.entries import Entry

#: How many damaged lines a salvaged parent chain may pass through.
_MOST_HOPS = 64
#: Characters an id keeps at its start or end that still identify it (when unique).
_PIECE = 8
_SHORTEST = 4
#: Runs of id characters in a damaged line (ids are hex; keys such as parent_id come too).
_TOKEN = re.compile(rb"[A-Za-z0-9_-]{4,200}")
_HEAD_END = re.compile(rb"timestamp|\"type\"|\"message\"")
_TIMESTAMP = re.compile(rb"stamp.{0,3}?([0-9]{6,}(?:\.[0-9]+)?)")
_KEYS = frozenset({"parent_id", "null"})
_INNER_ID = re.compile(rb'"id"\s*:\s*"([A-Za-z0-9_-]{4,200})"')


def relink(
    items: Sequence[tuple[int, Entry]],
    damaged: Sequence[tuple[int, bytes]],
    last_line: int = 0,
    window: tuple[float, float] | None = None,
) -> tuple[list[Entry], list[tuple[int, str]], str | None, list[tuple[int, str]]]:
    """(entries in tree order, re-attached entries, the active position when it is not the last
    entry, entries that came before their parent in the file). ``window``: the times entries
    can have been written in; a timestamp outside it was damaged."""
    known = {entry.id for _, entry in items}
    salvage = _Salvage([raw for _, raw in damaged], known, window)
    entries = [entry for _, entry in items]
    lines = [line for line, _ in items]
    times = _times(entries, window)
    parents: dict[str, str | None] = {e.id: e.parent_id for e in entries}
    # what was written, in order (timestamp, then line): readable entries and the damaged
    # lines whose timestamp can still be read
    timeline: list[tuple[float, int, int, str | None]] = [
        (times[i], lines[i], i, None) for i in range(len(entries))
    ]
    for n, (lineno, _raw) in enumerate(damaged):
        stamp = salvage.timestamps[n]
        if stamp is not None:
            timeline.append((stamp, lineno, -1 - n, None))
    timeline.sort()
    reattached: list[tuple[int, str]] = []

    def written_before(i: int, lost: int | None = None) -> str | None:
        """Where entry ``i`` most likely hung: the entry written just before it, never one below
        it; with ``lost`` (a damaged line whose parent is gone), the one before that line."""
        me = entries[i]
        at = timeline.index((times[i], lines[i], i, None))
        stamp = salvage.timestamps[lost] if lost is not None else None
        if lost is not None and stamp is not None:
            at = timeline.index((stamp, damaged[lost][0], -1 - lost, None))
        for _, _, index, _ in reversed(timeline[:at]):
            if index >= 0:
                candidate: str | None = entries[index].id
            else:
                found, candidate = salvage.parent_of_line(-1 - index)
                if not found:
                    continue
            if candidate is None or not _below(candidate, me.id, parents):
                return candidate
        return None

    for i, entry in enumerate(entries):
        parent = entry.parent_id
        if parent is None or parent in known:
            continue
        found, new, lost = salvage.ancestor(parent)
        if not found or (new is not None and _below(new, entry.id, parents)):
            new = written_before(i, lost)
        parents[entry.id] = new
        reattached.append((lines[i], entry.id))

    order = _tree_order(entries, parents)
    for attempt in range(3):  # loops: parents that never come
        if not order.loose:
            break
        for i in order.loose:
            parents[entries[i].id] = written_before(i) if attempt < 2 else None
            reattached.append((lines[i], entries[i].id))
        order = _tree_order(entries, parents)
    placed = order.placed
    moved = order.moved or (bool(damaged) and _last_out_of_time(times))
    leaf = _active(entries, times, placed, parents, moved, salvage, damaged, last_line)
    active = None
    if leaf is not None and placed and placed[-1] != leaf:
        if entries[leaf].id in set(parents.values()):
            active = entries[leaf].id  # entries hang from it: it cannot be moved last
        else:
            placed.remove(leaf)
            placed.append(leaf)
    out = []
    for i in placed:
        entry = entries[i]
        if parents[entry.id] != entry.parent_id:
            entry = entry.model_copy(update={"parent_id": parents[entry.id]})
        out.append(entry)
    late = [(lines[i], entries[i].id) for i in order.late]
    return out, sorted(set(reattached)), active, sorted(late)


def _active(
    entries: list[Entry], times: list[float], placed: list[int],
    parents: dict[str, str | None], moved: bool,
    salvage: _Salvage, damaged: Sequence[tuple[int, bytes]], last_line: int,
) -> int | None:
    """The index of the entry that is the active position (None: keep the last placed)."""
    last_damaged = next((n for n, (line, _) in enumerate(damaged) if line == last_line), None)
    if last_damaged is not None and salvage.own_known(last_damaged) is not None:
        moved = True  # the last line is a copy of an earlier one: as if lines were moved
    elif last_damaged is not None and (not moved or _newest(salvage, last_damaged, times)):
        # the last line, written last, is unreadable: the active position is where it hung
        found, parent = salvage.parent_of_line(last_damaged)
        if found and parent is not None:
            return next(i for i, e in enumerate(entries) if e.id == parent)
    if moved and placed:  # lines were moved: the newest entry that nothing hangs from
        has_children = {p for p in parents.values() if p is not None}
        leaves = [i for i in placed if entries[i].id not in has_children]
        return max(leaves, key=lambda i: (times[i], i))
    return None


def _newest(salvage: _Salvage, n: int, times: list[float]) -> bool:
    """Damaged line ``n`` was written after every readable entry (unreadable time: last)."""
    stamp = salvage.timestamps[n]
    return stamp is None or all(t <= stamp for t in times)


def _last_out_of_time(times: list[float]) -> bool:
    """The last entry is out of written order (see docs/ARCHITECTURE.md, "Damaged chats")."""
    return bool(times) and _longest_in_order(times[:-1]) >= _longest_in_order(times)


def _longest_in_order(times: list[float]) -> int:
    """Length of the longest non-decreasing subsequence."""
    tails: list[float] = []
    for stamp in times:
        at = bisect.bisect_right(tails, stamp)
        if at == len(tails):
            tails.append(stamp)
        else:
            tails[at] = stamp
    return len(tails)


def _plausible(stamp: float, window: tuple[float, float] | None) -> bool:
    return window is None or window[0] <= stamp <= window[1]


def _times(entries: list[Entry], window: tuple[float, float] | None) -> list[float]:
    """Each entry's timestamp, or (damaged: outside ``window``) the one before it."""
    out: list[float] = []
    for entry in entries:
        stamp = entry.timestamp
        if not _plausible(stamp, window):
            stamp = out[-1] if out else (window[0] if window else 0.0)
        out.append(stamp)
    return out


class _Salvage:
    """What damaged lines still say about their entries: their own and their parent's ids."""

    def __init__(
        self, damaged: Sequence[bytes], known: set[str], window: tuple[float, float] | None
    ) -> None:
        self.known = known
        self.tokens: list[list[str]] = []
        #: Every ``"id":"..."`` value of the line (a message's or compaction's own id is
        #: repeated inside it, so it survives a cut at the start of the line).
        self.ids: list[set[str]] = []
        self.nulls: list[bool] = []
        self.timestamps: list[float | None] = []
        for raw in damaged:
            end = _HEAD_END.search(raw, 0, 400)
            head = raw[: end.start() if end else 160]
            self.tokens.append([t for t in _id_runs(head) if t not in _KEYS])
            self.nulls.append(b"null" in head)
            self.ids.append({m.group(1).decode("ascii") for m in _INNER_ID.finditer(raw)})
            stamp = _TIMESTAMP.search(raw, 0, 400)
            try:
                value = float(stamp.group(1)) if stamp else None
                plausible = value is not None and _plausible(value, window)
                self.timestamps.append(value if plausible else None)
            except ValueError:
                self.timestamps.append(None)

    def ancestor(self, parent: str) -> tuple[bool, str | None, int | None]:
        """(found, the nearest readable ancestor, the damaged line where the way up was lost)
        going up from ``parent`` through damaged lines."""
        current: str | None = parent
        lost: int | None = None
        for _ in range(_MOST_HOPS):
            if current is None or current in self.known:
                return True, current, None
            close = _closest(current, self.known, weak=False)
            line = self._line_of(current, shortest=None) if close is None else None
            if close is None and line is None:  # a damaged line that surely was it first
                line = self._line_of(current, shortest=_PIECE)
            if close is None and line is None:
                close = _closest(current, self.known)
                line = self._line_of(current) if close is None else None
            if close is not None:
                return True, close, None
            if line is None:
                return False, None, lost
            lost = line
            found, current = self._parent_token(line, current)
            if not found:
                return False, None, lost
        return False, None, lost

    def parent_of_line(self, n: int) -> tuple[bool, str | None]:
        """(found, nearest readable ancestor) of damaged line ``n``'s entry."""
        found, parent = self._parent_token(n, None)
        if found and parent is not None:
            found, parent, _ = self.ancestor(parent)
        return found, parent

    def own_known(self, n: int) -> str | None:
        """The readable entry damaged line ``n`` is a copy of (its own id is known)."""
        tokens = self.tokens[n]
        if tokens and tokens[0] in self.known and (len(tokens) > 1 or self.nulls[n]):
            return tokens[0]
        return None

    def _line_of(self, entry_id: str, *, shortest: int | None = _SHORTEST) -> int | None:
        """The damaged line that was entry ``entry_id``; ``shortest``: the fewest characters of a
        damaged own id that still match (None: the whole id only)."""
        for n, tokens in enumerate(self.tokens):
            if tokens[:1] == [entry_id] or entry_id in self.ids[n]:
                return n
        if shortest is None:
            return None
        for n, tokens in enumerate(self.tokens):  # the line's own id damaged
            if tokens and _matches(tokens[0], entry_id, shortest):
                return n
        return None

    def _parent_token(self, n: int, own: str | None) -> tuple[bool, str | None]:
        """(found, the parent id) damaged line ``n`` names; ``own``: its entry's id when known."""
        tokens = self.tokens[n]
        if own is not None:
            at = next((i for i, t in enumerate(tokens) if _matches(t, own)), None)
            if at is None:  # its own id was cut away: what is left names the parent
                rest = tokens
            else:
                mine = tokens[at]
                if mine[-_PIECE:] != own[-_PIECE:] and not _flipped(mine, own):
                    joined = _closest_end(mine, self.known - {own})
                    if joined is not None:
                        return True, joined
                rest = tokens[at + 1:]
        elif len(tokens) > 1 or self.nulls[n]:
            rest = tokens[1:]
        else:
            rest = tokens
        for token in rest:
            if token in self.known:
                return True, token
            # Surest first: an id barely changed, a damaged line that is it whole, and only
            # then an id by its first or last few characters (four of sixteen can be
            # another entry's).
            close = _closest(token, self.known, weak=False)
            if close is None and self._line_of(token, shortest=None) is not None:
                return True, token
            if close is None:
                close = _closest(token, self.known)
            if close is not None:
                return True, close
            if self._line_of(token) is not None:
                return True, token
        if self.nulls[n]:
            return True, None
        return False, None


def _id_runs(head: bytes) -> list[str]:
    """The id-like runs of a damaged line's head; two runs one byte apart come back as one id
    with ``?`` at the flipped byte (why: docs/ARCHITECTURE.md, "Damaged chats")."""
    runs: list[str] = []
    end = -2
    for m in _TOKEN.finditer(head):
        text = m.group().decode("ascii")
        if runs and m.start() == end + 1 and runs[-1] not in _KEYS and text not in _KEYS:
            runs[-1] += "?" + text
        else:
            runs.append(text)
        end = m.end()
    return runs


def _flipped(a: str, b: str) -> bool:
    """``a`` is ``b``, or ``b`` with at most two characters changed."""
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) <= 2


def _matches(a: str, b: str, shortest: int = _SHORTEST) -> bool:
    """``a`` is ``b`` with at most two characters changed, or cut keeping its first or last
    ``_PIECE`` characters (or all of them, when it has ``shortest`` or more)."""
    if _flipped(a, b):
        return True
    k = min(_PIECE, len(a), len(b))
    return k >= shortest and (a[:k] == b[:k] or a[-k:] == b[-k:])


def _closest(entry_id: str, pool: Iterable[str], *, weak: bool = True) -> str | None:
    """The one id in ``pool`` that ``entry_id`` is a damaged copy of (``weak``: down to four
    kept characters), else None."""
    ids = list(pool)
    found = [other for other in ids if _matches(entry_id, other, shortest=_PIECE)]
    if len(found) == 1:
        return found[0]
    if found or not weak:
        return None
    for k in range(_PIECE - 1, _SHORTEST - 1, -1):
        if len(entry_id) < k:
            continue
        head, tail = entry_id[:k], entry_id[-k:]
        hits = [o for o in ids if len(o) >= k and (o.startswith(head) or o.endswith(tail))]
        if len(hits) == 1:
            return hits[0]
        if hits:
            return None
    return None


def _closest_end(token: str, pool: Iterable[str]) -> str | None:
    """The one id in ``pool`` whose last characters (eight down to four) ``token`` ends with."""
    ids = list(pool)
    for k in range(_PIECE, _SHORTEST - 1, -1):
        hits = [other for other in ids if len(other) >= k and token.endswith(other[-k:])]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            return None
    return None


def _below(candidate: str, entry_id: str, parents: dict[str, str | None]) -> bool:
    """Whether ``candidate`` is ``entry_id`` or below it (attaching to it would make a loop)."""
    current: str | None = candidate
    for _ in range(len(parents) + 1):
        if current is None:
            return False
        if current == entry_id:
            return True
        current = parents.get(current)
    return True  # a loop above the candidate: do not attach to it


class _Order:
    def __init__(self) -> None:
        self.placed: list[int] = []
        self.loose: list[int] = []
        #: Some entry was placed after an entry that comes later in the file.
        self.moved = False
        #: Entries placed after a later line (their parent came after them in the file).
        self.late: list[int] = []


def _tree_order(entries: list[Entry], parents: dict[str, str | None]) -> _Order:
    """Entries in file order, each one held back until its parent is placed."""
    order = _Order()
    done: set[str] = set()
    waiting: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        parent = parents[entry.id]
        if parent is not None and parent not in done:
            waiting.setdefault(parent, []).append(i)
            continue
        stack = [i]
        while stack:
            j = stack.pop()
            if order.placed and j < order.placed[-1]:
                order.moved = True
                order.late.append(j)
            order.placed.append(j)
            done.add(entries[j].id)
            stack.extend(reversed(waiting.pop(entries[j].id, [])))
    order.loose = sorted(j for held in waiting.values() for j in held)
    return order
