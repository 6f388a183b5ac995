#!/usr/bin/env python3
"""The floor under any stdio hop on this machine: one byte sent to another process over a pipe
and sent back over a second, N times, one at a time (blocking reads, no runtime at all). Run
as is, the scheduler places the two processes; with `--one-cpu`, both are pinned to CPU 0, so
no wake-up crosses CPUs. Prints the p50 and p99 of the round trip.

    python3 benches/pipe_floor.py            # free
    python3 benches/pipe_floor.py --one-cpu  # both on CPU 0
"""
import os
import sys
import time

N = 20000
if "--one-cpu" in sys.argv:
    os.sched_setaffinity(0, {0})
to_child, from_parent = os.pipe()
to_parent, from_child = os.pipe()
if os.fork() == 0:
    os.close(from_parent)
    os.close(to_parent)
    while True:
        b = os.read(to_child, 64)
        if not b:
            os._exit(0)
        os.write(from_child, b)
os.close(to_child)
os.close(from_child)
lat = []
for _ in range(N):
    t = time.perf_counter_ns()
    os.write(from_parent, b"x")
    os.read(to_parent, 64)
    lat.append(time.perf_counter_ns() - t)
os.close(from_parent)
os.wait()
lat.sort()
where = "one CPU" if "--one-cpu" in sys.argv else "free"
print(f"pipe round trip ({where}): p50 {lat[N // 2] / 1e3:.1f} us, p99 {lat[N * 99 // 100] / 1e3:.1f} us")
