#!/usr/bin/env python3
"""Write README's C snippet as a program: usage: c_snippet.py README.md OUT.c

The snippet is the fenced block after the line `<!-- test: c-snippet ... -->`.
Its #include lines stay at the top; the rest, as written, becomes the body
of main(), which then returns 0 only when the error struct still says "no
error" (so the snippet's own error handling is tested too).
"""
import sys

text = open(sys.argv[1], encoding="utf-8").read().split("\n")
start = next(i for i, l in enumerate(text) if l.startswith("<!-- test: c-snippet"))
assert text[start + 1].startswith("```c"), "no ```c block after the marker"
end = next(i for i in range(start + 2, len(text)) if text[i].startswith("```"))
body = text[start + 2:end]
includes = [l for l in body if l.startswith("#include")]
code = [l for l in body if not l.startswith("#include")]
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write("/* generated from README.md by tests/cli/c_snippet.py */\n")
    f.write("\n".join(includes) + "\n\nint main(void)\n{\n")
    f.write("\n".join("    " + l if l else "" for l in code))
    f.write("\n    return err.status == REDIST_OK ? 0 : 1;\n}\n")
