'use strict';
/* node_peer.js - the Node.js peers of `make bench`, driven by bench.c.
 *
 *   node node_peer.js LIB MODE PORTS SECS PROCS MARKER
 *     LIB    ioredis-floor | node-redlock | semaphore-mutex | semaphore-redlock |
 *            semaphore-4 (redis-semaphore's Semaphore with 4 permits: holds
 *            overlap by design; the check is "at most 4 inside")
 *     MODE   uncontended | contended
 *     PORTS  comma-separated redis-server ports on 127.0.0.1 (1 or 5)
 *     SECS   seconds to run;  PROCS  contended worker processes
 *     MARKER a directory path the holder creates and removes (overlap check)
 *
 * Protocol on stdin/stdout: prints "ready <versions>" once connected and
 * warmed up (or "skipped: <why>" and exits). Uncontended: "slice SECS" runs
 * cycles for SECS and answers "done" (bench.c interleaves these slices with
 * its own rows), "result" prints the totals. Contended: "go" runs SECS and
 * prints the result. Both: "result key=value ..." lines; "exit" (or EOF)
 * closes the connections and quits.
 * Contended: PROCS forked workers, each with its own connections; one hold =
 * acquire, 1 ms critical section (mkdir MARKER, 1 ms timer, rmdir), release.
 * Timestamps are process.hrtime (CLOCK_MONOTONIC, one clock for every process
 * on the machine), so the parent can order every hold and measure handoffs.
 * Client-issued commands are counted by wrapping ioredis' sendCommand.
 * Library settings are the libraries' defaults (node-redlock: 10 retries
 * 200 ms +-100 ms apart, then it releases what it got and throws;
 * redis-semaphore: a try every 10 ms for 10 s), except the lease. A worker
 * whose acquire gave up calls acquire again, up to 30 s in all, and that
 * counts as one (long) wait, not an error - as a caller that must get the
 * lock would do. (node-redlock with retryCount -1 never gives up and never
 * releases a minority it holds from a failed round, so 8 contenders on 5
 * nodes livelock until those leases expire: not its default, not measured.) */
const path = require('path');
const fs = require('fs');
const crypto = require('crypto');
const childProcess = require('child_process');
const readline = require('readline');

// A worker is started as: node_peer.js worker LIB worker PORTS SECS IDX MARKER
const isWorker = process.argv[2] === 'worker';
const [lib, mode, portsArg, secsArg, procsArg, marker] = process.argv.slice(isWorker ? 3 : 2);
const MODS = path.join(__dirname, '..', 'node_modules');

function load() {
  try {
    const Redis = require(path.join(MODS, 'ioredis'));
    const Redlock = require(path.join(MODS, 'redlock')).default;
    const sem = require(path.join(MODS, 'redis-semaphore'));
    const ver = (m) => JSON.parse(fs.readFileSync(path.join(MODS, m, 'package.json'), 'utf8')).version;
    return { Redis, Redlock, sem, versions: `node=${process.versions.node} ioredis=${ver('ioredis')} redlock=${ver('redlock')} redis-semaphore=${ver('redis-semaphore')}` };
  } catch (e) {
    return { error: `npm packages not installed in bench/node_modules (${String(e.message).split('\n')[0]})` };
  }
}

const now = () => Number(process.hrtime.bigint()); // ns, CLOCK_MONOTONIC
const sleep1 = () => new Promise((r) => setTimeout(r, 1));
let counting = false;
let sent = 0;

function patchCounting(Redis) {
  const orig = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (command, stream) {
    if (counting) sent++;
    return orig.call(this, command, stream);
  };
}

async function connect(mods, ports) {
  const clients = ports.map((p) => new mods.Redis({ host: '127.0.0.1', port: p, maxRetriesPerRequest: 1 }));
  await Promise.all(clients.map((c) => c.ping()));
  return clients;
}

const RELEASE = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0";

/* acquire()/release() for one library. */
async function makeLocker(mods, libName, clients, key, ttl, contended) {
  if (libName === 'ioredis-floor') {
    const c = clients[0];
    const sha = await c.script('LOAD', RELEASE);
    const tok = crypto.randomBytes(16).toString('hex');
    return {
      acquire: async () => { if ((await c.set(key, tok, 'PX', ttl, 'NX')) !== 'OK') throw new Error('held'); },
      release: async () => { if ((await c.evalsha(sha, 1, key, tok)) !== 1) throw new Error('not ours'); },
    };
  }
  if (libName === 'node-redlock') {
    const rl = new mods.Redlock(clients);
    rl.on('error', () => {}); // node-redlock reports failed attempts as events, not just rejections
    let lock = null;
    return {
      acquire: async () => { lock = await rl.acquire([key], ttl); },
      release: async () => { await lock.release(); lock = null; },
    };
  }
  if (libName === 'semaphore-mutex' || libName === 'semaphore-redlock') {
    const opts = { lockTimeout: ttl };
    const m = libName === 'semaphore-mutex'
      ? new mods.sem.Mutex(clients[0], key, opts)
      : new mods.sem.RedlockMutex(clients, key, opts);
    return { acquire: () => m.acquire(), release: () => m.release() };
  }
  if (libName === 'semaphore-4') {
    const m = new mods.sem.Semaphore(clients[0], key, 4, { lockTimeout: ttl });
    return { acquire: () => m.acquire(), release: () => m.release() };
  }
  throw new Error(`unknown library ${libName}`);
}

