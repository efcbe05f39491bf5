#!/usr/bin/env python3
"""Lists the functions and files of the C++/CUDA sources that are longer than the project allows.

Usage: scripts/code_size.py [--max-function N] [--max-file N] [--top K] [DIR...]

Scans the *.cpp, *.h, *.cu and *.cuh files under each DIR (default: src and apps, relative to the
repository root) and prints
  - every function whose body is longer than N lines (default 80), longest first;
  - every file longer than N lines (default 600), longest first;
  - a summary line with both counts and the K longest functions (default 5).

A function's length is counted from the line that holds its name to the line of its closing brace,
both included; a lambda or a local class counts toward the function that holds it. Member functions
defined inside a class body are functions too. The scan matches braces after removing comments,
string and character literals (raw strings included) and preprocessor lines; a brace at namespace or
class level opens a function body when the text before it has a parameter list (a '(' not after a
top-level '='), else it is a class, an enum or an initializer. It is a measure, not a parser: an
unusual macro may fool it, which shows as an odd name in the list.

Exit status 0 always (it reports; it does not gate).
"""

import argparse
import os
import re
import sys

EXTENSIONS = (".cpp", ".h", ".cu", ".cuh")


def strip_code(text):
    """Returns text with comments, literals and preprocessor lines blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # Preprocessor line, with backslash continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) or (
            c in "uUL8" and re.match(r'(u8|u|U|L)R"', text[i:i + 4]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))
        ):
            q = text.index('"', i)
            paren = text.index("(", q)
            delim = ")" + text[q + 1:paren] + '"'
            end = text.find(delim, paren)
            end = n if end < 0 else end + len(delim)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # String or character literal ('1'000 digit separators are skipped by the isalnum test).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


CONTAINER = re.compile(r"^(template\s*<.*>\s*)?(namespace|extern\s*\"\"|(class|struct|union)\b)", re.S)


def function_name(header):
    """The name before the parameter list of a function header, or None if it is not a function."""
    h = re.sub(r"\boperator\s*(\(\)|[^\s(]+)", "operator", header)
    h = re.sub(r"\b(__launch_bounds__|__attribute__|alignas)\s*\(+[^()]*\)+", "", h)
    depth = 0
    for k, ch in enumerate(h):
        if ch in "([":
            if ch == "(" and depth == 0:
                m = re.search(r"([~\w:]+(<[^()]*>)?)\s*$", h[:k])
                if not m or re.fullmatch(r"(if|for|while|switch|catch|return|decltype|sizeof|alignas|__attribute__)", m.group(1)):
                    return None
                return m.group(1)
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "=" and depth == 0:
            return None
    return None


def scan(path):
    """Yields (name, first line, last line) of every function defined in the file at path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = strip_code(f.read())
    line_of = []
    line = 1
    for ch in code:
        line_of.append(line)
        if ch == "\n":
            line += 1
    stack = []  # per open brace: 'container' | 'skip'
    header_start = 0
    i, n = 0, len(code)
    while i < n:
        ch = code[i]
        if ch in ";}" or (ch == ":" and code[header_start:i].strip() in ("public", "private", "protected")):
            if ch == "}" and stack:
                stack.pop()
            header_start = i + 1
        elif ch == "{":
            header = code[header_start:i].strip()
            if CONTAINER.match(header) and "(" not in header.split("{")[0] or header.startswith("namespace"):
                stack.append("container")
                header_start = i + 1
            else:
                name = function_name(header)
                # Find the matching close brace.
                depth, j = 1, i + 1
                while j < n and depth:
                    if code[j] == "{":
                        depth += 1
                    elif code[j] == "}":
                        depth -= 1
                    j += 1
                if name and not re.match(r"^(enum)\b", header):
                    first = header_start + len(code[header_start:]) - len(code[header_start:].lstrip())
                    name_pos = code.find(name, first)
                    yield name, line_of[name_pos if name_pos >= 0 else first], line_of[j - 1]
                    i = j
                    # A function body ends the header; a brace initializer does not.
                    header_start = j
                    continue
                i = j
                continue
        i += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--max-file", type=int, default=600)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("dirs", nargs="*", default=["src", "apps"])
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    long_functions, long_files = [], []
    for d in args.dirs:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for name in sorted(names):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = sum(1 for _ in f)
                if lines > args.max_file:
                    long_files.append((lines, rel))
                for fn, first, last in scan(path):
                    length = last - first + 1
                    if length > args.max_function:
                        long_functions.append((length, f"{rel}:{first}", fn))
    long_functions.sort(key=lambda t: (-t[0], t[1]))
    long_files.sort(key=lambda t: (-t[0], t[1]))
    print(f"functions over {args.max_function} lines:")
    for length, where, fn in long_functions:
        print(f"  {length:5d}  {fn}  {where}")
    print(f"files over {args.max_file} lines:")
    for lines, rel in long_files:
        print(f"  {lines:5d}  {rel}")
    top = ", ".join(f"{fn} {length}" for length, _, fn in long_functions[: args.top])
    print(f"summary: {len(long_functions)} functions over {args.max_function} lines, "
          f"{len(long_files)} files over {args.max_file} lines; longest: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
