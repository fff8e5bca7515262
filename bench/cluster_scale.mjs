// cluster_scale.mjs - the cluster protocol (web/cluster/protocol.js with
// tree.js) at 10, 100 and 1,000 ranks, as a star and as a tree, on simulated
// links (web/cluster/scale_sim.js: 100 Mbit/s up and down, 5-25 ms access
// latency each way, 0.1% packet loss as retransmissions; mnist-cnn's 5,258
// parameters, ranks computing in 15-30 ms). Per run: boot, a steady window,
// churn (joins, silent departures, goodbyes, a crash in the middle of a step),
// a leader crash, and a check that every live rank ends bit-identical; for
// the tree, the connections per peer of the partial mesh (overlay.js).
// Prints a table (docs/cluster.md, "1,000 ranks, simulated") and writes JSON.
//
//   node bench/cluster_scale.mjs [--sizes=10,100,1000] [--topologies=star,tree] [--fanout=4] [--out=FILE] [--quiet]
// About 12 minutes on a 2-core machine, 10 of them the star at 1,000 ranks
// (a million heartbeat deliveries per simulated second, and a leader whose
// uplink falls minutes behind); `make bench` runs it, with --out.
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { runScale, DEFAULT_LINK } from '../web/cluster/scale_sim.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v = 'true'] = a.replace(/^--/, '').split('=');
  return [k, v];
}));
const sizes = (args.sizes ?? '10,100,1000').split(',').map(Number);
const topologies = (args.topologies ?? 'star,tree').split(',');
const fanout = Number(args.fanout ?? 4);
const quiet = args.quiet === 'true';

const kb = (b) => (b >= 1e6 ? `${(b / 1e6).toFixed(1)} MB` : `${(b / 1e3).toFixed(0)} KB`);
const s1 = (ms) => `${(ms / 1000).toFixed(1)} s`;

const rows = [];
for (const n of sizes) {
  for (const topology of topologies) {
    const t0 = Date.now();
    const r = await runScale({
      n, topology, fanout, steady: n >= 1000 ? 5 : 10, churnSteps: n >= 1000 ? 4 : 6,
      log: quiet ? null : (line) => process.stderr.write(`${line}\n`),
    });
    r.wallMs = Date.now() - t0;
    rows.push(r);
    if (!r.bitIdentical) throw new Error(`n=${n} ${topology}: live ranks are not bit-identical`);
    if (r.handlerErrors) throw new Error(`n=${n} ${topology}: ${r.handlerErrors} handler errors`);
    process.stderr.write(`n=${n} ${topology}: ${(r.wallMs / 1000).toFixed(1)} s wall for ${(r.simMs / 1000).toFixed(1)} s simulated\n`);
  }
}

const L = DEFAULT_LINK;
console.log(`\nCluster at scale (simulated: ${L.upMbps} Mbit/s up/down, ${L.accessMs[0]}-${L.accessMs[1]} ms access latency each way, ` +
  `${L.packetLoss * 100}% packet loss; ${rows[0]?.dim} params; tree fan-out ${fanout})\n`);
console.log('| ranks | topology | leader egress per step (data path) | data links per rank: leader / others (heartbeats) | WebRTC connections per peer: full mesh / partial mesh, max (mean) | steps/s | buckets per step | leader crash: new leader / next step | live ranks bit-identical |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.n.toLocaleString('en')} | ${r.topology}${r.topology === 'tree' ? ` (depth ${r.depth})` : ''} | ${kb(r.leaderBytesPerStep)} (${kb(r.leaderDataBytesPerStep)}) | ` +
    `${r.maxDataLinks} / ${r.maxDataLinksFollower} (${r.heartbeatLinks}) | ${r.n - 1} / ${r.mesh ? `${r.mesh.maxLinks} (${r.mesh.meanLinks.toFixed(1)})` : '-'} | ${r.stepsPerSec.toFixed(2)} | ${Math.round(r.contributorsPerStep).toLocaleString('en')} of ${r.n.toLocaleString('en')} | ` +
    `${s1(r.takeoverMs)} / ${s1(r.recoveryMs)} | ` +
    `${r.bitIdentical ? 'yes' : 'NO'} (${r.live}) |`);
}
console.log('\nchurn (joins / silent / goodbyes, the step with the crash: contributors of members, missing):');
for (const r of rows) {
  const c = r.churn;
  if (!c) continue;
  const k = c.crashStep;
  console.log(`  ${r.n} ${r.topology}: ${c.joins} / ${c.silent} / ${c.byes}; ${c.steps} steps, ${c.shortSteps} at the deadline; ` +
    `${k ? `crash step ${k.contributors} of ${k.members} in ${Math.round(k.ms)} ms${k.missing ? `, missing ${k.missing.length}` : ''}` : 'no crash step seen'}` +
    `${r.topology === 'tree' ? `, ${c.reattached} subtrees re-attached` : ''}`);
}
console.log('\npartial mesh (overlay.js over the live ranks; the tree\'s data path over it):');
for (const r of rows) {
  if (!r.mesh) continue;
  console.log(`  ${r.n} tree: steady ${r.mesh.maxLinks} connections per peer at most (mean ${r.mesh.meanLinks.toFixed(2)}), ` +
    `${r.mesh.dataOffOverlay} data-path pairs off the overlay, one component after any single death: ${r.mesh.survivesOneDeath ?? 'not checked'}; ` +
    `after churn and the leader crash ${r.meshEnd.maxLinks} (mean ${r.meshEnd.meanLinks.toFixed(2)})`);
}
if (args.out) {
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, JSON.stringify({ link: DEFAULT_LINK, fanout, rows }, null, 1));
}
