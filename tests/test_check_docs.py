#!/usr/bin/env python3
"""scripts/check-docs against docs written for the test: each kind of name that does not exist
(a file, a link's target or anchor, a path outside the repository, a test, an option of demo or
of a script) fails with its one line, the same names that exist pass, and the repository's own
docs pass."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK = os.path.join(ROOT, "scripts", "check-docs")


def check(*docs):
    """Runs check-docs on docs (texts) written to a temporary folder outside the repository."""
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, text in enumerate(docs):
            p = os.path.join(d, f"doc{i}.md")
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
            paths.append(p)
        r = subprocess.run([sys.executable, CHECK, *paths], capture_output=True, text=True,
                           timeout=60)
        return r.returncode, r.stdout.replace(d + os.sep, "").splitlines(), r.stderr


class CheckDocs(unittest.TestCase):
    def assert_fails(self, text, line, name):
        code, out, err = check(text)
        self.assertEqual(code, 1, err)
        self.assertEqual(out, [f"doc0.md:{line}: names {name}, which does not exist"])

    def assert_passes(self, text):
        code, out, err = check(text)
        self.assertEqual(code, 0, "\n".join(out) + err)
        self.assertEqual(len(out), 1)
        self.assertRegex(out[0], r"^check-docs: 1 docs name \d+ paths, \d+ tests and \d+ options")

    def test_the_repositorys_docs_pass(self):
        r = subprocess.run([sys.executable, CHECK], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"^check-docs: \d+ docs name [1-9]\d* paths, [1-9]\d* tests "
                                   r"and [1-9]\d* options, all of which exist\n$")

    def test_a_missing_file_fails(self):
        self.assert_fails("# T\n\nThe kernel `kernels/no_such_kernel.hpp` computes.\n", 3,
                          "kernels/no_such_kernel.hpp")
        self.assert_fails("See\n[the page](docs/NO_SUCH_PAGE.md).\n", 2, "docs/NO_SUCH_PAGE.md")
        self.assert_fails("Prose names host/no_such_file.cpp too.\n", 1, "host/no_such_file.cpp")
        self.assert_fails("`no_such_header.hpp`\n", 1, "no_such_header.hpp")
        self.assert_fails("`host/backend.{hpp,zzz}`\n", 1, "host/backend.{hpp,zzz}")
        self.assert_fails("```sh\nbench/no_such_script.py\n```\n", 2, "bench/no_such_script.py")

    def test_a_path_outside_the_repository_fails(self):
        self.assert_fails("[up](../outside.md)\n", 1, "../outside.md")
        self.assert_fails("copied from `shared/anchors/`\n", 1, "shared/anchors/")

    def test_a_missing_anchor_fails(self):
        self.assert_fails("[cli](docs/CLI.md#no-such-heading)\n", 1,
                          "docs/CLI.md#no-such-heading")
        self.assert_fails("# Here\n\n[back](#there)\n", 3, "#there")

    def test_a_missing_test_fails(self):
        self.assert_fails("`NoSuchSuite.SomeTest`\n", 1, "NoSuchSuite.SomeTest")
        self.assert_fails("`DkStdNumpy.NoSuchTest`\n", 1, "DkStdNumpy.NoSuchTest")
        self.assert_fails("`NoSuchSuite.*`\n", 1, "NoSuchSuite.*")
        self.assert_fails("`DkStdNumpy.NoSuchPrefix...`\n", 1, "DkStdNumpy.NoSuchPrefix...")
        self.assert_fails("`test_no_such_executable`\n", 1, "test_no_such_executable")

    def test_a_missing_option_fails(self):
        self.assert_fails("`demo --table dk-std --no-such-option 3`\n", 1,
                          "--no-such-option (an option of demo)")
        self.assert_fails("```sh\n$ ./build/cpu/demo --table dk-std \\\n    --bogus\n```\n", 2,
                          "--bogus (an option of demo)")
        self.assert_fails("`scripts/gpu-check --cpu-only --no-such-flag`\n", 1,
                          "--no-such-flag (an option of scripts/gpu-check)")
        self.assert_fails("`scripts/gpu-bundle --no-such-flag`\n", 1,
                          "--no-such-flag (an option of scripts/gpu-bundle)")
        self.assert_fails("The option `--no-such-option` alone.\n", 1, "--no-such-option")
        self.assert_fails("`scripts/no-such-script`\n", 1, "scripts/no-such-script")

    def test_names_that_exist_pass(self):
        self.assert_passes(
            "# Here\n\n"
            "[design](docs/DESIGN.md#layout), [back](#here), ![f](results/cpu/dk-std.png),\n"
            "`kernels/dk_std.hpp`, `dk_std.hpp`, `host/backend.{hpp,cpp}`, `kernels/*.cu`,\n"
            "prose kernels/dk_std.hpp, `DkStdNumpy.*`, `GpuCheck.Script`, `test_simt`,\n"
            "`demo --table dk-std --d-k 2,64 --samples 1e6 --rng philox`, `--d-k`, `-q`,\n"
            "`scripts/gpu-check --cpu-only`, `scripts/gpu-bundle --list`, `demo --help`.\n")

    def test_outputs_urls_placeholders_and_other_projects_pass(self):
        self.assert_passes(
            "`build/cpu/demo`, `results/<device>`, `OUT/NAME.part.json`, `x.csv`,\n"
            "`demo --table training-sweep --per-seed runs.csv --out results/new`,\n"
            "[site](https://example.org/a/b.md), https://example.org/c/d.md,\n"
            "`dev/cuda/*.cu` (llm.c), `-ffp-contract=off`, `mpirun -np 2 demo --d-k 2`.\n"
            "```python\nimport attnlab  # no_such_module.py\n```\n")


if __name__ == "__main__":
    unittest.main()
