#!/usr/bin/env python3
"""Tests of scripts/docs_examples.py itself, on small pages whose commands need no GPU: what it
lets differ (pids, durations), what it does not (any figure), unmarked examples, --update.

usage: runner_test.py SOURCE_DIR BUILD_DIR
"""

import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

SOURCE = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
BUILD = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else SOURCE / "build"
FENCE = "```"


def page(text: str) -> str:
    return textwrap.dedent(text).replace("~~~", FENCE)


class Runner(unittest.TestCase):
    def run_on(self, text: str, *options: str) -> tuple[int, str, str]:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "page.md"
            path.write_text(page(text), encoding="utf-8")
            result = subprocess.run(
                [sys.executable, str(SOURCE / "scripts" / "docs_examples.py"), *options,
                 "--source", str(SOURCE), "--build", str(BUILD), str(path)],
                capture_output=True, text=True, timeout=120)
            return result.returncode, result.stdout + result.stderr, path.read_text(encoding="utf-8")

    def test_pids_durations_and_clock_times_may_differ(self):
        status, output, _ = self.run_on("""
            <!-- example: sim=default -->
            ~~~console
            $ echo "gpumem: x: exit status 0, ran $((RANDOM % 900 + 100)) ms (pid $$)"; date +%T
            gpumem: x: exit status 0, ran 53 ms (pid 4242)
            12:00:00
            ~~~
            """)
        self.assertEqual(status, 0, output)
        self.assertIn("checked 1 examples", output)

    def test_a_changed_figure_is_a_difference(self):
        status, output, _ = self.run_on("""
            <!-- example: sim=default -->
            ~~~console
            $ echo "peak 2.1 GiB (pid $$)"
            peak 2.0 GiB (pid 4242)
            ~~~
            """)
        self.assertEqual(status, 1, output)
        self.assertIn("-peak 2.0 GiB (pid 4242)", output)
        self.assertIn("+peak 2.1 GiB (pid", output)

    def test_an_unmarked_console_block_fails_and_a_not_run_one_says_why(self):
        status, output, _ = self.run_on("""
            ~~~
            $ echo hello
            hello
            ~~~

            <!-- example: not run (needs a cluster) -->
            ~~~console
            $ srun hostname
            ~~~

            ~~~sh
            echo not an example: no prompt
            ~~~
            """)
        self.assertEqual(status, 1, output)
        self.assertIn("page.md:2: unmarked example", output)
        self.assertIn("checked 0 examples, 1 not run, 1 problem(s)", output)

    def test_update_rewrites_the_block_only_and_then_it_checks(self):
        text = """
            Prose before.

            <!-- example: sim=default -->
            ~~~console
            $ printf 'one\\ntwo\\n'
            old
            ~~~

            Prose after.
            """
        status, output, updated = self.run_on(text, "--update")
        self.assertEqual(status, 0, output)
        self.assertIn("(1 updated)", output)
        self.assertEqual(updated, page(text).replace("old\n", "one\ntwo\n"))

    def test_a_documented_line_wider_than_the_tool_now_prints_is_a_difference(self):
        long = "word " * 20
        status, output, _ = self.run_on(f"""
            <!-- example: sim=default -->
            ~~~console
            $ printf 'gpumem: %s\\ngpumem:   %s\\n' "{long[:60].strip()}" "{long[60:].strip()}"
            gpumem: {long.strip()}
            ~~~
            """)
        self.assertEqual(status, 1, output)

    def test_the_simulated_gpu_and_a_background_job_are_there(self):
        status, output, _ = self.run_on("""
            <!-- example: sim=two-gpus bg="gpumem-sim workload 'alloc a 1GiB; print ready; sleep 60s'" -->
            ~~~console
            $ gpumem list --csv | cut -d, -f1,3,7
            device,name,used_bytes
            0,NVIDIA H200,1073741824
            1,NVIDIA A100-SXM4-40GB,0
            ~~~
            """)
        self.assertEqual(status, 0, output)

    def test_volatile_and_groups(self):
        status, output, _ = self.run_on("""
            <!-- example: sim=default volatile="sampled [0-9]+" groups="^node" -->
            ~~~console
            $ echo node-1; echo "  sampled $RANDOM"; echo node-0; echo "  done"
            node-0
              done
            node-1
              sampled 7
            ~~~
            """)
        self.assertEqual(status, 0, output)

    def test_the_commands_share_one_shell(self):
        status, output, _ = self.run_on("""
            <!-- example: sim=default -->
            ~~~console
            $ sh -c 'exit 3'
            $ echo $?
            3
            $ word=kept; (sleep 0.2; echo late > late.txt) &
            $ wait; echo $word; cat late.txt
            kept
            late
            ~~~
            """)
        self.assertEqual(status, 0, output)

    def test_python_examples_run_in_one_interpreter(self):
        if not (BUILD / "python" / "gpumem").is_dir():
            self.skipTest("no Python package in this build")
        status, output, _ = self.run_on("""
            <!-- example: sim=two-gpus setup="import gpumem" -->
            ~~~python
            >>> x = 40
            >>> x + 2
            43
            ~~~
            """)
        self.assertEqual(status, 1, output)
        self.assertIn("+42", output)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
