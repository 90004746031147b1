#!/usr/bin/env python3
"""Checks the library's size rules: no source file over 600 lines, no function over 120.

    scripts/check-sizes.py [--max-file-lines N] [--max-function-lines N] [--exclude FOLDER]
                           [--list] FOLDER...

Every .c, .h, .cuh, .cpp and .hpp file under each FOLDER (recursively) is read. A function is
counted from its opening line (the first line of its declaration: the return type, or the
`template <...>` line above it) to the line of its closing brace, both included. Comments,
string and character literals and preprocessor lines are blanked out first, so braces inside
them count for nothing. Functions are found at file scope and inside namespace, struct, class,
union and extern "C" bodies, so member functions of C++ device code are counted too; braces of
initializers and enums are skipped. A generated file (one that says "@generated", "generated
file" or "do not edit" in its first five lines) is left out: it is fixed by changing its
generator.

Each finding is printed as `path:line: ...` (paths as given on the command line). Exit status:
0 when nothing is over a limit, 1 when something is, 2 for a wrong command line or a folder that
does not exist. Python 3 standard library only.
"""
import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".c", ".h", ".cuh", ".cpp", ".hpp")
GENERATED = re.compile(r"@generated|generated file|do not edit", re.IGNORECASE)

# A block that holds declarations, so functions may be defined inside it.
CONTAINER = re.compile(
    r"(\bnamespace\b[^()]*$)|(\bextern\s*$)|(\b(struct|class|union)\b[^=()]*$)")
# A C++ access label, which is not part of the declaration after it.
ACCESS_LABEL = re.compile(r"\s*(public|private|protected)\s*:(?!:)")
# What may follow a function's parameter list before its body: C++ qualifiers, a trailing
# return type, a constructor's member initializers.
AFTER_PARAMS = re.compile(
    r"\)\s*((const|volatile|noexcept|override|final|&&?|mutable)\s*)*"
    r"(->\s*[\w:<>,\s*&]+)?\s*(:[^:].*)?$", re.DOTALL)


def blank_out(text):
    """The text with comments, literals and preprocessor lines replaced by spaces; newlines kept
    so that offsets and line numbers stay those of the file."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":
            # A directive runs to the end of the line, continued by a backslash.
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            out[i] = ";"  # ends whatever declaration came before it
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            for k in range(i, j):
                out[k] = " "
            i = j
        else:
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    """Offset of the brace that closes the one at `open_at` (len(code) when unclosed)."""
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(code)


def function_name(header):
    """The name before the parameter list of a function header, for the report."""
    inits = re.search(r"\)\s*:(?!:)", header)  # a constructor's member initializers
    if inits:
        header = header[:inits.start() + 1]
    depth = 0
    for i in range(len(header) - 1, -1, -1):
        if header[i] == ")":
            depth += 1
        elif header[i] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"([\w:~]+(\s*operator\s*\S+)?)\s*$", header[:i])
                if m:
                    return m.group(1)
    return "?"


def is_function(header):
    flat = " ".join(header.split())
    before_params = flat.split("(")[0]
    if "(" not in flat or ("=" in before_params and "operator" not in before_params):
        return False
    return AFTER_PARAMS.search(flat) is not None


def functions(code, begin, end):
    """(name, first line offset, closing brace offset) of each function in code[begin:end],
    descending into container blocks."""
    found = []
    header_start = begin
    i = begin
    while i < end:
        c = code[i]
        if c in ";}":
            header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            close = matching_brace(code, i)
            flat = " ".join(header.split())
            if CONTAINER.search(flat) and not is_function(header):
                found.extend(functions(code, i + 1, close))
            elif is_function(header):
                label = ACCESS_LABEL.match(header)
                skip = label.end() if label else 0
                first = header_start + skip + (len(header[skip:]) - len(header[skip:].lstrip()))
                found.append((function_name(flat), first, close))
            i = close
            header_start = close + 1
        i += 1
    return found


def line_of(code, offset):
    return code.count("\n", 0, offset) + 1


def check_file(path, max_file, max_function, listing=None):
    """The findings of one file, as report lines; every function's size goes to `listing`
    (a list) when one is given."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    head = "\n".join(text.splitlines()[:5])
    if GENERATED.search(head):
        return []
    findings = []
    n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if n_lines > max_file:
        findings.append("%s:1: file is %d lines (limit %d)" % (path, n_lines, max_file))
    code = blank_out(text)
    for name, first, close in functions(code, 0, len(code)):
        start, stop = line_of(code, first), line_of(code, close)
        length = stop - start + 1
        if listing is not None:
            listing.append("%s:%d: %s %d" % (path, start, name, length))
        if length > max_function:
            findings.append("%s:%d: function %s is %d lines (limit %d)" %
                            (path, start, name, length, max_function))
    return findings


def source_files(folder):
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(root, name)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-file-lines", type=int, default=600)
    ap.add_argument("--max-function-lines", type=int, default=120)
    ap.add_argument("--exclude", action="append", default=[], metavar="FOLDER",
                    help="leave out this folder (and what is under it); repeatable")
    ap.add_argument("--list", action="store_true",
                    help="also print every function found, with its length")
    ap.add_argument("folders", nargs="+", metavar="FOLDER")
    args = ap.parse_args(argv)
    excluded = [os.path.normpath(e) for e in args.exclude]
    findings = []
    listing = [] if args.list else None
    n_files = 0
    for folder in args.folders + args.exclude:
        if not os.path.isdir(folder):
            print("check-sizes: %s is not a folder" % folder, file=sys.stderr)
            return 2
    for folder in args.folders:
        for path in source_files(folder):
            norm = os.path.normpath(path)
            if any(norm == e or norm.startswith(e + os.sep) for e in excluded):
                continue
            n_files += 1
            findings.extend(
                check_file(path, args.max_file_lines, args.max_function_lines, listing))
    for line in (listing or []) + findings:
        print(line)
    print("check-sizes: %d files, %d over a limit" % (n_files, len(findings)), file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
