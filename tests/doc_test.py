#!/usr/bin/env python3
"""Runs the shell examples of the user docs (README.md, docs/*.md) and checks what they print.

    doc_test.py --source SOURCE_DIR --build BUILD_DIR [--update] FILE.md...

What runs. Every fenced block opened with ```sh, in file order, in ONE bash session per file (a later block may
use a file or a variable an earlier block made). The session starts in a fresh scratch directory that looks like
the repository root: `examples/` and `python/` are copies, every other top-level entry a symbolic link, and
`build` links to BUILD_DIR. So a block runs exactly as a user pastes it in the repository root, reports and model
files land in the scratch directory (never in the source tree; `cmake --install build` writes its
install_manifest.txt into BUILD_DIR, as it always does), and BUILD_DIR comes first on PATH (`permcheck` is
BUILD_DIR/permcheck). The environment adds PYTHONDONTWRITEBYTECODE=1 and PYTEST_ADDOPTS="-p no:cacheprovider"
(nothing written beside the copied sources) and COLUMNS=100 (pytest's width), and drops PERMCHECK_BIN, CI and
PYTHONPATH (a block sets what it needs, as a user would); stdin is /dev/null and stdout is no terminal, so no
progress lines are drawn.

Markers. An HTML comment on the line right before the opening fence (blank lines allowed between) says how a
block is treated, one directive per comment or several separated by "; ":
    <!-- doc-test: skip: REASON -->    not run; the reason is required. Only for the README's set-up commands,
                                        blocks with placeholders a reader fills in, and output blocks.
    <!-- doc-test: exit N -->          the block's last command must exit N, every command before it 0
    <!-- doc-test: needs torch -->     a marker for the reader: the block needs torch in the python3 first on
                                        PATH (the tests' environment has it); it runs and must pass like any other
A ```sh block with no marker must exit 0, and so must every command in it: a command that fails anywhere in a
block (bash's ERR trap: not the tests of if/while/&&/||) fails the test, with the block's file:line and the
command. A block that ends the session (`exit`) fails it too.

Shown output. A ```text block that follows a ```sh block with nothing but blank lines between is that block's
output, stdout and stderr together. The comparison is strict: both sides split into lines, trailing whitespace
stripped from every line and trailing blank lines dropped, then every line must be equal, except that
  * a line of the shown output that is exactly `...` matches any number of lines (zero or more), and
  * the named masks below rewrite both sides before they are compared; nothing else varies.
Named masks (applied in this order, on both sides):
    repo      the scratch directory's absolute path (the repository root the blocks run in), which a shown
              output writes as /path/to/permcheck    -> <repo>
    tmp-path  an absolute path under /tmp or $TMPDIR, to its end -> <tmp>
    rate      a number before " cases/s", " calls/s", " layers/s" -> <rate>
    seconds   a number with a unit of time: "0.41 s", "12 ms", "3.5us", "in 0.52s", "0.40 sec" -> <time>
So the shown output keeps the real numbers of a run, and only timings and temporary paths may differ.

--update rewrites each shown output that does not match from the real run (exit statuses are never rewritten: a
block whose status is wrong still fails). Where the shown output elides lines with `...`, the update keeps the
elisions: as many lines before the first `...` and after the last as were shown, and each run of lines between two
elisions taken where it best matches the real output. Review the diff.

Links. Every relative Markdown link [text](path#anchor) outside code blocks must name a file or folder that
exists (relative to the page), and an anchor must be a heading of the page it names (GitHub's anchors: lowercase,
punctuation dropped, spaces to hyphens, -1, -2 for repeats).

Exit status: 0 when every block and link passed, 1 otherwise (each failure printed with file:line).
"""
import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```\s*([A-Za-z0-9_+-]*)\s*$")
MARKER = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
ELISION = "..."
SHOWN_ROOT = "/path/to/permcheck"   # how a shown output writes the repository root (the "repo" mask)
BLOCK_TIMEOUT_NOTE = "the file's blocks ran past the time limit"


class Block:
    def __init__(self, lang, line, body):
        self.lang, self.line, self.body = lang, line, body   # line: 1-based line of the opening fence
        self.end = None          # 1-based line of the closing fence
        self.directives = {}     # skip -> reason, exit -> int, needs -> set
        self.output = None       # the Block of the shown output, if any


def parse(path, text, problems):
    """The fenced blocks of a Markdown file, with their markers and shown outputs."""
    lines = text.split("\n")
    blocks, i, pending, pending_line = [], 0, None, 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            pending, pending_line = m.group(1), i + 1
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f is None or not lines[i].startswith("```"):
            if lines[i].strip():
                if pending is not None:
                    problems.append("%s:%d: a doc-test marker must come right before a ``` block"
                                    % (path, pending_line))
                pending = None
            i += 1
            continue
        block = Block(f.group(1), i + 1, [])
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            block.body.append(lines[j])
            j += 1
        if j == len(lines):
            problems.append("%s:%d: a ``` block that is never closed" % (path, i + 1))
            break
        block.end = j + 1
        if pending is not None:
            parse_directives(path, pending_line, pending, block, problems)
        pending = None
        blocks.append(block)
        i = j + 1
    for before, after in zip(blocks, blocks[1:]):
        if before.lang == "sh" and after.lang == "text" and not after.directives and \
                all(not lines[k].strip() for k in range(before.end, after.line - 1)):
            before.output = after
    return blocks, lines


