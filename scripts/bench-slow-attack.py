#!/usr/bin/env python3
"""Slow attackers for scripts/bench-slow.sh (public tools only: Python 3).

Usage: bench-slow-attack.py HOST PORT N READY_FILE REPORT_FILE

Opens N connections to HOST:PORT, a third of each kind, and keeps them slow
until SIGTERM:
  slowloris   a request head that never ends: one header line every 5 s
  upload      a complete POST head with Content-Length: 1000000, then
              4 bytes every 5 s
  reader      GET /size/1048576 on a socket with a 4 KiB receive buffer,
              and nothing read
Writes READY_FILE once all are connected, and at SIGTERM REPORT_FILE: per
kind, connections opened, cut by the proxy (closed or reset), and the
median seconds from open to cut.
"""
import asyncio
import signal
import socket
import statistics
import sys
import time

host, port, n, ready_file, report_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
kinds = ("slowloris", "upload", "reader")
cut = {k: [] for k in kinds}
opened = {k: 0 for k in kinds}


async def connect(kind):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if kind == "reader":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    await asyncio.get_running_loop().sock_connect(s, (host, port))
    return s


async def attacker(kind, i):
    loop = asyncio.get_running_loop()
    try:
        s = await connect(kind)
    except OSError:
        return
    opened[kind] += 1
    start = time.monotonic()
    heads = {
        "slowloris": b"GET / HTTP/1.1\r\nHost: x\r\n",
        "upload": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
        "reader": b"GET /size/1048576 HTTP/1.1\r\nHost: x\r\n\r\n",
    }
    try:
        await loop.sock_sendall(s, heads[kind])
        await asyncio.sleep(i % 50 / 10)  # spread the trickles over 5 s
        while True:
            if kind == "reader":
                # Read nothing; notice a cut by a zero-length peek.
                await asyncio.sleep(1)
                try:
                    b = s.recv(1, socket.MSG_PEEK)
                    if b == b"":
                        raise ConnectionError
                except BlockingIOError:
                    pass
                continue
            await asyncio.sleep(5)
            await loop.sock_sendall(s, b"X-a: b\r\n" if kind == "slowloris" else b"abcd")
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    raise ConnectionError
            except BlockingIOError:
                pass
    except (OSError, ConnectionError):
        cut[kind].append(time.monotonic() - start)
    finally:
        s.close()


async def main():
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(attacker(kinds[i % 3], i)))
        if i % 200 == 199:
            await asyncio.sleep(0.05)  # pace the opening
    while sum(opened.values()) < n and not stop.is_set():
        await asyncio.sleep(0.1)
    open(ready_file, "w").write("%d\n" % sum(opened.values()))
    await stop.wait()
    with open(report_file, "w") as f:
        for k in kinds:
            med = "%.1f" % statistics.median(cut[k]) if cut[k] else "-"
            f.write("%s opened=%d cut=%d median_cut_s=%s\n" % (k, opened[k], len(cut[k]), med))
    for t in tasks:
        t.cancel()


asyncio.run(main())
