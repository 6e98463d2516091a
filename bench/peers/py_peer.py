"""py_peer.py - the Python peer of `make bench` (redis-py's redis.lock.Lock,
from Debian's python3-redis), driven by bench.c.

    python3 py_peer.py LIB MODE PORTS SECS PROCS MARKER
      LIB    redis-py-floor | redis-py-lock
      MODE   uncontended | contended
      PORTS  comma-separated redis-server ports on 127.0.0.1 (the first is used)
      SECS   seconds to run;  PROCS  contended worker processes
      MARKER a directory the holder creates and removes (overlap check)

Same protocol and measurements as node_peer.js: "ready <versions>" (or
"skipped: <why>"); uncontended: "slice SECS" -> "done", "result"; contended:
"go" -> "result key=value ..."; "exit". Workers are forked
processes (multiprocessing, fork start method); time.monotonic_ns() is
CLOCK_MONOTONIC, one clock for every process of the machine. Client-issued
commands are counted by wrapping redis.Redis.execute_command. Lock settings
are redis-py's defaults (sleep=0.1 s between attempts, no blocking timeout)
except the lease."""
import os
import sys
import time

USAGE = "usage: py_peer.py LIB MODE PORTS SECS PROCS MARKER"

try:
    import redis  # Debian: python3-redis
except Exception as e:  # noqa: BLE001 - any import failure means: skip the row
    print("skipped: python3 module redis not importable (Debian package python3-redis): %s" % e, flush=True)
    sys.exit(0)

SENT = [0]
COUNTING = [False]
_orig_execute = redis.Redis.execute_command


def _counting_execute(self, *args, **kwargs):
    if COUNTING[0]:
        SENT[0] += 1
    return _orig_execute(self, *args, **kwargs)


redis.Redis.execute_command = _counting_execute

RELEASE = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0"


def versions():
    return "python=%d.%d.%d redis-py=%s" % (sys.version_info[0], sys.version_info[1], sys.version_info[2],
                                             redis.__version__)


class Locker:
    def __init__(self, lib, client, key, ttl_ms, contended):
        self.lib = lib
        self.client = client
        self.key = key
        self.ttl_ms = ttl_ms
        if lib == "redis-py-floor":
            self.tok = os.urandom(16).hex()
            self.sha = client.script_load(RELEASE)
        elif lib == "redis-py-lock":
            # redis-py's defaults (sleep=0.1, blocking_timeout=None: wait for as long as it takes)
            self.lock = client.lock(key, timeout=ttl_ms / 1000.0)
        else:
            raise SystemExit("unknown library %s" % lib)

    def acquire(self):
        if self.lib == "redis-py-floor":
            if not self.client.set(self.key, self.tok, nx=True, px=self.ttl_ms):
                raise RuntimeError("held")
        elif not self.lock.acquire():
            raise RuntimeError("acquire timed out")

    def release(self):
        if self.lib == "redis-py-floor":
            if self.client.evalsha(self.sha, 1, self.key, self.tok) != 1:
                raise RuntimeError("not ours")
        else:
            self.lock.release()


def pct(sorted_values, p):
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, len(sorted_values) * p // 100)]


def uncontended(lib, ports):
    """Warm up, "ready", then "slice SECS" commands (interleaved by bench.c
    with its own rows) until "result"; "exit" quits."""
    client = redis.Redis(host="127.0.0.1", port=ports[0])
    client.ping()
    lk = Locker(lib, client, "peer:%s:1" % lib, 30000, False)
    warm_end = time.monotonic_ns() + 300000000
    i = 0
    while i < 300 or time.monotonic_ns() < warm_end:
        lk.acquire()
        lk.release()
        i += 1
    print("ready %s" % versions(), flush=True)
    samples = []
    errors = 0
    elapsed = cpu = 0
    for line in sys.stdin:
        cmd = line.split()
        if cmd and cmd[0] == "slice":
            COUNTING[0] = True
            cpu0 = time.process_time_ns()
            start = time.monotonic_ns()
            end = start + int(float(cmd[1]) * 1e9)
            t = start
            while t < end:
                t0 = time.monotonic_ns()
                try:
                    lk.acquire()
                except Exception:  # noqa: BLE001
                    errors += 1
                    t = time.monotonic_ns()
                    if errors > 1000:
                        break
                    continue
                samples.append(time.monotonic_ns() - t0)
                try:
                    lk.release()
                except Exception:  # noqa: BLE001
                    errors += 1
                t = time.monotonic_ns()
            elapsed += time.monotonic_ns() - start
            cpu += time.process_time_ns() - cpu0
            COUNTING[0] = False
            print("done", flush=True)
        elif cmd and cmd[0] == "result":
            samples.sort()
            n = len(samples)
            print("result cycles=%d secs=%.4f p50_us=%.1f p99_us=%.1f cpu_us=%.1f errors=%d client_cmds=%d" % (
                n, elapsed / 1e9, pct(samples, 50) / 1e3, pct(samples, 99) / 1e3, cpu / 1e3 / n if n else 0,
                errors, SENT[0]), flush=True)
        else:
            break
    client.close()


