// overlay.js - which peers of a large WebRTC room connect to which (the
// partial mesh of partial_mesh.js, measured by scale_sim.js). Pure functions.
//
// The step's data path above policy.treeAbove ranks is tree.js's tree: the
// order [leader, ...the other ranks sorted] cut into pre-order slices of
// fan-out k (splitSubtree). The overlay is that same tree over the room's
// peers (a rank's parent and its <= k children) plus a ring over the same
// order (each rank's predecessor and successor, the last closing on the
// leader), so a peer holds at most k + 3 connections whatever n is:
//   - when every rank of the room is a step member, each params and partial
//     message of a tree step goes over a direct connection;
//   - the tree alone falls apart when an inner rank dies (its children lose
//     their only link); with the ring the rest stays connected after any one
//     death (a ring without one node is a path through all the others), so
//     the control messages (heartbeats, elections, halts), flooded over the
//     overlay, still reach everyone and the re-attached subtree's params and
//     partials reach it over a few hops until the overlay is laid out again;
//   - in pre-order a rank's ring successor is its first child or the next
//     subtree's head, so the ring adds at most 2 links to the tree's.
//
//   overlayOrder(ranks, leader)            -> [leader, ...others sorted] (leader first when it is a rank)
//   overlayNeighbours(self, ranks, { leader, fanout }) -> { parent, children, ring, all: Set }
//   overlayEdges(ranks, { leader, fanout }) -> Map rank -> Set of neighbours (every rank at once)
//   greeterOf(ranks, leader)              -> the rank that keeps the room's lobby open for newcomers
//   edgeRoomId(roomId, a, b)              -> the Trystero room of the link between ranks a and b
//   connected(edges, without)             -> whether the overlay minus `without` is one component
import { splitSubtree } from './tree.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

/** The overlay's order: the leader first (when it is one of `ranks`), then the others sorted, as tree.js lays out a step. */
export function overlayOrder(ranks, leader = null) {
  const ids = [...new Set(ranks)].filter((id) => typeof id === 'string' && id);
  const others = ids.filter((id) => id !== leader).sort();
  return ids.includes(leader) ? [leader, ...others] : others;
}

function checkFanout(fanout) {
  if (!Number.isInteger(fanout) || fanout < 1) throw new RlxError(STATUS.INVALID_ARG, `fanout must be a positive integer, got ${fanout}`);
}

/** parent and children of every rank of `order` under tree.js's pre-order split (one walk, O(n)). */
function treeLinks(order, fanout) {
  const parent = new Map([[order[0], null]]);
  const children = new Map();
  const stack = [{ ids: order, at: 0 }];
  while (stack.length) {
    const chunk = stack.pop();
    const kids = splitSubtree(chunk.ids, fanout, chunk.at);
    children.set(chunk.ids[0], kids.map((c) => c.ids[0]));
    for (const c of kids) {
      parent.set(c.ids[0], chunk.ids[0]);
      stack.push(c);
    }
  }
  return { parent, children };
}

/** Every rank's neighbours: Map rank -> Set (symmetric). */
export function overlayEdges(ranks, { leader = null, fanout = 4 } = {}) {
  checkFanout(fanout);
  const order = overlayOrder(ranks, leader);
  const edges = new Map(order.map((id) => [id, new Set()]));
  if (order.length < 2) return edges;
  const link = (a, b) => {
    if (a === b) return;
    edges.get(a).add(b);
    edges.get(b).add(a);
  };
  const { children } = treeLinks(order, fanout);
  for (const [id, kids] of children) for (const c of kids) link(id, c);
  for (let i = 0; i < order.length; i++) link(order[i], order[(i + 1) % order.length]);
  return edges;
}

/** One rank's view: its tree parent and children, its ring neighbours, and all of them. */
export function overlayNeighbours(self, ranks, { leader = null, fanout = 4 } = {}) {
  checkFanout(fanout);
  const order = overlayOrder([...ranks, self], leader);
  const i = order.indexOf(self);
  const n = order.length;
  if (n < 2) return { parent: null, children: [], ring: [], all: new Set() };
  const { parent, children } = treeLinks(order, fanout);
  const ring = [...new Set([order[(i + n - 1) % n], order[(i + 1) % n]])].filter((id) => id !== self);
  const p = parent.get(self) ?? null;
  const kids = children.get(self) ?? [];
  const all = new Set([...(p ? [p] : []), ...kids, ...ring]);
  return { parent: p, children: kids, ring, all };
}

/** The lobby's greeter: the leader when it is in the room, else the lowest rank id. */
export function greeterOf(ranks, leader = null) {
  const ids = [...ranks];
  if (leader && ids.includes(leader)) return leader;
  return ids.length ? ids.reduce((a, b) => (b < a ? b : a)) : null;
}

/** The Trystero room of the link between ranks a and b (the same name from both ends). */
export function edgeRoomId(roomId, a, b) {
  if (typeof roomId !== 'string' || !roomId) throw new RlxError(STATUS.INVALID_ARG, 'edgeRoomId needs the room id');
  if (typeof a !== 'string' || typeof b !== 'string' || !a || !b || a === b) throw new RlxError(STATUS.INVALID_ARG, 'edgeRoomId needs two different rank ids');
  return a < b ? `${roomId}/link/${a}/${b}` : `${roomId}/link/${b}/${a}`;
}

/** True when the ranks of `edges` other than `without` form one connected component. */
export function connected(edges, without = null) {
  const nodes = [...edges.keys()].filter((id) => id !== without);
  if (nodes.length < 2) return true;
  const seen = new Set([nodes[0]]);
  const todo = [nodes[0]];
  while (todo.length) {
    for (const next of edges.get(todo.pop())) {
      if (next === without || seen.has(next)) continue;
      seen.add(next);
      todo.push(next);
    }
  }
  return seen.size === nodes.length;
}