function pct(sorted, p) {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/* stdin lines, one at a time */
function lines() {
  const rl = readline.createInterface({ input: process.stdin });
  const queue = [];
  const waiters = [];
  rl.on('line', (l) => { const w = waiters.shift(); if (w) w(l.trim()); else queue.push(l.trim()); });
  rl.on('close', () => { while (waiters.length) waiters.shift()('exit'); queue.push('exit'); });
  return () => new Promise((r) => { if (queue.length) r(queue.shift()); else waiters.push(r); });
}

/* Uncontended: warm up, "ready", then run "slice SECS" commands (bench.c
 * interleaves them with its own rows' slices) until "result" prints the
 * totals; "exit" quits. */
async function uncontended(mods, ports) {
  const next = lines();
  const clients = await connect(mods, ports);
  const key = `peer:${lib}:${ports.length}`;
  const lk = await makeLocker(mods, lib, clients, key, 30000, false);
  const warmEnd = now() + 0.3e9;
  for (let i = 0; i < 300 || now() < warmEnd; i++) { await lk.acquire(); await lk.release(); }
  process.stdout.write(`ready ${mods.versions}\n`);
  const samples = [];
  let errors = 0;
  let elapsed = 0;
  let cpuUs = 0;
  for (;;) {
    const cmd = (await next()).split(' ');
    if (cmd[0] === 'slice') {
      counting = true;
      const cpu0 = process.cpuUsage();
      const start = now();
      const end = start + Number(cmd[1]) * 1e9;
      let t = start;
      while (t < end) {
        const t0 = now();
        try { await lk.acquire(); } catch (e) { errors++; t = now(); if (errors > 1000) break; continue; }
        samples.push(now() - t0);
        try { await lk.release(); } catch (e) { errors++; }
        t = now();
      }
      elapsed += now() - start;
      const cpu = process.cpuUsage(cpu0);
      cpuUs += cpu.user + cpu.system;
      counting = false;
      process.stdout.write('done\n');
    } else if (cmd[0] === 'result') {
      samples.sort((a, b) => a - b);
      const n = samples.length;
      process.stdout.write(`result cycles=${n} secs=${(elapsed / 1e9).toFixed(4)} p50_us=${(pct(samples, 50) / 1e3).toFixed(1)}` +
        ` p99_us=${(pct(samples, 99) / 1e3).toFixed(1)} cpu_us=${n ? (cpuUs / n).toFixed(1) : 0}` +
        ` errors=${errors} client_cmds=${sent}\n`);
    } else break; // exit / EOF
  }
  await Promise.all(clients.map((c) => c.quit()));
}

async function worker(mods, ports, secs, markerDir, idx) {
  const clients = await connect(mods, ports);
  const key = `peer:${lib}:${ports.length}:contended`;
  const lk = await makeLocker(mods, lib, clients, key, 5000, true);
  process.send({ t: 'ready' });
  await new Promise((r) => process.once('message', r)); // go
  const res = { acq: 0, errors: 0, gaveUp: 0, overlaps: 0, cs: 0, wait: 0, maxWait: 0, holds: [] };
  counting = true;
  const end = now() + secs * 1e9;
  while (now() < end) {
    const t0 = now();
    let got = false;
    while (!got) {
      try { await lk.acquire(); got = true; } catch (e) {
        res.gaveUp++;
        if (now() - t0 < 30e9) continue;
        if (res.errors++ < 3) process.stderr.write(`node_peer ${lib}: acquire: ${e.message}\n`);
        break;
      }
    }
    const t1 = now();
    if (!got) { res.wait += t1 - t0; res.maxWait = Math.max(res.maxWait, t1 - t0); continue; }
    res.wait += t1 - t0; res.maxWait = Math.max(res.maxWait, t1 - t0);
    const c0 = now();
    let inside = null;
    // a semaphore of 4: one of 4 slot directories (none free: a 5th holder)
    const slots = lib === 'semaphore-4' ? [0, 1, 2, 3].map((k) => `${markerDir}-slot${k}`) : [markerDir];
    for (const d of slots) { try { fs.mkdirSync(d); inside = d; break; } catch (e) { /* taken */ } }
    if (!inside) res.overlaps++;
    else { await sleep1(); fs.rmdirSync(inside); }
    res.cs += now() - c0;
    res.acq++;
    const r0 = now();
    let ok = true;
    try { await lk.release(); } catch (e) { ok = false; if (res.errors++ < 3) process.stderr.write(`node_peer ${lib}: release: ${e.message}\n`); }
    res.holds.push([t1, ok ? r0 : 0, now(), idx]);
  }
  res.finish = now();
  counting = false;
  res.cmds = sent;
  process.send({ t: 'result', res });
  await new Promise((r) => process.once('message', r)); // exit
  await Promise.all(clients.map((c) => c.quit()));
  process.exit(0);
}

/* Handoffs over every hold sorted by acquire time (holds never overlap). */
function handoffs(holds) {
  holds.sort((a, b) => a[0] - b[0]);
  const call = []; const ret = []; const all = [];
  let same = 0; let bad = 0;
  for (let k = 0; k + 1 < holds.length; k++) {
    const a = holds[k]; const b = holds[k + 1];
    if (!a[1]) continue;
    if (b[0] < a[1]) { bad++; continue; }
    all.push(b[0] - a[1]);
    if (a[3] === b[3]) { same++; continue; }
    call.push(b[0] - a[1]); ret.push(b[0] - a[2]);
  }
  for (const v of [call, ret, all]) v.sort((x, y) => x - y);
  return { p50: pct(call, 50) / 1e3, p99: pct(call, 99) / 1e3, r50: pct(ret, 50) / 1e3, all50: pct(all, 50) / 1e3,
    retake: all.length ? same / all.length : 0, n: all.length, bad };
}

async function contended(mods, ports, secs, procs, markerDir) {
  const next = lines();
  const kids = [];
  const ready = [];
  const results = [];
  for (let i = 0; i < procs; i++) {
    const k = childProcess.fork(__filename, ['worker', lib, 'worker', portsArg, secsArg, String(i), markerDir], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    kids.push(k);
    ready.push(new Promise((r, j) => {
      k.on('message', (m) => { if (m.t === 'ready') r(); else if (m.t === 'result') results.push(m.res); });
      k.on('exit', (code) => j(new Error(`worker exited ${code}`)));
    }));
  }
  await Promise.all(ready);
  process.stdout.write(`ready ${mods.versions}\n`);
  if ((await next()) !== 'go') { kids.forEach((k) => k.kill()); process.exit(1); }
  const start = now();
  kids.forEach((k) => k.send('go'));
  while (results.length < procs) await new Promise((r) => setTimeout(r, 5));
  let acq = 0; let errors = 0; let gaveUp = 0; let overlaps = 0; let cs = 0; let wait = 0; let maxWait = 0; let cmds = 0; let finish = 0;
  let minAcq = Infinity; let maxAcq = 0;
  const holds = [];
  for (const r of results) {
    acq += r.acq; errors += r.errors; gaveUp += r.gaveUp; overlaps += r.overlaps; cs += r.cs; wait += r.wait; cmds += r.cmds;
    maxWait = Math.max(maxWait, r.maxWait); finish = Math.max(finish, r.finish);
    minAcq = Math.min(minAcq, r.acq); maxAcq = Math.max(maxAcq, r.acq);
    for (const h of r.holds) holds.push(h);
  }
  const h = lib === 'semaphore-4' ? { p50: 0, p99: 0, r50: 0, all50: 0, retake: 0, n: 0, bad: 0 } : handoffs(holds);
  process.stdout.write(`result acq=${acq} errors=${errors} overlaps=${overlaps} secs=${((finish - start) / 1e9).toFixed(4)}` +
    ` cs_us=${acq ? (cs / acq / 1e3).toFixed(1) : 0} max_wait_ms=${(maxWait / 1e6).toFixed(2)}` +
    ` mean_wait_ms=${acq + errors ? (wait / (acq + errors) / 1e6).toFixed(3) : 0} min_acq=${minAcq} max_acq=${maxAcq}` +
    ` client_cmds=${cmds} ho_p50_us=${h.p50.toFixed(1)} ho_p99_us=${h.p99.toFixed(1)} hor_p50_us=${h.r50.toFixed(1)}` +
    ` ho_all_p50_us=${h.all50.toFixed(1)} retake=${h.retake.toFixed(4)} ho_n=${h.n} ho_bad=${h.bad} gave_up=${gaveUp}\n`);
  await next();
  const exits = kids.map((k) => new Promise((r) => { if (k.exitCode !== null) r(); else k.on('exit', r); }));
  kids.forEach((k) => k.send('exit'));
  await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, 10000))]);
  process.exit(0);
}

async function main() {
  const mods = load();
  if (mods.error) { process.stdout.write(`skipped: ${mods.error}\n`); process.exit(0); }
  patchCounting(mods.Redis);
  if (isWorker) {
    await worker(mods, portsArg.split(',').map(Number), Number(secsArg), marker, Number(procsArg));
    return;
  }
  const ports = portsArg.split(',').map(Number);
  if (mode === 'uncontended') await uncontended(mods, ports);
  else await contended(mods, ports, Number(secsArg), Number(procsArg), marker);
  process.exit(0);
}

main().catch((e) => { process.stderr.write(`node_peer ${lib}: ${e.stack || e}\n`); process.exit(1); });