def worker(lib, ports, secs, marker, idx, ready_q, go, res_q, done):
    client = redis.Redis(host="127.0.0.1", port=ports[0])
    client.ping()
    lk = Locker(lib, client, "peer:%s:1:contended" % lib, 5000, True)
    ready_q.put(idx)
    go.wait()
    res = dict(acq=0, errors=0, overlaps=0, cs=0, wait=0, max_wait=0, holds=[])
    COUNTING[0] = True
    end = time.monotonic_ns() + int(secs * 1e9)
    while time.monotonic_ns() < end:
        t0 = time.monotonic_ns()
        try:
            lk.acquire()
        except Exception as e:  # noqa: BLE001
            t1 = time.monotonic_ns()
            res["wait"] += t1 - t0
            res["max_wait"] = max(res["max_wait"], t1 - t0)
            res["errors"] += 1
            if res["errors"] <= 3:
                print("py_peer %s: acquire: %s" % (lib, e), file=sys.stderr, flush=True)
            continue
        t1 = time.monotonic_ns()
        res["wait"] += t1 - t0
        res["max_wait"] = max(res["max_wait"], t1 - t0)
        c0 = time.monotonic_ns()
        try:
            os.mkdir(marker)
            inside = True
        except OSError:
            res["overlaps"] += 1
            inside = False
        if inside:
            time.sleep(0.001)
            os.rmdir(marker)
        res["cs"] += time.monotonic_ns() - c0
        res["acq"] += 1
        r0 = time.monotonic_ns()
        ok = True
        try:
            lk.release()
        except Exception as e:  # noqa: BLE001
            ok = False
            res["errors"] += 1
            if res["errors"] <= 3:
                print("py_peer %s: release: %s" % (lib, e), file=sys.stderr, flush=True)
        res["holds"].append((t1, r0 if ok else 0, time.monotonic_ns(), idx))
    res["finish"] = time.monotonic_ns()
    COUNTING[0] = False
    res["cmds"] = SENT[0]
    res_q.put(res)
    done.wait()
    client.close()


def handoffs(holds):
    holds.sort(key=lambda h: h[0])
    call, ret, every = [], [], []
    same = bad = 0
    for a, b in zip(holds, holds[1:]):
        if not a[1]:
            continue
        if b[0] < a[1]:
            bad += 1
            continue
        every.append(b[0] - a[1])
        if a[3] == b[3]:
            same += 1
            continue
        call.append(b[0] - a[1])
        ret.append(b[0] - a[2])
    for v in (call, ret, every):
        v.sort()
    return dict(p50=pct(call, 50) / 1e3, p99=pct(call, 99) / 1e3, r50=pct(ret, 50) / 1e3, all50=pct(every, 50) / 1e3,
                retake=same / len(every) if every else 0, n=len(every), bad=bad)


def contended(lib, ports, secs, procs, marker):
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    ready_q, res_q = ctx.Queue(), ctx.Queue()
    go, done = ctx.Event(), ctx.Event()
    kids = [ctx.Process(target=worker, args=(lib, ports, secs, marker, i, ready_q, go, res_q, done))
            for i in range(procs)]
    for k in kids:
        k.start()
    for _ in kids:
        ready_q.get(timeout=60)
    print("ready %s" % versions(), flush=True)
    if sys.stdin.readline().strip() != "go":
        done.set()
        go.set()
        sys.exit(1)
    start = time.monotonic_ns()
    go.set()
    results = [res_q.get(timeout=secs + 120) for _ in kids]
    acq = sum(r["acq"] for r in results)
    errors = sum(r["errors"] for r in results)
    waits = sum(r["wait"] for r in results)
    holds = [h for r in results for h in r["holds"]]
    h = handoffs(holds)
    print("result acq=%d errors=%d overlaps=%d secs=%.4f cs_us=%.1f max_wait_ms=%.2f mean_wait_ms=%.3f min_acq=%d "
          "max_acq=%d client_cmds=%d ho_p50_us=%.1f ho_p99_us=%.1f hor_p50_us=%.1f ho_all_p50_us=%.1f retake=%.4f "
          "ho_n=%d ho_bad=%d gave_up=0" % (
              acq, errors, sum(r["overlaps"] for r in results), (max(r["finish"] for r in results) - start) / 1e9,
              sum(r["cs"] for r in results) / acq / 1e3 if acq else 0, max(r["max_wait"] for r in results) / 1e6,
              waits / (acq + errors) / 1e6 if acq + errors else 0, min(r["acq"] for r in results),
              max(r["acq"] for r in results), sum(r["cmds"] for r in results), h["p50"], h["p99"], h["r50"],
              h["all50"], h["retake"], h["n"], h["bad"]), flush=True)
    sys.stdin.readline()
    done.set()
    for k in kids:
        k.join(10)


def main():
    if len(sys.argv) != 7:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    lib, mode, ports, secs, procs, marker = sys.argv[1:]
    ports = [int(p) for p in ports.split(",")]
    if mode == "uncontended":
        uncontended(lib, ports)
    else:
        contended(lib, ports, float(secs), int(procs), marker)


if __name__ == "__main__":
    main()
