#!/usr/bin/env python3
"""`gpumem serve` scraped by a real Prometheus, on loopback, on the simulated GPU.

A 2 ms spike happens between two 1 s scrapes: the instantaneous gauge never shows it, the window
peak does. Installs Debian's `prometheus` when missing. Usage:
    prometheus_test.py GPUMEM_EXECUTABLE SIM_DIR
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

MiB = 1 << 20
SPIKE = 512 * MiB
DEADLINE = None  # set once Prometheus is installed: the rest of the test, start to cleanup
SKIP = 77


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_prometheus():
    found = shutil.which("prometheus")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print("SKIP: prometheus is not installed and cannot be installed here")
        sys.exit(SKIP)
    print("installing Debian's prometheus package", flush=True)
    subprocess.run(["apt-get", "install", "-y", "prometheus"], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=600)
    return shutil.which("prometheus") or fail("apt-get install prometheus did not install it")


def query(port, promql):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": promql}))
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
    except OSError:
        return None
    if body.get("status") != "success":
        return None
    return body["data"]["result"]


def scalar(port, promql):
    result = query(port, promql)
    if not result:
        return None
    return float(result[0]["value"][1])


def wait_for(what, probe, timeout=20):
    give_up = min(time.monotonic() + timeout, DEADLINE)
    while time.monotonic() < give_up:
        value = probe()
        if value is not None:
            return value
        time.sleep(0.2)
    fail("timed out waiting for " + what)


def main():
    if len(sys.argv) != 3:
        fail("usage: prometheus_test.py GPUMEM_EXECUTABLE SIM_DIR")
    gpumem, sim = sys.argv[1], sys.argv[2]
    prometheus = ensure_prometheus()
    global DEADLINE
    DEADLINE = time.monotonic() + 55
    work = tempfile.mkdtemp(prefix="gpumem-prometheus-")
    env = dict(os.environ)
    env.update({
        "GPUMEM_SIM_STATE": os.path.join(work, "sim.state"),
        # No context cost, so used memory is zero except during the spike.
        "GPUMEM_SIM_CONFIG": json.dumps({"devices": [
            {"name": "NVIDIA H200", "total_mib": 143771, "reserved_mib": 542, "context_mib": 0}]}),
        "GPUMEM_NVML_LIBRARY": os.path.join(sim, "libnvidia-ml.so.1"),
        "GPUMEM_CUDA_LIBRARY": os.path.join(sim, "libcuda.so.1"),
        "GPUMEM_CUPTI_LIBRARY": os.path.join(sim, "libcupti.so.13"),
    })
    env.pop("GPUMEM_SIM_FAULTS", None)
    processes = []
    try:
        exporter = subprocess.Popen(
            [gpumem, "serve", "--listen", "127.0.0.1:0", "--interval", "1ms", "--window", "2s",
             "--spool", os.path.join(work, "spool"), "--host-label", "ci"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        processes.append(exporter)
        line = exporter.stdout.readline()
        if "listening on http://127.0.0.1:" not in line:
            fail("gpumem serve did not start: " + line + exporter.stdout.read())
        exporter_port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        print(line.strip(), flush=True)

        prometheus_port = free_port()
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: gpumem\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % exporter_port)
        log = open(os.path.join(work, "prometheus.log"), "w")
        processes.append(subprocess.Popen(
            [prometheus, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(work, "data"),
             "--web.listen-address=127.0.0.1:%d" % prometheus_port],
            stdout=log, stderr=subprocess.STDOUT))

        wait_for("Prometheus to scrape gpumem",
                 lambda: scalar(prometheus_port, 'gpumem_device_up{gpu="0",host="ci"}'))
        def window_peak():
            value = scalar(prometheus_port,
                           'max_over_time(gpumem_memory_used_peak_window_bytes{gpu="0"}[1m])')
            return value if value is not None and value >= SPIKE else None

        # A loaded machine can stall the 1 ms sampler past a 2 ms spike: a spike that no sample
        # saw is tried again, up to three times, each one between two scrapes.
        for attempt in range(1, 4):
            # Right after a scrape, so that the spike falls between two of them.
            scrapes = wait_for("a scrape", lambda: scalar(prometheus_port,
                                                          "gpumem_exporter_scrapes_total"))
            wait_for("the next scrape", lambda: (
                scalar(prometheus_port, "gpumem_exporter_scrapes_total") or 0) > scrapes or None)
            time.sleep(0.3)
            subprocess.run([os.path.join(sim, "gpumem-sim"), "workload",
                            "device 0; spike 512MiB 2ms"], env=env, check=True, timeout=20)
            print("spiked 512 MiB for 2 ms (attempt %d)" % attempt, flush=True)
            if attempt == 3:
                peak = wait_for("the spike in the window peak", window_peak)
                break
            give_up = min(time.monotonic() + 4, DEADLINE)
            peak = None
            while peak is None and time.monotonic() < give_up:
                peak = window_peak()
                if peak is None:
                    time.sleep(0.2)
            if peak is not None:
                break
        used = scalar(prometheus_port, 'max_over_time(gpumem_memory_used_bytes{gpu="0"}[1m])')
        print("max_over_time(window peak) = %d bytes, max_over_time(used) = %s bytes"
              % (peak, used), flush=True)
        if used is None or used >= SPIKE:
            fail("the instantaneous gauge saw the spike (%s): it did not fall between scrapes" % used)
        exporter.send_signal(signal.SIGTERM)
        if exporter.wait(timeout=10) != 0:
            fail("gpumem serve exited with %d on SIGTERM" % exporter.returncode)
        print("PASS", flush=True)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
