"""tools/plot_bench.py on recorded --json files (tests/fixtures/bench/) and on broken
ones. Run by ctest with Debian's python3; exits 77 (ctest: skipped) without matplotlib."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(SOURCE, "tools", "plot_bench.py")
FIXTURES = os.path.join(SOURCE, "tests", "fixtures", "bench")


def plot(source, out):
    return subprocess.run([sys.executable, SCRIPT, source, out], capture_output=True, text=True)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])  # IHDR: width, height


class PlotBench(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_every_recorded_bench_becomes_a_png_of_sensible_size(self):
        for kind in ("read", "write", "transfer"):
            with self.subTest(kind=kind):
                out = os.path.join(self.dir.name, kind + ".png")
                done = plot(os.path.join(FIXTURES, kind + ".json"), out)
                self.assertEqual(done.returncode, 0, done.stderr)
                width, height = png_size(out)
                self.assertGreaterEqual(width, 500)
                self.assertGreaterEqual(height, 300)
                self.assertLess(width * height, 4000 * 4000)
                self.assertGreater(os.path.getsize(out), 10_000)  # more than an empty frame

    def test_a_file_that_is_not_json_is_named_with_line_and_column(self):
        bad = self.write("broken.json", '{"runs": 2,\n "results": [\n')
        done = plot(bad, os.path.join(self.dir.name, "x.png"))
        self.assertEqual(done.returncode, 1)
        self.assertRegex(done.stderr, r"broken\.json:3:1: not JSON")
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "x.png")))

    def test_json_of_another_shape_says_what_it_lacks(self):
        other = self.write("other.json", json.dumps({"results": [{"speed": 1}]}))
        done = plot(other, os.path.join(self.dir.name, "x.png"))
        self.assertEqual(done.returncode, 1)
        self.assertIn("other.json: not the --json of spillway bench", done.stderr)

    def test_a_record_missing_a_figure_names_the_field(self):
        with open(os.path.join(FIXTURES, "read.json"), encoding="utf-8") as f:
            data = json.load(f)
        del data["results"][3]["gbps"]
        damaged = self.write("damaged.json", json.dumps(data))
        done = plot(damaged, os.path.join(self.dir.name, "x.png"))
        self.assertEqual(done.returncode, 1)
        self.assertIn("no field 'gbps'", done.stderr)


if __name__ == "__main__":
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("skipped: python3-matplotlib is not installed", file=sys.stderr)
        sys.exit(77)
    unittest.main()
