#!/usr/bin/env python3
"""scripts/gpu-check's own behaviour (ctest GpuCheck.Script, label `cpu`), with fake tools in
place of the build and the GPU: cmake, ctest, nvidia-smi and python3 on the PATH, demo and the
benchmarks in the build folder. Each fake answers as its real tool would on a machine the test
chooses (an H200, no GPU, no PyTorch) and, when FAKE_HANG names the step gpu-check says it is
running (GPU_CHECK_STEP), hangs there. Checked: the verdicts and the line naming what to fix
first; "no GPU seen" a failure with its reason, outside the CPU-only mode; an absent PyTorch a
skip with a note; the report written before and after every step, so that a run killed (SIGKILL)
in any step leaves every step before it and that step marked running; a step past the budget
stopped and recorded; SIGTERM recorded.
"""
import json, os, signal, stat, subprocess, sys, tempfile, time, unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
GPU_CHECK = os.path.join(ROOT, "scripts", "gpu-check")

FAKE = r'''#!PYTHON
import json, os, sys, time
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
if os.environ.get("FAKE_HANG") and os.environ.get("FAKE_HANG") == os.environ.get("GPU_CHECK_STEP"):
    with open(os.environ["FAKE_MARK"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
gpu = os.environ.get("FAKE_GPU", "h200")
if os.environ.get("FAKE_CALLS"):
    with open(os.environ["FAKE_CALLS"], "a") as f:
        f.write(json.dumps([tool] + args) + "\n")
if tool == "cmake" and os.environ.get("FAKE_CMAKE_FAILS"):
    print("CMake Error at CMakeLists.txt:89 (find_package): Could NOT find CLI11", file=sys.stderr)
    sys.exit(1)
if tool == "ctest":
    print("100% tests passed, 0 tests failed out of 19")
elif tool == "demo":
    if "compare" in args:
        print("every number agrees")
    elif "cuda" in args and gpu == "none":
        print("demo: error: --device cuda: no usable GPU: the NVIDIA driver is older than this "
              "build's CUDA runtime", file=sys.stderr)
        sys.exit(1)
    elif "rnn-decay" in args:
        print(json.dumps({"provenance": {"device": {
            "gpu": "NVIDIA H200", "gpu_index": 0, "gpus_seen": 1, "compute_capability": "9.0",
            "driver": "13.0"}}}))
    else:
        print(json.dumps({"tables": []}))
elif tool == "gpu_bench":
    with open(args[args.index("--json") + 1], "w") as f:
        json.dump({"dk_std": []}, f)
elif tool == "bench_kernels":
    print(json.dumps({"benchmarks": [{"name": "fake"}]}))
elif tool == "nvidia-smi":
    print("| NVIDIA-SMI 550.54.14    Driver Version: 550.54.14    CUDA Version: 12.4 |")
elif tool == "python3":
    if args[:1] == ["-c"]:
        if os.environ.get("FAKE_TORCH") == "absent":
            print("ModuleNotFoundError: No module named 'torch'", file=sys.stderr)
            sys.exit(1)
        print("2.5.1 True")
    elif args[0].endswith("torch_head_gpu.py"):
        print("seed_steps_per_s 1e7 seconds 2")
    elif args[0].endswith("torch_bench.py"):
        with open(args[args.index("--json") + 1], "w") as f:
            json.dump({"torch": "2.5.1"}, f)
'''


class GpuCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gpu-check-test-")
        self.dir = self.tmp.name
        self.build = os.path.join(self.dir, "build")
        self.out = os.path.join(self.dir, "out")
        self.bin = os.path.join(self.dir, "bin")
        os.makedirs(os.path.join(self.build, "bench"))
        os.makedirs(self.bin)
        fake = FAKE.replace("PYTHON", sys.executable, 1)
        for path in [os.path.join(self.bin, t) for t in ("cmake", "ctest", "nvidia-smi", "python3")] + \
                [os.path.join(self.build, "demo"), os.path.join(self.build, "bench", "gpu_bench"),
                 os.path.join(self.build, "bench", "bench_kernels")]:
            with open(path, "w") as f:
                f.write(fake)
            os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        os.makedirs(os.path.join(self.build, "CMakeFiles", "3.25.1"))
        with open(os.path.join(self.build, "CMakeFiles", "3.25.1", "CMakeCUDACompiler.cmake"),
                  "w") as f:
            f.write('set(CMAKE_CUDA_COMPILER_VERSION "13.0.88")\n')
        self.mark = os.path.join(self.dir, "hanging")

    def tearDown(self):
        self.tmp.cleanup()

    def env(self, **fake):
        env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"],
                   FAKE_MARK=self.mark)
        env.pop("OUT", None)
        env.update(fake)
        return env

    def command(self, *extra):
        return [sys.executable, GPU_CHECK, "--deps", "system", "--build-dir", self.build,
                "--out", self.out] + list(extra)

    def run_check(self, *extra, **fake):
        p = subprocess.run(self.command(*extra), env=self.env(**fake), capture_output=True,
                           text=True, timeout=300)
        return p, self.report()

    def report(self):
        with open(os.path.join(self.out, "report.json")) as f:
            return json.load(f)

    def statuses(self, report):
        return {s["step"]: s["status"] for s in report["steps"]}

    def test_everything_passes_on_a_gpu(self):
        p, r = self.run_check()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(r["verdict"], "pass")
        self.assertTrue(all(s == "ok" for s in self.statuses(r).values()), self.statuses(r))
        self.assertEqual(p.stdout.strip().splitlines()[-1], "nothing to fix: every step passed")
        self.assertEqual(r["fix_first"], "nothing to fix: every step passed")
        for name in ("report.md", "gpu-check.log"):
            self.assertTrue(os.path.exists(os.path.join(self.out, name)))

    def test_no_gpu_seen_is_a_failure_with_its_reason(self):
        p, r = self.run_check(FAKE_GPU="none")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(r["verdict"], "FAIL")
        gpu = next(s for s in r["steps"] if s["step"] == "gpu")
        self.assertEqual(gpu["status"], "FAIL")
        for words in ("no GPU seen", "driver is older than this build's CUDA runtime",
                      "CUDA up to 12.4", "runtime is 13.0", "driver 580 or later"):
            self.assertIn(words, gpu["summary"])
        for name in ("gpu-tests", "gpu-bench", "torch"):
            self.assertEqual(self.statuses(r)[name], "skipped")
        last = p.stdout.strip().splitlines()[-1]
        self.assertTrue(last.startswith("fix first: gpu: no GPU seen"), last)

    def test_cpu_only_mode_passes_without_a_gpu(self):
        p, r = self.run_check("--cpu-only", FAKE_GPU="none")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(r["verdict"], "pass (CPU-only mode: no GPU step ran)")
        self.assertEqual(self.statuses(r)["gpu"], "skipped")
        self.assertEqual(self.statuses(r)["cpu-bench"], "ok")

    def test_configure_only_configures_and_builds_nothing(self):
        calls = os.path.join(self.dir, "calls")
        p, r = self.run_check("--configure-only", FAKE_GPU="none", FAKE_CALLS=calls)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(r["verdict"], "pass (configure-only mode: every package found; "
                         "nothing built)")
        self.assertEqual(list(self.statuses(r)), ["build"])
        with open(calls) as f:
            ran = [json.loads(line) for line in f]
        self.assertEqual([c[:3] for c in ran], [["cmake", "--preset", "cuda"]], ran)

    def test_configure_only_fails_when_the_configure_fails(self):
        p, r = self.run_check("--configure-only", FAKE_CMAKE_FAILS="1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(self.statuses(r), {"build": "FAIL"})
        self.assertIn("Could NOT find CLI11", r["fix_first"])

    def test_absent_pytorch_is_a_skip_with_a_note(self):
        p, r = self.run_check(FAKE_TORCH="absent")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for name in ("head-vs-torch", "torch"):
            s = next(s for s in r["steps"] if s["step"] == name)
            self.assertEqual(s["status"], "skipped")
            self.assertIn("PyTorch is not installed", s["summary"])
        self.assertTrue(r["verdict"].startswith("pass"), r["verdict"])
        self.assertIn("not run: head-vs-torch (PyTorch is not installed", r["fix_first"])

    def start_hanging(self, step, *extra):
        if os.path.exists(self.mark):
            os.remove(self.mark)
        p = subprocess.Popen(self.command(*extra), env=self.env(FAKE_HANG=step),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        t0 = time.time()
        while not self.marked():
            self.assertIsNone(p.poll(), f"gpu-check ended before step {step} hung")
            self.assertLess(time.time() - t0, 120, f"step {step} never started")
            time.sleep(0.05)
        return p, int(self.marked())

    def marked(self):
        """The hanging tool's process id, once it has written it."""
        try:
            with open(self.mark) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def test_a_run_killed_in_any_step_leaves_its_report(self):
        _, full = self.run_check()
        order = [s["step"] for s in full["steps"]]
        self.assertGreaterEqual(len(order), 12)
        for i, step in enumerate(order):
            with self.subTest(step=step):
                p, fake_pid = self.start_hanging(step)
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                r = self.report()
                self.assertEqual([s["step"] for s in r["steps"]], order[:i + 1])
                self.assertTrue(all(s["status"] == "ok" for s in r["steps"][:i]), r["steps"])
                self.assertEqual(r["steps"][i]["status"], "running")
                self.assertEqual(r["verdict"], f"incomplete: stopped in step {step}")
                with open(os.path.join(self.out, "report.md")) as f:
                    self.assertIn(f"| {step} | running |", f.read())
                self.assertTrue(os.path.exists(os.path.join(self.out, "gpu-check.log")))
                # The hanging tool dies with gpu-check (its parent-death signal).
                for _ in range(100):
                    try:
                        os.kill(fake_pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.05)
                else:
                    os.kill(fake_pid, signal.SIGKILL)
                    self.fail(f"the tool hanging in {step} outlived gpu-check")

    def test_sigterm_is_recorded_in_the_step_it_stops(self):
        p, _ = self.start_hanging("gpu-tests")
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=60), 128 + signal.SIGTERM)
        r = self.report()
        self.assertEqual(r["steps"][-1]["step"], "gpu-tests")
        self.assertIn("interrupted by SIGTERM", r["steps"][-1]["summary"])
        self.assertTrue(r["fix_first"].startswith("fix first: gpu-tests"), r["fix_first"])

    def test_a_step_past_the_budget_is_stopped_and_the_rest_not_run(self):
        t0 = time.time()
        p = subprocess.run(self.command("--budget", "25"), env=self.env(FAKE_HANG="gpu-tests"),
                           capture_output=True, text=True, timeout=120)
        self.assertLess(time.time() - t0, 60)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        r = self.report()
        steps = {s["step"]: s for s in r["steps"]}
        self.assertEqual(steps["gpu-tests"]["status"], "FAIL")
        self.assertIn("timed out", steps["gpu-tests"]["summary"])
        for later in ("table lesson", "gpu-bench", "cpu-bench"):
            self.assertEqual(steps[later]["status"], "FAIL")
            self.assertIn("budget was spent", steps[later]["summary"])
        self.assertTrue(r["fix_first"].startswith("fix first: gpu-tests: timed out"),
                        r["fix_first"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
