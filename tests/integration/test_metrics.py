"""Live metrics through Prometheus' node_exporter (issue 34): the shim
writes the process's numbers as a textfile the collector reads
(GPULEAK_PROMETHEUS_DIR), atomically, every interval, and removes it at
exit; Debian's prometheus-node-exporter, started here on loopback with its
textfile collector, serves them, with no parse error."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_core import BUILD, Base, clean_env  # noqa: E402

PROG = BUILD / "tests" / "prog_life"
SHIM = BUILD / "libgpuleak.so"
EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"
LEAKED = 3 * (1 << 20)  # prog_life's leak_before_sleep: three of 1 MiB
SAMPLE = re.compile(r'^(\w+)(?:\{([^}]*)\})? ([0-9.eE+-]+)$')  # node_exporter writes 3.145728e+06


def samples(text):
    """{(name, frozenset of label pairs): value} of an exposition text."""
    out = {}
    for line in text.splitlines():
        found = SAMPLE.match(line)
        if found:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', found.group(2) or ""))
            out[(found.group(1), labels)] = int(float(found.group(3)))
    return out


def value(parsed, name, **labels):
    got = [v for (n, ls), v in parsed.items()
           if n == name and all((k, str(w)) in ls for k, w in labels.items())]
    return got[0] if len(got) == 1 else None


class MetricsTest(Base):
    def start(self, seconds, env_extra):
        env = clean_env()
        env.update({"LD_PRELOAD": str(SHIM), "GPULEAK_OUTPUT": os.path.join(self.tmp, "r-%p.json"),
                    "GPULEAK_SUMMARY": "0"})
        env.update(env_extra)
        proc = subprocess.Popen([str(PROG), "sleep", str(seconds)], env=env, cwd=self.tmp, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertEqual(proc.stdout.readline().strip(), "ready")
        return proc

    def wait_for(self, predicate, seconds=15):
        end = time.time() + seconds
        while time.time() < end:
            got = predicate()
            if got:
                return got
            time.sleep(0.1)
        return None

    def test_the_textfile_is_written_while_the_program_runs_and_removed_at_exit(self):
        folder = os.path.join(self.tmp, "prom")
        os.mkdir(folder)
        proc = self.start(4, {"GPULEAK_PROMETHEUS_DIR": folder, "GPULEAK_PROMETHEUS_INTERVAL": "1",
                              "SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_JOB_ID": "77"})
        path = os.path.join(folder, "gpuleak-%s-%d.prom" % (socket.gethostname(), proc.pid))

        def written():
            if not os.path.exists(path):
                return None
            with open(path) as fh:
                parsed = samples(fh.read())  # the first write may come before the leak
            return parsed if value(parsed, "gpuleak_live_bytes", kind="device") == LEAKED else None
        parsed = self.wait_for(written)
        self.assertIsNotNone(parsed, os.listdir(folder))
        labels = {"pid": proc.pid, "rank": 3, "local_rank": 1, "job": 77}
        self.assertEqual(value(parsed, "gpuleak_live_bytes", kind="device", **labels), LEAKED)
        self.assertEqual(value(parsed, "gpuleak_device_live_bytes", device=0), LEAKED)
        self.assertEqual(value(parsed, "gpuleak_allocations_total", kind="device"), 3)
        self.assertEqual(value(parsed, "gpuleak_growth_sites"), 0)
        # Only the file: its temporary never stays beside it.
        self.assertEqual(os.listdir(folder), [os.path.basename(path)])
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(os.listdir(folder), [])

    def test_the_grafana_dashboard_plots_what_the_shim_writes(self):
        """docs/grafana/ranks-dashboard.json: every metric its queries name is
        a family the shim writes, with the labels they group by."""
        folder = os.path.join(self.tmp, "prom")
        os.mkdir(folder)
        proc = self.start(4, {"GPULEAK_PROMETHEUS_DIR": folder, "GPULEAK_PROMETHEUS_INTERVAL": "1",
                              "RANK": "2", "TORCHELASTIC_RUN_ID": "run7"})
        path = os.path.join(folder, "gpuleak-%s-%d.prom" % (socket.gethostname(), proc.pid))
        def with_a_device():
            """The file once it has a device's sample: the first one may
            come before the program's first allocation (under a loaded
            machine the test once read such a file and failed)."""
            try:
                with open(path) as fh:
                    text = fh.read()
            except OSError:
                return None
            # A sample, not the family's HELP line, which comes first
            # with no sample until the first allocation is counted.
            return text if any(n == "gpuleak_device_live_bytes" for (n, _) in samples(text)) else None
        text = self.wait_for(with_a_device)
        proc.communicate(timeout=30)
        self.assertIsNotNone(text)
        written = {n for (n, _) in samples(text)}
        labels = set(re.findall(r'(\w+)="', text))
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "grafana",
                               "ranks-dashboard.json")) as fh:
            dashboard = json.load(fh)
        exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        self.assertGreaterEqual(len(exprs), 6)
        for expr in exprs:
            for name in re.findall(r"\b(gpuleak_\w+)", expr):
                self.assertIn(name, written, expr)
            for by in re.findall(r"by \(([\w, ]+)\)", expr):
                for label in by.split(","):
                    self.assertIn(label.strip(), labels, expr)
            for label in re.findall(r"(\w+)=~?\"", expr):
                self.assertIn(label, labels, expr)

    def test_a_folder_that_cannot_be_written_is_one_line(self):
        proc = self.start(1.5, {"GPULEAK_PROMETHEUS_DIR": os.path.join(self.tmp, "missing"),
                                "GPULEAK_PROMETHEUS_INTERVAL": "1"})
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(len([line for line in err.splitlines() if "Prometheus" in line]), 1, err)

    def test_node_exporter_serves_them(self):
        """CI installs Debian's prometheus-node-exporter (scripts/
        install-deps.sh); its textfile collector reads the folder, and its
        own node_textfile_scrape_error says the file parsed."""
        self.assertTrue(os.path.exists(EXPORTER), "apt-get install prometheus-node-exporter")
        folder = os.path.join(self.tmp, "prom")
        os.mkdir(folder)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        exporter = subprocess.Popen([EXPORTER, "--collector.disable-defaults", "--collector.textfile",
                                     "--collector.textfile.directory=" + folder,
                                     "--web.listen-address=127.0.0.1:%d" % port],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: exporter.poll() is None and exporter.send_signal(signal.SIGTERM))
        proc = self.start(6, {"GPULEAK_PROMETHEUS_DIR": folder, "GPULEAK_PROMETHEUS_INTERVAL": "1",
                              "RANK": "5"})

        def scraped():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                return None
            parsed = samples(text)  # the first write may come before the leak
            return parsed if value(parsed, "gpuleak_live_bytes", kind="device") == LEAKED else None
        parsed = self.wait_for(scraped, seconds=20)
        self.assertIsNotNone(parsed, "node_exporter never served the metrics")
        self.assertEqual(value(parsed, "gpuleak_live_bytes", kind="device", rank=5, pid=proc.pid), LEAKED)
        self.assertEqual(value(parsed, "node_textfile_scrape_error"), 0)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
