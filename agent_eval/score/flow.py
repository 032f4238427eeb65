"""The best weighted pairing of two sides of classes with multiplicities: a min-cost flow, iterative.

Primal-dual: each phase finds the cheapest augmenting paths (Dijkstra on reduced costs) and pushes a
blocking flow along all of them at once (Dinic on the zero-reduced-cost edges). The weights are the small
integers of matched fields, so the phases are few; nothing recurses, and memory is linear in the edges.
"""
from __future__ import annotations

import heapq
from collections import deque

_INF = float("inf")


class ClassGraph:
    """Left classes (expected calls) and right classes (actual calls), each with a count of members; an
    edge pairs members of a left and a right class for a positive integer weight."""

    def __init__(self, left: list[int], right: list[int]) -> None:
        self.n_left, self.n_right = len(left), len(right)
        self.sink = self.n_left + self.n_right + 1
        self._to: list[int] = []
        self._cap: list[int] = []
        self._cost: list[int] = []
        self._out: list[list[int]] = [[] for _ in range(self.sink + 1)]
        self._pairs: list[tuple[int, int, int, int]] = []  # (edge id, left, right, weight)
        self._left, self._right = left, right
        for i, count in enumerate(left):
            self._edge(0, 1 + i, count, 0)
        for j, count in enumerate(right):
            self._edge(1 + self.n_left + j, self.sink, count, 0)

    def _edge(self, u: int, v: int, cap: int, cost: int) -> int:
        eid = len(self._to)
        self._to += [v, u]
        self._cap += [cap, 0]
        self._cost += [cost, -cost]
        self._out[u].append(eid)
        self._out[v].append(eid + 1)
        return eid

    def add_edge(self, left: int, right: int, weight: int) -> None:
        """Members of left class `left` may pair with those of right class `right`, each pair worth weight."""
        if weight <= 0:
            return
        cap = min(self._left[left], self._right[right])
        eid = self._edge(1 + left, 1 + self.n_left + right, cap, -weight)
        self._pairs.append((eid, left, right, weight))

    def best_flow(self) -> list[tuple[int, int, int, int]]:
        """(left, right, pairs, weight) of a pairing of the greatest total weight."""
        if not self._pairs:
            return []
        potential = self._initial_potential()
        while True:
            dist = self._dijkstra(potential)
            if dist[self.sink] == _INF or dist[self.sink] + potential[self.sink] - potential[0] >= 0:
                break  # no path left, or none that adds weight
            reach = max(d for d in dist if d != _INF)
            for v in range(self.sink + 1):
                potential[v] += dist[v] if dist[v] != _INF else reach
            self._blocking_flows(potential)
        return [(left, right, self._cap[eid + 1], w) for eid, left, right, w in self._pairs if self._cap[eid + 1]]

    def _initial_potential(self) -> list[float]:
        # Shortest distances of the acyclic starting graph: source -> left 0, left -> right -weight.
        potential: list[float] = [0.0] * (self.sink + 1)
        for eid, _left, right, _w in self._pairs:
            node = 1 + self.n_left + right
            potential[node] = min(potential[node], self._cost[eid])
        potential[self.sink] = min(potential[1 + self.n_left:self.sink], default=0.0)
        return potential

    def _reduced(self, eid: int, u: int, potential: list[float]) -> float:
        return self._cost[eid] + potential[u] - potential[self._to[eid]]

    def _dijkstra(self, potential: list[float]) -> list[float]:
        dist = [_INF] * (self.sink + 1)
        dist[0] = 0.0
        heap = [(0.0, 0)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            for eid in self._out[u]:
                if self._cap[eid] <= 0:
                    continue
                v = self._to[eid]
                nd = d + self._reduced(eid, u, potential)
                if nd < dist[v]:
                    dist[v] = nd
                    heapq.heappush(heap, (nd, v))
        return dist

    def _blocking_flows(self, potential: list[float]) -> None:
        """Max flow over the edges of zero reduced cost (Dinic, with an explicit stack)."""
        admissible = [[eid for eid in self._out[u] if self._reduced(eid, u, potential) == 0]
                      for u in range(self.sink + 1)]
        while True:
            level = self._levels(admissible)
            if level[self.sink] < 0:
                return
            arc = [0] * (self.sink + 1)
            while self._augment(admissible, level, arc):
                pass

    def _levels(self, admissible: list[list[int]]) -> list[int]:
        level = [-1] * (self.sink + 1)
        level[0] = 0
        queue = deque([0])
        while queue:
            u = queue.popleft()
            for eid in admissible[u]:
                v = self._to[eid]
                if self._cap[eid] > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    queue.append(v)
        return level

    def _augment(self, admissible: list[list[int]], level: list[int], arc: list[int]) -> bool:
        """Push one path's bottleneck from the source to the sink along the level graph; False if none."""
        path: list[int] = []  # edge ids from the source
        u = 0
        while u != self.sink:
            edges = admissible[u]
            while arc[u] < len(edges):
                eid = edges[arc[u]]
                v = self._to[eid]
                if self._cap[eid] > 0 and level[v] == level[u] + 1:
                    break
                arc[u] += 1
            if arc[u] == len(edges):  # a dead end: retreat
                if not path:
                    return False
                level[u] = -1
                eid = path.pop()
                u = self._to[eid ^ 1]
                arc[u] += 1
                continue
            eid = edges[arc[u]]
            path.append(eid)
            u = self._to[eid]
        pushed = min(self._cap[eid] for eid in path)
        for eid in path:
            self._cap[eid] -= pushed
            self._cap[eid ^ 1] += pushed
        return True
