"""Dependency cycles between transactions (Elle's G0 / G1c), over ww and wr edges.

Owns the transaction graph of a history: a ``wr`` edge T1 -> T2 when T2 polled a
value T1 wrote, a ``ww`` edge T1 -> T2 when T2's write directly follows T1's write
in some partition's log.  Strongly connected components (Tarjan) give the cycles:
a cycle of ww edges only is G0, a cycle of wr edges only is G1c, a cycle that
needs both kinds is reported as G1c-ww (allowed: Kafka has no write isolation).
"""
from __future__ import annotations

from collections import deque


class Graph:
    def __init__(self) -> None:
        self.edges: dict[int, dict[int, set]] = {}     # a -> {b: {"ww", "wr"}}

    def add(self, a: int, b: int, kind: str) -> None:
        if a == b:
            return
        edges = self.edges          # (no dict or set built and thrown away: thousands of edges per history)
        out = edges.get(a)
        if out is None:
            out = edges[a] = {}
        kinds = out.get(b)
        if kinds is None:
            out[b] = {kind}
        else:
            kinds.add(kind)
        if b not in edges:
            edges[b] = {}

    def restricted(self, kind: str) -> dict[int, list[int]]:
        return {a: [b for b, ks in out.items() if kind in ks] for a, out in self.edges.items()}

    def full(self) -> dict[int, list[int]]:
        return {a: list(out) for a, out in self.edges.items()}


def strongly_connected(adj: dict[int, list[int]]) -> list[list[int]]:
    """Tarjan's algorithm, iterative; returns the components with more than one node."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in sorted(adj):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = adj.get(v, [])
            recurse = False
            while i < len(succ):
                w = succ[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def find_cycle(adj: dict[int, list[int]], component: list[int]) -> list[int]:
    """One cycle through the component's first node (BFS back to it), as a node list."""
    members = set(component)
    start = component[0]
    prev: dict[int, int] = {}
    q = deque([start])
    seen = {start}
    while q:
        v = q.popleft()
        for w in adj.get(v, []):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return list(reversed(path))
            if w not in seen:
                seen.add(w)
                prev[w] = v
                q.append(w)
    return list(component)


def cycles(graph: Graph) -> list[tuple[str, list[int]]]:
    """(anomaly name, cycle) for each cyclic component: G1c (wr only), G0 (ww only), G1c-ww (mixed)."""
    found: list[tuple[str, list[int]]] = []
    full = graph.full()
    full_components = strongly_connected(full)
    if not full_components:
        return found           # no cycle at all: none in the wr or ww edges alone either (they are subgraphs)
    covered: set = set()
    for kind, name in (("wr", "G1c"), ("ww", "G0")):
        adj = graph.restricted(kind)
        for comp in strongly_connected(adj):
            found.append((name, find_cycle(adj, comp)))
            covered.update(comp)
    for comp in full_components:
        if not set(comp) <= covered:
            found.append(("G1c-ww", find_cycle(full, comp)))
    return found
