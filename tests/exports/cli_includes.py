#!/usr/bin/env python3
"""The command line is a user of the library: every file of src/cli
includes only the installed headers (include/), other files of src/cli,
system headers, and the test-data pattern src/testing/pattern.h (the
static helper library `redist_testing`, never installed; README, "Layers").

    cli_includes.py SOURCE_ROOT [OBJDIR]
                                     check the tree; exit 1 naming each
                                     include that breaks the rule; with
                                     OBJDIR (redistplan's objects,
                                     build/src/redistplan.p), also each
                                     object of src/cli that calls an
                                     internal rd_* function (a prototype
                                     written by hand gets past includes)
    cli_includes.py --self-test      the check on small trees made here,
                                     some breaking the rule, one not

The build puts include/ and src/ on the include path (meson adds the
folder of the target, src/, by itself), so a quoted include is resolved
as the compiler would: beside the file first, then include/ and src/; an
angle include that names a file of src/ reaches into the library too.
An include that is neither a quoted nor an angle name (a macro) is
refused: this check cannot tell where it leads.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ALLOWED_EXTRA = ['src/testing/pattern.h']
INCLUDE = re.compile(r'^\s*#\s*include\b\s*(.*)$')


def where(root, cli, name, quoted):
    """The file an include names, relative to root (None: a system
    header, found in none of the tree's folders)."""
    dirs = ([cli] if quoted else []) + [os.path.join(root, 'include'),
                                        os.path.join(root, 'src')]
    for d in dirs:
        path = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(path):
            return os.path.relpath(path, root)
    return None


def allowed(rel):
    return (rel.startswith('include' + os.sep) or
            rel.startswith(os.path.join('src', 'cli') + os.sep) or
            rel in ALLOWED_EXTRA)


def check(root):
    """The lines breaking the rule, as "file:line: message"."""
    cli = os.path.join(root, 'src', 'cli')
    bad = []
    files = sorted(f for f in os.listdir(cli) if f.endswith(('.c', '.h')))
    if not files:
        return ['%s: no C file to check' % cli]
    for f in files:
        with open(os.path.join(cli, f), encoding='utf-8') as fh:
            for no, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                arg = m.group(1).strip()
                q = re.match(r'^"([^"]+)"', arg)
                a = re.match(r'^<([^>]+)>', arg)
                if not q and not a:
                    bad.append('src/cli/%s:%d: #include %s: not a quoted '
                               'or angle name' % (f, no, arg))
                    continue
                rel = where(root, cli, (q or a).group(1), bool(q))
                if rel is None:
                    if q:
                        bad.append('src/cli/%s:%d: #include %s: no such '
                                   'file in the tree' % (f, no, arg))
                    continue  # a system header
                if not allowed(rel):
                    bad.append('src/cli/%s:%d: #include %s is %s, outside '
                               'include/ and src/cli: the command line '
                               'must use public calls (add one to '
                               'include/redist/)' % (f, no, arg, rel))
    return bad


def check_objects(objdir):
    """Internal calls of the objects of src/cli (nm -u): only the test-data
    pattern's rd_pattern_* are allowed."""
    objs = sorted(glob.glob(os.path.join(objdir, 'cli_*.o')))
    if not objs:
        return ['%s: no object of src/cli (cli_*.o) to check' % objdir]
    bad = []
    for o in objs:
        out = subprocess.run(['nm', '-u', o], check=True, text=True,
                             stdout=subprocess.PIPE).stdout
        for sym in out.split():
            if sym.startswith('rd_') and not sym.startswith('rd_pattern_'):
                bad.append('%s: calls the internal %s' %
                           (os.path.basename(o), sym))
    return bad


def make_tree(base, cli_text):
    for d in ('include/redist', 'src/cli', 'src/core', 'src/testing'):
        os.makedirs(os.path.join(base, d))
    for f in ('include/redist.h', 'include/redist/core.h',
              'src/core/internal.h', 'src/testing/pattern.h',
              'src/testing/other.h', 'src/cli/cli.h'):
        open(os.path.join(base, f), 'w').close()
    with open(os.path.join(base, 'src/cli/a.c'), 'w') as fh:
        fh.write(cli_text)


def self_test():
    good = ('#include <stdio.h>\n#include "cli.h"\n#include "redist.h"\n'
            '#include "redist/core.h"\n#include <redist/core.h>\n'
            '#include "../testing/pattern.h"\n'
            '/* #include "../core/internal.h" in a comment */\n')
    cases = [
        (good, 0),
        (good + '#include "../core/internal.h"\n', 1),
        (good + '#include "core/internal.h"\n', 1),       # through -Isrc
        (good + '#  include <core/internal.h>\n', 1),
        (good + '#include "../testing/other.h"\n', 1),
        (good + '#include HEADER\n', 1),
        (good + '#include "missing.h"\n', 1),
    ]
    failed = 0
    for text, nbad in cases:
        with tempfile.TemporaryDirectory() as base:
            make_tree(base, text)
            got = check(base)
        if len(got) != nbad:
            failed = 1
            print('FAIL: expected %d finding(s), got %r for:\n%s'
                  % (nbad, got, text))
    print('self-test: %d cases, %s' % (len(cases),
                                        'FAILED' if failed else 'ok'))
    return failed


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    bad = check(sys.argv[1])
    if len(sys.argv) == 3:
        bad += check_objects(sys.argv[2])
    for b in bad:
        print(b)
    n = len(os.listdir(os.path.join(sys.argv[1], 'src', 'cli')))
    print('%d include(s) or call(s) outside the rule in src/cli (%d files)'
          % (len(bad), n))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