def parse_directives(path, line, text, block, problems):
    if text.startswith("skip"):
        reason = text[len("skip"):].lstrip()
        if not reason.startswith(":") or not reason[1:].strip():
            problems.append("%s:%d: `doc-test: skip` needs a reason: <!-- doc-test: skip: why -->" % (path, line))
        block.directives["skip"] = reason[1:].strip()
        return
    for directive in text.split(";"):
        words = directive.split()
        if len(words) == 2 and words[0] == "exit" and words[1].isdigit():
            block.directives["exit"] = int(words[1])
        elif len(words) == 2 and words[0] == "needs" and words[1] == "torch":
            block.directives.setdefault("needs", set()).add("torch")
        else:
            problems.append("%s:%d: unknown doc-test directive %r (skip: REASON, exit N, needs torch)"
                            % (path, line, directive.strip()))


# --- comparison ---------------------------------------------------------------------------------------------

NUMBER = r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"


def masks(scratch):
    tmp_roots = sorted({"/tmp", os.path.realpath(tempfile.gettempdir()), tempfile.gettempdir()}, key=len,
                       reverse=True)
    scratch_forms = sorted({scratch, os.path.realpath(scratch)}, key=len, reverse=True)
    return [
        ("repo", re.compile("|".join(re.escape(s) for s in scratch_forms + [SHOWN_ROOT])), "<repo>"),
        ("tmp-path", re.compile("(?:%s)/[^\\s'\"),:;]*" % "|".join(re.escape(t) for t in tmp_roots)), "<tmp>"),
        ("rate", re.compile(r"\b%s (cases|calls|layers)/s\b" % NUMBER), r"<rate> \1/s"),
        ("seconds", re.compile(r"\b%s ?(?:s|sec|ms|us|µs)\b(?!/)" % NUMBER), "<time>"),
    ]


def normalise(text, mask_list):
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    out = []
    for line in lines:
        for _, pattern, replacement in mask_list:
            line = pattern.sub(replacement, line)
        out.append(line)
    return out


def matches(shown, actual):
    """Whether the shown lines match the actual ones, `...` matching any run of lines (memoised)."""
    memo = {}

    def at(i, j):
        key = (i, j)
        if key not in memo:
            if i == len(shown):
                memo[key] = j == len(actual)
            elif shown[i] == ELISION:
                memo[key] = any(at(i + 1, k) for k in range(j, len(actual) + 1))
            else:
                memo[key] = j < len(actual) and shown[i] == actual[j] and at(i + 1, j + 1)
        return memo[key]

    sys.setrecursionlimit(max(10000, 4 * (len(shown) + len(actual))))
    return at(0, 0)


def updated(shown_raw, actual_raw, mask_list, root):
    """The shown output rewritten from the real one, keeping its elisions (see the module's docstring)."""
    for form in sorted({root, os.path.realpath(root)}, key=len, reverse=True):
        actual_raw = actual_raw.replace(form, SHOWN_ROOT)
    shown = [line.rstrip() for line in shown_raw]
    actual = [line.rstrip() for line in actual_raw.split("\n")]
    while actual and not actual[-1]:
        actual.pop()
    if ELISION not in shown:
        return actual
    segments, current = [], []
    for line in shown:
        if line == ELISION:
            segments.append(current)
            current = []
        else:
            current.append(line)
    segments.append(current)
    head, middles, tail = segments[0], segments[1:-1], segments[-1]
    out = actual[:len(head)] + [ELISION]
    start, stop = len(head), len(actual) - len(tail)
    masked = normalise("\n".join(actual), mask_list)
    for middle in middles:
        want = normalise("\n".join(middle), mask_list) if middle else []
        best, best_score = start, -1.0
        for k in range(start, max(start, stop - len(middle)) + 1):   # line by line, each pair by its characters
            score = sum(difflib.SequenceMatcher(None, a, b).ratio() for a, b in zip(want, masked[k:k + len(middle)]))
            if score > best_score:
                best, best_score = k, score
        out += actual[best:best + len(middle)] + [ELISION]
        start = best + len(middle)
    out += actual[len(actual) - len(tail):] if tail else []
    return out


