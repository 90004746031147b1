#!/usr/bin/env python3
"""Tests of scripts/check-sizes.py: what it counts as a function, from where to where, and
what it leaves out. Each case writes a small source tree and runs the checker as ctest does.

    python3 tests/scripts/test_check_sizes.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                       "check-sizes.py")


def body(n):
    """n statement lines."""
    return "".join("    x += %d;\n" % i for i in range(n))


class CheckSizes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_checker(self, *args):
        r = subprocess.run([sys.executable, CHECKER] + list(args), cwd=self.root,
                           capture_output=True, text=True)
        return r.returncode, r.stdout

    def sizes(self, name):
        """{function name: (first line, length)} as the checker lists them."""
        rc, out = self.run_checker("--list", "--max-function-lines", "100000", ".")
        self.assertEqual(rc, 0, out)
        found = {}
        for line in out.splitlines():
            path, first, rest = line.split(":", 2)
            fn, length = rest.split()
            if os.path.normpath(path) == name:
                found[fn] = (int(first), int(length))
        return found

    def test_counts_from_the_opening_line_to_the_closing_brace(self):
        # Return type alone on line 2, the parameters and the brace on line 3, 5 statements and
        # the return on lines 4-9, the closing brace on line 10.
        self.write("a.c",
                   "/* a comment */\nstatic int\nf(int x) {\n" + body(5) + "    return x;\n}\n")
        self.assertEqual(self.sizes("a.c"), {"f": (2, 9)})

    def test_the_limit_is_inclusive(self):
        # 118 body lines + the signature line + the closing brace = 120 lines.
        self.write("at.c", "int at_limit(int x) {\n" + body(118) + "}\n")
        rc, out = self.run_checker(".")
        self.assertEqual((rc, out), (0, ""))
        self.write("over.c", "int over_limit(int x) {\n" + body(119) + "}\n")
        rc, out = self.run_checker(".")
        self.assertEqual(rc, 1)
        self.assertEqual(out, "./over.c:1: function over_limit is 121 lines (limit 120)\n")

    def test_braces_in_literals_comments_and_directives_count_for_nothing(self):
        src = ("#define OPEN {\n"
               "#define LONG_MACRO(a) do { \\\n    (a)++; \\\n} while (0)\n"
               "static const char *s = \"}}{ \\\" }\";\n"
               "/* } { */\n"
               "int g(void) {\n"
               "    char c = '}';   // }\n"
               "    const char *t = \"{\";\n"
               "    return c + t[0];\n"
               "}\n")
        self.write("b.c", src)
        self.assertEqual(self.sizes("b.c"), {"g": (7, 5)})

    def test_initializers_enums_and_structs_are_not_functions(self):
        table = "static const int table[] = {\n" + "    1,\n" * 200 + "};\n"
        src = (table + "enum e {\n    A, B\n};\n"
               "typedef struct s {\n    int a;\n    int (*fn)(int);\n} s_t;\n"
               "static const s_t one = {1, 0};\n"
               "int h(void) {\n    return table[0];\n}\n")
        self.write("c.c", src)
        rc, out = self.run_checker("--max-function-lines", "10", ".")
        self.assertEqual((rc, out), (0, ""))
        self.assertEqual(list(self.sizes("c.c")), ["h"])

    def test_cpp_members_are_counted_from_their_template_line(self):
        src = ("namespace dev {\n"
               "template <int N>\n"
               "struct K : Base<N> {\n"
               "  public:\n"
               "    template <int M>\n"
               "    __device__ __forceinline__ int run(int x) const {\n"
               + body(3) +
               "        return x;\n"
               "    }\n"
               "    K() : v(0) {}\n"
               "    int v;\n"
               "};\n"
               "}  // namespace dev\n"
               "extern \"C\" {\n"
               "__global__ void __launch_bounds__(128) entry(int x) {\n"
               "}\n"
               "}\n")
        self.write("d.cuh", src)
        self.assertEqual(self.sizes("d.cuh"), {"run": (5, 7), "K": (12, 1), "entry": (17, 2)})

    def test_file_length_limit(self):
        self.write("ok.h", "int x;\n" * 600)
        rc, out = self.run_checker(".")
        self.assertEqual((rc, out), (0, ""))
        self.write("long.h", "int x;\n" * 601)
        rc, out = self.run_checker(".")
        self.assertEqual((rc, out), (1, "./long.h:1: file is 601 lines (limit 600)\n"))

    def test_generated_files_and_excluded_folders_are_left_out(self):
        self.write("gen/table.c", "/* Generated file: do not edit. */\n" + "int x;\n" * 700)
        self.write("cli/main.c", "int main(void) {\n" + body(200) + "}\n")
        rc, out = self.run_checker("--exclude", "cli", ".")
        self.assertEqual((rc, out), (0, ""))
        rc, out = self.run_checker(".")
        self.assertEqual(rc, 1)
        self.assertIn("./cli/main.c:1: function main is 202 lines", out)
        self.assertNotIn("gen/table.c", out)

    def test_a_missing_folder_is_a_usage_error(self):
        rc, _ = self.run_checker("no-such-folder")
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()
