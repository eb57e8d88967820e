#!/usr/bin/env python3
"""loom-bench's metrics endpoint and live view, end to end on the CPU.

  check_bench_metrics.py LOOM_BENCH

1. `loom-bench --device=cpu --metrics-port=N --duration=...` runs in the background while this
   script scrapes http://127.0.0.1:N/metrics with urllib: the answer is Prometheus text (every
   sample a loom_ metric under a declared family), loom_requests_total of the model running grows
   from one scrape to the next, and loom-bench exits 0.
2. A port something already listens on: loom-bench exits 1 naming the port and saying it is in use.
3. --live with stderr not a terminal: plain lines, no escape codes.
Every wait is bounded; a loom-bench still running when the script gives up is killed.
"""
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

RUN_SECONDS = 4          # --duration of the scraped run: long enough for two scrapes apart
DEADLINE_SECONDS = 90    # the most any loom-bench run may take here
SCRAPE_TIMEOUT_SECONDS = 5
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def fail(message):
    print("check_bench_metrics: FAILED: " + message, file=sys.stderr)
    sys.exit(1)


def first_positive(seen):
    return next((count for count in seen if count > 0), 0.0)


def grew(seen):
    """Whether the count grew between two scrapes taken once requests had completed: a first scrape
    that lands before the first completion (count 0) does not count as the starting point."""
    start = first_positive(seen)
    return start > 0 and seen[-1] > start


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    """(status, content type, body) of GET /metrics, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=SCRAPE_TIMEOUT_SECONDS) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode("utf-8")
    except (urllib.error.URLError, ConnectionError, socket.timeout):
        return None


def parse(text):
    """{series: value} of every sample, after checking each belongs to a declared loom_ family."""
    families = {}
    samples = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            families[name] = kind
            continue
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if not match:
            fail(f"not a Prometheus sample line: {line!r}")
        name = match.group(1)
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if family not in families and name.endswith(suffix):
                family = name[: -len(suffix)]
        if family not in families or not name.startswith("loom_"):
            fail(f"sample of no declared loom_ family: {line!r}")
        samples[name + (match.group(2) or "")] = float(match.group(3))
    return samples


def run_scraped(bench, model):
    for attempt in range(3):  # another process may take the free port before loom-bench binds it
        port = free_port()
        command = [bench, "--device=cpu", f"--model={model}", "--iterations=1", f"--duration={RUN_SECONDS}",
                   "--warmUp=0", f"--metrics-port={port}", "--json"]
        bench_process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            completed_series = f'loom_requests_total{{model="{model}",status="completed"}}'
            seen = []  # completed counts of the scrapes that answered, in order
            deadline = time.monotonic() + DEADLINE_SECONDS
            while bench_process.poll() is None and time.monotonic() < deadline:
                answer = scrape(port)
                if answer:
                    status, content_type, body = answer
                    if status != 200:
                        fail(f"GET /metrics answered {status}")
                    if not content_type.startswith("text/plain; version=0.0.4"):
                        fail(f"Content-Type {content_type!r} is not Prometheus text 0.0.4")
                    samples = parse(body)
                    if not any(k.startswith("loom_info{") for k in samples):
                        fail("no loom_info sample")
                    count = samples.get(completed_series)
                    if count is None:
                        fail(f"no {completed_series} sample in:\n{body}")
                    seen.append(count)
                    if grew(seen):
                        break
                time.sleep(0.2)
            out, err = bench_process.communicate(timeout=DEADLINE_SECONDS)
        finally:
            if bench_process.poll() is None:
                bench_process.kill()
                bench_process.communicate()
        if bench_process.returncode != 0 and "in use" in err and attempt < 2:
            continue
        if bench_process.returncode != 0:
            fail(f"{' '.join(command)} exited {bench_process.returncode}:\n{err}")
        if not seen:
            fail("no scrape answered while loom-bench ran")
        if not grew(seen):
            fail(f"{completed_series} did not grow between scrapes while the benchmark ran: {seen}")
        print(f"check_bench_metrics: port {port}: {len(seen)} scrapes, {completed_series} "
              f"{first_positive(seen):g} -> {seen[-1]:g}")
        return
    fail("no free port could be bound")


def run_port_in_use(bench):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        result = subprocess.run([bench, "--device=cpu", "--model=lstm", "--iterations=1", f"--metrics-port={port}"],
                                capture_output=True, text=True, timeout=DEADLINE_SECONDS)
    if result.returncode != 1:
        fail(f"loom-bench on a port in use exited {result.returncode}, not 1:\n{result.stderr}")
    expected = f"metrics port {port} on 127.0.0.1"
    if expected not in result.stderr or "in use" not in result.stderr:
        fail(f"loom-bench on a port in use did not say '{expected}: ... in use':\n{result.stderr}")
    print("check_bench_metrics: port in use: " + result.stderr.strip())


def run_live_plain(bench):
    result = subprocess.run([bench, "--device=cpu", "--model=lstm", "--iterations=1", "--duration=1.5", "--live"],
                            capture_output=True, text=True, timeout=DEADLINE_SECONDS)
    if result.returncode != 0:
        fail(f"loom-bench --live exited {result.returncode}:\n{result.stderr}")
    if "\033" in result.stderr:
        fail(f"--live wrote escape codes to a stderr that is not a terminal:\n{result.stderr!r}")
    lines = [l for l in result.stderr.splitlines() if l.startswith("fifo ")]
    if not lines or not lines[-1].startswith("fifo done") or "lstm" not in lines[-1]:
        fail(f"--live did not end with a 'fifo done' line naming lstm:\n{result.stderr}")
    print("check_bench_metrics: --live, plain: " + lines[-1])


def main():
    if len(sys.argv) != 2:
        fail("usage: check_bench_metrics.py LOOM_BENCH")
    bench = sys.argv[1]
    run_scraped(bench, "lstm")
    run_port_in_use(bench)
    run_live_plain(bench)
    print("check_bench_metrics: passed")


if __name__ == "__main__":
    main()
