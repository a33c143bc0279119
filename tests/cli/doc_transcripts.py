#!/usr/bin/env python3
"""Run the transcripts quoted in a Markdown file and compare their output.

usage: doc_transcripts.py REDISTPLAN SOURCE_ROOT FILE.md

A transcript is a fenced block right after a line `<!-- test: transcript -->`:
  $ COMMAND          a shell command run in SOURCE_ROOT (a `\\` at the end of
    ...continued     a line continues it); a leading `redistplan` or
                     `build/src/redistplan` is the redistplan under test
  output lines       what it prints (stdout, then stderr), exactly, except:
  ...                any number of lines (zero or more)
  $ echo $?          the next line is the previous command's exit status
  $ cd DIR           the later commands of the transcript run in DIR
Timings ("27.605 ms") match any timing.  Trailing blank lines are ignored.
Exit 0 when every transcript matches; a diff of each one that does not.
"""
import os
import re
import subprocess
import sys

TIMING = re.compile(r"\d+(\.\d+)? ms\b")


def transcripts(text):
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "<!-- test: transcript -->":
            start = i + 2
            assert lines[i + 1].startswith("```"), f"line {i + 2}: no fence"
            end = start
            while not lines[end].startswith("```"):
                end += 1
            yield start + 1, lines[start:end]
            i = end
        i += 1


def steps(block):
    """(command, expected lines) pairs."""
    out, i = [], 0
    while i < len(block):
        line = block[i]
        assert line.startswith("$ "), f"expected a command: {line!r}"
        cmd = line[2:]
        while cmd.endswith("\\"):
            i += 1
            cmd = cmd[:-1] + " " + block[i].strip()
        i += 1
        exp = []
        while i < len(block) and not block[i].startswith("$ "):
            exp.append(block[i])
            i += 1
        while exp and not exp[-1].strip():
            exp.pop()
        out.append((cmd, exp))
    return out


def matches(exp, got):
    """exp (with '...' lines) against got, line by line."""
    if not exp:
        return not got
    if exp[0] == "...":
        return any(matches(exp[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and norm(exp[0]) == norm(got[0]) and \
        matches(exp[1:], got[1:])


def norm(line):
    return TIMING.sub("# ms", line.rstrip())


def main():
    rp, root, md = sys.argv[1:4]
    failures = count = 0
    for lineno, block in transcripts(open(md, encoding="utf-8").read()):
        status, cwd = None, root
        for cmd, exp in steps(block):
            if cmd.startswith("cd "):
                cwd = os.path.join(root, cmd[3:].strip())
                continue
            count += 1
            if cmd == "echo $?":
                got = [str(status)]
            else:
                run = re.sub(r"^(build/src/)?redistplan\b", f"'{rp}'", cmd)
                p = subprocess.run(["bash", "-c", run], cwd=cwd, timeout=120,
                                   capture_output=True, text=True)
                status = p.returncode
                got = (p.stdout + p.stderr).rstrip("\n").split("\n")
                got = [] if got == [""] else got
            if not matches(exp, got):
                failures += 1
                print(f"FAIL {md}:{lineno}: $ {cmd}\n--- quoted\n" +
                      "\n".join(exp) + "\n--- got\n" + "\n".join(got))
    if count == 0:
        print(f"FAIL {md}: no transcripts found")
        return 1
    print(f"{count - failures} of {count} quoted commands match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