# --- links --------------------------------------------------------------------------------------------------

def anchors(lines):
    """GitHub's heading anchors of a Markdown file (headings inside code blocks do not count)."""
    found, seen, in_code = set(), {}, False
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else "%s-%d" % (slug, n))
    return found


def check_links(path, lines, problems):
    in_code = False
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue   # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(resolved):
                problems.append("%s:%d: link to %s: no such file" % (path, number, target))
                continue
            if anchor and resolved.endswith(".md"):
                with open(resolved, encoding="utf-8") as f:
                    if anchor not in anchors(f.read().split("\n")):
                        problems.append("%s:%d: link to %s: %s has no heading with the anchor #%s"
                                        % (path, number, target, os.path.relpath(resolved), anchor))


# --- running ------------------------------------------------------------------------------------------------

def scratch_root(source, build, into):
    """A directory that looks like the repository root, for the blocks to run in."""
    root = os.path.join(into, "repo")
    os.mkdir(root)
    for name in sorted(os.listdir(source)):
        if name in (".git", "build") or name.startswith("build-"):
            continue
        origin = os.path.join(source, name)
        if name in ("examples", "python"):
            shutil.copytree(origin, os.path.join(root, name), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            os.symlink(origin, os.path.join(root, name))
    os.symlink(os.path.abspath(build), os.path.join(root, "build"))
    return root


def run_file(blocks, args, work):
    """Runs the file's sh blocks in one bash session; returns {block: (status, output, failed commands)}."""
    root = scratch_root(args.source, args.build, work)
    driver = os.path.join(work, "driver.sh")
    fails = os.path.join(work, "failed-commands")
    script = ["set -E",
              "__doc_fail() { [ \"$4\" = %s ] || printf '%%s\\t%%s\\t%%s\\t%%s\\n' \"$1\" \"$2\" \"$3\" \"$4\" >> %s; }"
              % (shq(driver), shq(fails)),
              "trap '__doc_fail \"$?\" \"$LINENO\" \"$BASH_COMMAND\" \"${BASH_SOURCE[0]}\"' ERR",
              "cd %s" % shq(root)]
    ran = []
    for index, block in enumerate(blocks):
        body = os.path.join(work, "block%d.sh" % index)
        with open(body, "w", encoding="utf-8") as f:
            f.write("\n".join(block.body) + "\n")
        script += ["__doc_block=%d" % index,
                   "source %s > %s 2>&1 < /dev/null" % (shq(body), shq(os.path.join(work, "out%d" % index))),
                   "echo $? > %s" % shq(os.path.join(work, "rc%d" % index))]
        ran.append((index, block))
    with open(driver, "w", encoding="utf-8") as f:
        f.write("\n".join(script) + "\n")
    env = dict(os.environ)
    env["PATH"] = os.path.abspath(args.build) + os.pathsep + env.get("PATH", "")
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTEST_ADDOPTS="-p no:cacheprovider", COLUMNS="100")
    for name in ("PERMCHECK_BIN", "CI", "PYTHONPATH"):
        env.pop(name, None)
    timed_out = False
    session = subprocess.Popen(["bash", driver], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        session.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(session.pid, signal.SIGKILL)   # the session and every program a block started
        session.wait()
    failed = {}
    if os.path.exists(fails):
        with open(fails, encoding="utf-8", errors="replace") as f:
            for record in f.read().split("\n"):
                parts = record.split("\t")
                if len(parts) == 4:
                    index = int(re.search(r"block(\d+)\.sh$", parts[3]).group(1)) if \
                        re.search(r"block(\d+)\.sh$", parts[3]) else None
                    failed.setdefault(index, []).append((int(parts[0]), int(parts[1]), parts[2]))
    results = {}
    for index, block in ran:
        out_path, rc_path = os.path.join(work, "out%d" % index), os.path.join(work, "rc%d" % index)
        output = open(out_path, encoding="utf-8", errors="replace").read() if os.path.exists(out_path) else ""
        if not os.path.exists(rc_path):
            if os.path.exists(out_path):
                why = BLOCK_TIMEOUT_NOTE + " (%d s) in this block" % args.timeout if timed_out else \
                    "the shell session ended in this block (exit?)"
                results[block] = (None, output, failed.get(index, []), why)
            break
        results[block] = (int(open(rc_path).read()), output, failed.get(index, []), None)
    return results, root


def shq(text):
    return "'" + text.replace("'", "'\\''") + "'"


def command_text(block):
    first = [line for line in block.body if line.strip() and not line.startswith("#")]
    text = first[0].strip() if first else "(empty block)"
    return text if len(first) <= 1 else text + " ..."


def judge(path, block, result, mask_list, root, args, problems, replacements):
    """Checks one block's run against its markers and shown output; notes what --update rewrites."""
    where = "%s:%d" % (path, block.line)
    head = "%s: `%s`" % (where, command_text(block))
    if result is None:
        problems.append("%s did not run: an earlier block ended the session or used up the time" % head)
        return
    status, output, failed, why = result
    if why:
        problems.append("%s: %s; its output so far:\n%s" % (head, why, indent(output)))
        return
    want = block.directives.get("exit", 0)
    commands = [(s, block.line + n, c) for s, n, c in failed]
    if want == 0:
        bad = commands or status != 0
    else:
        bad = status != want or len(commands) != 1 or commands[0][0] != want
    if bad:
        said = "".join("\n    line %d: `%s` exited %d" % (n, c, s) for s, n, c in commands)
        problems.append("%s: exited %s, expected %d (every command before the last 0)%s\n  output:\n%s"
                        % (head, status, want, said, indent(output)))
        return
    if block.output is None:
        print("ok   %s (exit %d)" % (head, status))
        return
    shown = normalise("\n".join(block.output.body), mask_list)
    actual = normalise(output, mask_list)
    if matches(shown, actual):
        print("ok   %s (exit %d, output as shown)" % (head, status))
    elif args.update:
        replacements.append((block.output, updated(block.output.body, output, mask_list, root)))
        print("upd  %s: shown output at line %d rewritten" % (head, block.output.line))
    else:
        diff = "\n".join(difflib.unified_diff(shown, actual, "shown at %s:%d" % (path, block.output.line),
                                              "actual", lineterm="", n=2))
        problems.append("%s: the output differs from the one shown at line %d (masked; `...` matches any "
                        "lines):\n%s" % (head, block.output.line, indent(diff)))


def check_file(path, args, problems):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks, lines = parse(path, text, problems)
    check_links(path, lines, problems)
    runnable, skipped = [], []
    for block in blocks:
        if block.lang != "sh":
            continue
        (skipped if "skip" in block.directives else runnable).append(block)
    replacements = []
    with tempfile.TemporaryDirectory(prefix="permcheck-doc-test-") as work:
        results, root = run_file(runnable, args, work)
        mask_list = masks(root)
        for block in runnable:
            judge(path, block, results.get(block), mask_list, root, args, problems, replacements)
    for block in skipped:
        reason = block.directives.get("skip")
        print("skip %s:%d: `%s` (%s)" % (path, block.line, command_text(block), reason))
    if replacements:
        for shown, new in sorted(replacements, key=lambda r: -r[0].line):
            lines[shown.line:shown.end - 1] = new
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True, help="the repository root")
    parser.add_argument("--build", required=True, help="the build directory (put first on PATH)")
    parser.add_argument("--update", action="store_true", help="rewrite the shown outputs from a real run")
    parser.add_argument("--timeout", type=int, default=240, help="seconds for all the blocks of one file")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    args.source = os.path.abspath(args.source)
    if not os.access(os.path.join(args.build, "permcheck"), os.X_OK):
        print("FAIL %s/permcheck: no such program (build the permcheck target first)" % args.build)
        return 1
    problems = []
    for path in args.files:
        check_file(path, args, problems)
    for problem in problems:
        print("FAIL " + problem)
    if problems:
        print("doc_test.py: %d failure(s)" % len(problems))
        return 1
    print("doc_test.py: all passed")
    return 0


def indent(text):
    return "\n".join("    " + line for line in text.rstrip("\n").split("\n"))


if __name__ == "__main__":
    sys.exit(main())
