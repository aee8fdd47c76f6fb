#!/usr/bin/env python3
"""A bounded HTTP load generator for `sg2 serve` (and any server that answers the same URLs), standard
library only: keep-alive connections spread over worker processes (asyncio in each), closed loop (each
connection sends its next request when the last answer arrived) or open loop (a fixed total rate,
latency counted from each request's scheduled time, so a slow server cannot hide its queueing).

    python3 tools/serve_load.py http://127.0.0.1:8080 --query 'format=jpeg' --connections 64 --duration 30
    python3 tools/serve_load.py http://127.0.0.1:8080 --rate 600 --connections 64 --duration 30
    python3 tools/serve_load.py http://127.0.0.1:8080 --connections 1 --duration 10      # one client

Request i of connection k asks GET /v1/generate?seed=S&QUERY with S = --first-seed + (k + i * C) mod
--seeds (every seed once before any repeats, whatever the interleaving). Prints one summary line and,
with --json, writes the figures: requests answered in the measured window, statuses, images/s, latency
p50/p90/p99/max (ms), the mean X-Sg2-Batch header (the batch each image ran in), mean bytes, the median
of each stage of the Server-Timing header (sg2 serve: queue, generate, encode; the rest of a round trip is
HTTP, the transfer and this client), and with --server-pid the server's CPU use over the window (cores,
from /proc/PID/stat).
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import time
import urllib.parse


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('url', help='the server, e.g. http://127.0.0.1:8080')
    p.add_argument('--path', default='/v1/generate', help='request path (default /v1/generate)')
    p.add_argument('--query', default='', help="extra query parameters, e.g. 'format=jpeg&trunc=0.7'")
    p.add_argument('--seeds', type=int, default=100000, help='distinct seeds cycled through (default 100000)')
    p.add_argument('--first-seed', type=int, default=0)
    p.add_argument('--no-seed', action='store_true', help='send the path and query alone (no seed parameter)')
    p.add_argument('--connections', type=int, default=64)
    p.add_argument('--duration', type=float, default=10, help='measured seconds (default 10)')
    p.add_argument('--warmup', type=float, default=1, help='seconds before the measured window (default 1)')
    p.add_argument('--rate', type=float, default=0, help='open loop: requests per second in all (default: closed loop)')
    p.add_argument('--processes', type=int, default=0, help='worker processes (default: min(cores, connections, 8))')
    p.add_argument('--timeout', type=float, default=30, help='seconds per request before it counts as failed')
    p.add_argument('--server-pid', type=int, default=0, help="report this process's CPU use over the window")
    p.add_argument('--json', help='write the figures to this file')
    p.add_argument('--label', default='', help='a name for the summary line')
    return p.parse_args(argv)


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (Linux /proc)."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


async def one_connection(host, port, targets, t_start, t_end, interval, offset, timeout, out):
    """Requests on one keep-alive connection until t_end; appends (t_done, latency_s, status, batch, bytes)."""
    reader = writer = None
    i = 0
    next_send = t_start + offset
    while True:
        now = time.monotonic()
        if interval > 0:  # open loop: this connection's schedule
            if next_send >= t_end:
                break
            if next_send > now:
                await asyncio.sleep(next_send - now)
            scheduled = next_send
            next_send += interval
        else:
            if now >= t_end:
                break
            scheduled = now
        target = targets[i % len(targets)]
        i += 1
        try:
            if writer is None:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
            writer.write(f'GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n'.encode())
            head = await asyncio.wait_for(reader.readuntil(b'\r\n\r\n'), timeout)
            lines = head.decode('latin-1').split('\r\n')
            status = int(lines[0].split()[1])
            length, batch, close, stages = 0, 0, False, None
            for line in lines[1:]:
                k, _, v = line.partition(':')
                k = k.strip().lower()
                if k == 'content-length':
                    length = int(v)
                elif k == 'x-sg2-batch':
                    batch = int(v)
                elif k == 'server-timing':
                    stages = parse_server_timing(v)
                elif k == 'connection' and v.strip().lower() == 'close':
                    close = True
            await asyncio.wait_for(reader.readexactly(length), timeout)
            done = time.monotonic()
            out.append((done, done - scheduled, status, batch, length, stages))
            if close:
                writer.close()
                writer = None
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError):
            done = time.monotonic()
            out.append((done, done - scheduled, 0, 0, 0, None))
            if writer is not None:
                writer.close()
            writer = None
    if writer is not None:
        writer.close()


def parse_server_timing(value):
    """{name: ms} of a Server-Timing header ('queue;dur=0.010, generate;dur=1.4, ...'); None if malformed."""
    stages = {}
    try:
        for part in value.split(','):
            name, _, params = part.strip().partition(';')
            for param in params.split(';'):
                k, _, v = param.partition('=')
                if k.strip() == 'dur':
                    stages[name.strip()] = float(v)
    except ValueError:
        return None
    return stages or None


def worker(args, conn_ids, t_start, t_end, queue):
    u = urllib.parse.urlsplit(args.url)
    host, port = u.hostname, u.port or 80
    interval = args.connections / args.rate if args.rate > 0 else 0.0
    results = []

    async def main():
        tasks = []
        for k in conn_ids:
            targets = []
            for i in range(256):
                q = args.query
                if not args.no_seed:
                    seed = args.first_seed + (k + i * args.connections) % args.seeds
                    q = f'seed={seed}' + (f'&{q}' if q else '')
                targets.append(args.path + (f'?{q}' if q else ''))
            offset = (k * interval / args.connections) if interval else 0.0  # spread the open-loop sends
            tasks.append(one_connection(host, port, targets, t_start, t_end, interval, offset, args.timeout, results))
        await asyncio.gather(*tasks)

    asyncio.run(main())
    queue.put(results)


def percentile(sorted_values, q):
    if not sorted_values:
        return float('nan')
    i = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[i]


def run(args):
    procs = args.processes or max(1, min(os.cpu_count() or 1, args.connections, 8))
    t_start = time.monotonic() + 0.3  # every process starts together
    w0, w1 = t_start + args.warmup, t_start + args.warmup + args.duration
    queue = multiprocessing.get_context('fork').Queue()
    groups = [list(range(p, args.connections, procs)) for p in range(procs)]
    workers = [multiprocessing.get_context('fork').Process(target=worker, args=(args, g, t_start, w1, queue))
               for g in groups if g]
    for w in workers:
        w.start()
    cpu0 = cpu1 = None
    if args.server_pid:
        time.sleep(max(0.0, w0 - time.monotonic()))
        cpu0 = cpu_seconds(args.server_pid)
        time.sleep(max(0.0, w1 - time.monotonic()))
        cpu1 = cpu_seconds(args.server_pid)
    results = []
    for _ in workers:
        results.extend(queue.get(timeout=args.duration + args.warmup + args.timeout + 30))
    for w in workers:
        w.join(timeout=10)
    window = [r for r in results if w0 <= r[0] <= w1]
    ok = [r for r in window if r[2] == 200]
    lat = sorted(r[1] * 1000 for r in ok)
    statuses = {}
    for r in window:
        statuses[str(r[2])] = statuses.get(str(r[2]), 0) + 1
    fig = {
        'label': args.label, 'connections': args.connections, 'rate': args.rate, 'duration_s': args.duration,
        'requests': len(window), 'ok': len(ok), 'statuses': statuses,
        'img_per_s': len(ok) / args.duration,
        'p50_ms': percentile(lat, 0.50), 'p90_ms': percentile(lat, 0.90), 'p99_ms': percentile(lat, 0.99),
        'max_ms': lat[-1] if lat else float('nan'),
        'mean_batch': sum(r[3] for r in ok) / len(ok) if ok else 0.0,
        'mean_bytes': sum(r[4] for r in ok) / len(ok) if ok else 0.0,
    }
    timed = [r[5] for r in ok if r[5]]
    if timed:
        for name in timed[0]:
            fig[f'server_{name}_p50_ms'] = percentile(sorted(t.get(name, float('nan')) for t in timed), 0.50)
    if cpu0 is not None:
        fig['server_cpu_cores'] = (cpu1 - cpu0) / args.duration
    return fig


def summary(fig):
    mode = f"open loop {fig['rate']:g} req/s" if fig['rate'] else 'closed loop'
    s = (f"{fig['label'] + ': ' if fig['label'] else ''}{fig['connections']} connections, {mode}, "
         f"{fig['duration_s']:g} s: {fig['ok']}/{fig['requests']} ok ({fig['statuses']}), "
         f"{fig['img_per_s']:.1f} img/s, p50 {fig['p50_ms']:.2f} ms, p90 {fig['p90_ms']:.2f} ms, "
         f"p99 {fig['p99_ms']:.2f} ms, max {fig['max_ms']:.2f} ms, mean batch {fig['mean_batch']:.2f}, "
         f"{fig['mean_bytes'] / 1024:.1f} KiB/image")
    stages = [(k[7:-7], v) for k, v in fig.items() if k.startswith('server_') and k.endswith('_p50_ms')]
    if stages:
        s += ', server p50 ' + ' '.join(f'{name} {v:.2f}' for name, v in stages) + ' ms'
    if 'server_cpu_cores' in fig:
        s += f", server CPU {fig['server_cpu_cores']:.2f} cores"
    return s


def main():
    args = parse_args()
    if args.connections < 1 or args.duration <= 0:
        sys.exit('serve_load: --connections >= 1 and --duration > 0')
    fig = run(args)
    print(summary(fig), flush=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(fig, f, indent=1)


if __name__ == '__main__':
    main()
