#!/usr/bin/env python3
"""The repository's documentation stands alone: no reference leaves it.

Checked in every *.md file and every installed header (include/**/*.h):
  - a relative Markdown link or image ([text](path), [ref]: path) must name
    a file or folder inside the repository, and an #anchor into a Markdown
    file a heading of that file (GitHub's heading ids);
  - no link may be an absolute path;
  - no absolute path outside the system's own folders (/proc, /usr, /tmp,
    ...) may appear anywhere, in code spans and blocks included;
  - no `../` path may lead out of the repository, and no `../shared`
    reference may appear at all;
  - a Markdown file named anywhere (`doc/spec-format.md`) must exist,
    beside the naming file or from the repository root; a bare name
    (`table.md`) somewhere in the repository.
Folders of build outputs (holding build.ninja or meson-private) and hidden
folders are skipped.

usage: check_links.py ROOT          check the repository at ROOT
       check_links.py --self-test   check that each rule catches a bad file
Exit status 0 when clean, 1 with one line per problem.
"""
import functools
import os
import re
import sys
import tempfile

SYSTEM_ROOTS = {"proc", "sys", "dev", "tmp", "usr", "etc", "opt", "var",
                "bin", "lib", "run"}
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
ABSPATH = re.compile(r"(?:^|(?<=[\s`'\"(\[=<,]))(/[A-Za-z_][\w.-]*(?:/[\w.-]+)+)")
UPPATH = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.-][\w./-]*)")
MDNAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-][\w.-]*\.md)\b")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def repo_files(root):
    for d, subdirs, files in os.walk(root):
        subdirs[:] = sorted(
            s for s in subdirs
            if not s.startswith(".")
            and not os.path.exists(os.path.join(d, s, "build.ninja"))
            and not os.path.isdir(os.path.join(d, s, "meson-private")))
        rel = os.path.relpath(d, root)
        for f in sorted(files):
            p = os.path.join(d, f)
            if f.endswith(".md"):
                yield p
            elif f.endswith(".h") and (rel == "include" or
                                       rel.startswith("include" + os.sep)):
                yield p


@functools.lru_cache(maxsize=None)
def slugs(path):
    """GitHub's ids of the headings of a Markdown file."""
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def inside(root, p):
    r = os.path.realpath(root)
    return os.path.realpath(p) == r or os.path.realpath(p).startswith(r + os.sep)


def check_file(root, path, problems, md_names):
    rel = os.path.relpath(path, root)
    here = os.path.dirname(path)
    text = open(path, encoding="utf-8", errors="replace").read()

    def bad(lineno, msg):
        problems.append("%s:%d: %s" % (rel, lineno, msg))

    fence = False
    for n, line in enumerate(text.split("\n"), 1):
        if "../shared" in line:
            bad(n, "reference to ../shared (outside the repository)")
        for m in ABSPATH.finditer(line):
            first = m.group(1).split("/")[1]
            if first not in SYSTEM_ROOTS:
                bad(n, "absolute path %s" % m.group(1))
        for m in UPPATH.finditer(line):
            if not inside(root, os.path.join(here, m.group(1))):
                bad(n, "%s leads out of the repository" % m.group(1))
        for m in MDNAME.finditer(line):
            name = m.group(1)
            if not (os.path.exists(os.path.join(here, name)) or
                    os.path.exists(os.path.join(root, name)) or
                    ("/" not in name and name in md_names)):
                bad(n, "names %s, which is not in the repository" % name)
        if not path.endswith(".md"):
            continue
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        targets = [m.group(1) for m in LINK.finditer(prose)]
        targets += [m.group(1) for m in REFDEF.finditer(prose)]
        for t in targets:
            if SCHEME.match(t):
                continue
            if t.startswith("/"):
                bad(n, "link to the absolute path %s" % t)
                continue
            target, _, anchor = t.partition("#")
            dest = os.path.normpath(os.path.join(here, target)) if target else path
            if not inside(root, dest):
                bad(n, "link %s leads out of the repository" % t)
            elif not os.path.exists(dest):
                bad(n, "link %s: no such file" % t)
            elif anchor and dest.endswith(".md") and anchor not in slugs(dest):
                bad(n, "link %s: no heading #%s in %s" %
                    (t, anchor, os.path.relpath(dest, root)))


def check(root):
    problems = []
    files = list(repo_files(root))
    md_names = {os.path.basename(p) for p in files if p.endswith(".md")}
    for p in files:
        check_file(root, p, problems, md_names)
    return problems


def self_test():
    cases = {
        "dangling link": "[x](missing.md)\n",
        "link out": "[x](../../elsewhere/README.md)\n",
        "absolute link": "[x](/srv/doc.md)\n",
        "absolute path": "see `/work/notes/x.txt`\n",
        "../shared": "see `../shared/notes/a.txt`\n",
        "up path": "run ../../tool.py\n",
        "named md": "the contract is doc/spec-format.md\n",
        "bad anchor": "[x](#no-such-heading)\n# Title\n",
    }
    failed = 0
    for what, body in cases.items():
        with tempfile.TemporaryDirectory() as t:
            root = os.path.join(t, "repo")
            os.makedirs(os.path.join(root, "doc"))
            with open(os.path.join(root, "doc", "a.md"), "w") as f:
                f.write(body)
            if not check(root):
                print("self-test: %s was not caught" % what)
                failed = 1
    good = ("# Title\n[t](#title) [b](b.md#part-2) [r](../README.md)\n"
            "`/proc/self/status`, http://x.org/a/b, ![i](img.png)\n"
            "```\n[not a link](nowhere)\n```\n")
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "doc"))
        for name, body in (("doc/a.md", good), ("doc/b.md", "## Part 2\n"),
                           ("README.md", "doc/a.md\n"), ("doc/img.png", "")):
            with open(os.path.join(t, name), "w") as f:
                f.write(body)
        problems = check(t)
        for p in problems:
            print("self-test: clean file flagged: %s" % p)
            failed = 1
    print("self-test: %s" % ("FAILED" if failed else "%d rules caught, clean tree clean" % len(cases)))
    return failed


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    print("docs: %d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
