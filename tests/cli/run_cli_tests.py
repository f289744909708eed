#!/usr/bin/env python3
"""Runs the command-line tests: the real `meshsim` binary, its exit codes,
output and files, as tests/cli/*.test describe them.

THE FILE FORMAT

A .test file is a list of tests. A test is a block of `key: value` lines
that starts with `test:` and ends at a blank line, at the next `test:` or at
the end of the file:

    # Comment lines state what the test that follows checks.
    test: show-alpa-cluster
    run: meshsim topo show configs/topologies/p3.8xlarge-x5.json
    expect: hosts 5, GPUs 20 \\(20 x V100\\)
    expect: nvlink +30 +45

Keys (* repeatable; all but `test:` and `run:` optional):
  test: NAME       ctest shows it as "cli: NAME". Unique over all the .test
                   files; no `;`, `[`, `]` or tab in it.
  run: SCRIPT *    a bash command line. The run lines of a test are joined
                   with ` && ` into one script that `bash -o pipefail -c`
                   runs, so a failing line stops the test. A run line that
                   ends with a backslash continues on the next line (the
                   backslash, the line break and the next line's
                   indentation become one space).
  exit: N          the exit status the script must end with (default 0).
  expect: REGEX *  a line of stdout and stderr together must match REGEX,
                   an extended regular expression as grep -E reads it
                   (matched line by line, `^` and `$` anchoring the line);
                   the runner matches it with Python's re, so keep to what
                   both read alike.
  reject: REGEX *  ... and must not match REGEX.
  label: NAME *    a ctest label (`slow`: the sanitizer runs leave it out).
  skip-exit: N     the script exits N where the test cannot run (no
                   matplotlib, no meshsim-mpi, no GPU build): the test is
                   skipped (the runner exits 77), its expectations unchecked.
  cost: N          ctest's COST: a higher one starts earlier.
  foreach-row: FILE COLUMN...   one test per non-empty line of FILE (tab-
                   separated, relative to the source root). In the name,
                   run, expect and reject lines `{COLUMN}` stands for the
                   line's field and `{COLUMN:re}` for it with grep -E's
                   special characters escaped. An expect or reject line
                   that names a field empty on this line is left out, so an
                   optional field can carry an expectation of its own.
  foreach-file: GLOB...   one test per file matching the globs (relative to
                   the source root, sorted per glob); `{file}` is its path.
In a foreach test every `{COLUMN}` is replaced, a shell `${COLUMN}` too.

Values: the key, its colon and one space are dropped, and so is trailing
whitespace: write a regex's last space as `[ ]`. In expect and reject,
`${OUT}`, `${SRC}`, `${BUILD}` and `${VERSION}` (from the project() line of
SRC/CMakeLists.txt) stand for those values, matched literally. A line whose
first non-blank character is `#` is a comment: those right above `test:`
describe that test, a block followed by a blank line heads a group, and
one inside a test notes the line below it. Anything else is an error.

Scripts: keep a run line to one command or pipeline; group `||` and `;`
as `{ a || exit 77; }` so they do not bind to the lines around them (a
first line `a || exit 77` is fine: `a || exit 77 && b` is `(a || exit 77)
&& b`). Under pipefail a reader that stops early (`grep -q`, `head`) can
kill a writer with SIGPIPE: read a program's output whole
(`| grep X > /dev/null`, `| sed -n 1p`).

HOW A TEST RUNS

In its own scratch folder BUILD/tests/cli/out/STEM/NAME (STEM: the file's
name without .test; NAME: the test's, each character other than a letter,
digit, `.`, `_` or `-` made `_`), removed and made afresh first and left
behind afterwards. It holds links `configs`, `tests`, `docs` and `tools` to
the source tree, so tests name files as the README does, and `.bin/` with
links to `meshsim`, `json_probe` and (given --mpi) `meshsim-mpi`. The
script runs there, stdin /dev/null, with PATH starting with .bin/, and
OUT (the scratch folder, absolute), SRC (the source root), BUILD (the build
folder) and MESHSIM (the meshsim under test, absolute, for scripts that
take a path). `json_probe FILE /pointer=VALUE /pointer~=X /pointer>=X
/pointer<=X /pointer` checks a JSON file (tests/cli/json_probe.cpp).

A test passes when the script exits with `exit:`, every expect matches and
no reject does. A failure prints the script, the exit status, each failed
expectation and the output (a long one cut to its first 60 and last 100
lines).

COMMAND LINE

  run_cli_tests.py --meshsim M --probe P --build B [--src S] [--mpi M2]
                   [--case NAME] [-j N] [--timeout S] [-v] FILE.test...
      runs the tests (all, or the one named): exit 0 when none failed, 77
      when the one --case names was skipped, 1 otherwise.
  run_cli_tests.py --list FILE.test...
      one line per test, tab-separated: file (as given), name, labels
      (comma-separated, or -), skip exit status (or -), cost (or -).
  run_cli_tests.py --inputs FILE.test...
      the files the listing reads and, as `glob:PATTERN`, its foreach-file
      globs: what CMake reconfigures on.

As a module: parse(path) gives a file's Cases (name, line, command, exit,
expects, rejects, labels, skip_exit, cost); prepare(case, ...) makes a
case's scratch folder and returns (folder, environment) to run
`bash -o pipefail -c case.command` in; run_case(case, ...) runs it.
"""

import argparse
import glob as globlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
KEYS = {"test", "run", "exit", "expect", "reject", "label", "skip-exit", "cost", "foreach-row", "foreach-file"}
SINGLE = {"exit", "skip-exit", "cost", "foreach-row", "foreach-file"}
LINKS = ("configs", "tests", "docs", "tools")
ERE_SPECIAL = re.compile(r"([\\.\[\]()*+?{}|^$])")
ENV_IN_REGEX = re.compile(r"\$\{(OUT|SRC|BUILD|VERSION)\}")


class FormatError(Exception):
    pass


@dataclass
class Case:
    file: Path
    name: str
    line: int  # the line of its `test:`
    runs: list = field(default_factory=list)
    exit: int = 0
    expects: list = field(default_factory=list)
    rejects: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    skip_exit: int = None
    cost: float = None
    comment: str = ""

    @property
    def command(self):
        """The whole bash script: the run lines joined with ` && `."""
        return " && ".join(self.runs)

    @property
    def where(self):
        return f"{self.file.name}:{self.line}"


@dataclass
class Result:
    case: Case
    status: str  # "pass", "fail" or "skip"
    rc: int
    output: str
    problems: list  # what failed, one line each
    seconds: float


def regex_escape(text):
    return ERE_SPECIAL.sub(r"\\\1", text)


def _blocks(path):
    """(line number, comment, [(line number, key, value)]) per test block."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    blocks, comment, current = [], [], None
    i = 0
    while i < len(lines):
        number, raw = i + 1, lines[i]
        i += 1
        text = raw.strip()
        if not text:
            current, comment = None, []
            continue
        if text.startswith("#"):
            comment.append(text)
            continue
        m = re.match(r"([a-z-]+):(?: |$)(.*)$", raw)
        if not m or m.group(1) not in KEYS:
            raise FormatError(f"{path}:{number}: expected `key: value` with a key of {', '.join(sorted(KEYS))}")
        key, value = m.group(1), m.group(2).rstrip()
        if key == "run":
            while value.endswith("\\"):
                if i >= len(lines) or not lines[i].strip():
                    raise FormatError(f"{path}:{number}: a run line ends with a backslash but nothing follows")
                value = value[:-1].rstrip() + " " + lines[i].strip()
                i += 1
        if not value.strip():
            raise FormatError(f"{path}:{number}: `{key}:` needs a value")
        if key == "test":
            current = (number, "\n".join(comment), [])
            blocks.append(current)
            comment = []
        elif current is None:
            raise FormatError(f"{path}:{number}: `{key}:` outside a test (a test starts with `test:`)")
        else:
            comment = []  # a comment inside a block notes the line below it
        current[2].append((number, key, value))
    return blocks


def _rows(block, where, src):
    """[{column: value}] for a foreach block, or [None] for a plain one."""
    fields = {key: value for _, key, value in block}
    if "foreach-row" in fields and "foreach-file" in fields:
        raise FormatError(f"{where}: a test takes foreach-row or foreach-file, not both")
    if "foreach-row" in fields:
        words = fields["foreach-row"].split()
        if len(words) < 2:
            raise FormatError(f"{where}: foreach-row: give the table and its column names")
        table, columns = src / words[0], words[1:]
        rows = []
        for n, line in enumerate(table.read_text(encoding="utf-8").split("\n"), 1):
            if not line.strip():
                continue
            values = line.split("\t")
            if len(values) > len(columns):
                raise FormatError(f"{table}:{n}: {len(values)} fields, but {where} names {len(columns)} columns")
            rows.append(dict(zip(columns, values + [""] * (len(columns) - len(values)))))
        return rows
    if "foreach-file" in fields:
        files = []
        for pattern in fields["foreach-file"].split():
            for p in sorted(globlib.glob(str(src / pattern))):
                rel = os.path.relpath(p, src)
                if rel not in files:
                    files.append(rel)
        return [{"file": f} for f in files]
    return [None]


def _substitute(text, row):
    """(text with the row's fields put in, whether it names an empty field)."""
    if row is None:
        return text, False
    named_empty = False

    def put(m):
        nonlocal named_empty
        value = row[m.group(1)]
        named_empty = named_empty or value == ""
        return regex_escape(value) if m.group(2) else value

    pattern = r"\{(" + "|".join(re.escape(c) for c in row) + r")(:re)?\}"
    return re.sub(pattern, put, text), named_empty


def parse(path, src=ROOT):
    """The cases of one .test file, in file order (foreach tests expanded)."""
    path, src = Path(path), Path(src)
    cases = []
    for line, comment, block in _blocks(path):
        where = f"{path}:{line}"
        keys = [key for _, key, _ in block]
        for key in SINGLE:
            if keys.count(key) > 1:
                raise FormatError(f"{where}: `{key}:` given twice")
        if "run" not in keys:
            raise FormatError(f"{where}: a test needs at least one `run:` line")
        rows = _rows(block, where, src)
        if not rows:
            raise FormatError(f"{where}: the foreach finds no row or file")
        for row in rows:
            case = Case(file=path, name="", line=line, comment=comment)
            for number, key, value in block:
                at = f"{path}:{number}"
                if key in ("foreach-row", "foreach-file"):
                    continue
                put, names_empty = _substitute(value, row)
                if key in ("expect", "reject"):
                    if not names_empty:
                        (case.expects if key == "expect" else case.rejects).append(put)
                elif key == "test":
                    case.name = put.strip()
                elif key == "run":
                    case.runs.append(put)
                elif key in ("exit", "skip-exit", "cost"):
                    try:
                        n = (float if key == "cost" else int)(put)
                    except ValueError:
                        raise FormatError(f"{at}: {key}: {put!r} is not a number") from None
                    setattr(case, key.replace("-", "_"), n)
                elif key == "label":
                    case.labels.append(put.strip())
            if not case.name or re.search(r"[;\[\]\t]", case.name):
                raise FormatError(f"{where}: a test name must not be empty nor hold ; [ ] or a tab: {case.name!r}")
            cases.append(case)
    return cases


def parse_all(paths, src=ROOT):
    """The cases of all the files; a name (or scratch folder) used twice is an error."""
    cases, seen = [], {}
    for path in paths:
        for case in parse(path, src):
            for key in (case.name, scratch_dir(case, "/")):
                if key in seen:
                    raise FormatError(f"{case.where}: test {case.name!r} clashes with the one at {seen[key]}")
                seen[key] = case.where
            cases.append(case)
    return cases


def inputs(paths, src=ROOT):
    """The files a listing of `paths` reads, and its foreach-file globs."""
    files, globs = [str(Path(__file__).resolve())], []
    for path in paths:
        files.append(str(Path(path).resolve()))
        for _, _, block in _blocks(path):
            for _, key, value in block:
                if key == "foreach-row":
                    files.append(str(Path(src) / value.split()[0]))
                elif key == "foreach-file":
                    globs += [str(Path(src) / g) for g in value.split()]
    return files, globs


def project_version(src):
    try:
        text = (Path(src) / "CMakeLists.txt").read_text()
    except OSError:
        return None
    m = re.search(r"project\(\s*\w+\s+VERSION\s+([0-9][0-9.]*)", text)
    return m.group(1) if m else None


def scratch_dir(case, build):
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", case.name)
    return Path(build).resolve() / "tests" / "cli" / "out" / case.file.stem / safe


def prepare(case, meshsim, probe, src, build, mpi=None, scratch=None, fresh=True):
    """Makes the case's scratch folder (afresh when `fresh`) and returns (folder,
    environment) to run `bash -o pipefail -c case.command` in."""
    src, build = Path(src).resolve(), Path(build).resolve()
    scratch = Path(scratch) if scratch else scratch_dir(case, build)
    if fresh and scratch.exists():
        shutil.rmtree(scratch)
    bindir = scratch / ".bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for name in LINKS:
        link = scratch / name
        if not link.is_symlink():
            link.symlink_to(src / name)
    programs = {"meshsim": meshsim, "json_probe": probe}
    if mpi:
        programs["meshsim-mpi"] = mpi
    for name, target in programs.items():
        link = bindir / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(Path(target).resolve())
    env = dict(os.environ)
    env.update(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", OUT=str(scratch), SRC=str(src),
               BUILD=str(build), MESHSIM=str(Path(meshsim).resolve()))
    version = project_version(src)
    if version:
        env["VERSION"] = version
    return scratch, env


def _in_regex(regex, env):
    def put(m):
        if m.group(1) not in env:
            raise FormatError(f"${{{m.group(1)}}} has no value (VERSION: no project() line with a VERSION?)")
        return regex_escape(env[m.group(1)])

    return ENV_IN_REGEX.sub(put, regex)


def _matches(regex, output):
    """Whether a line of `output` matches `regex`, as `grep -E` would find
    it (line by line; the tests' patterns use nothing that Python's re and
    POSIX extended expressions read differently), without starting grep."""
    try:
        pattern = re.compile(regex)
    except re.error as e:
        raise FormatError(f"cannot use the pattern {regex!r}: {e}")
    text = output.decode(errors="replace") if isinstance(output, bytes) else output
    return any(pattern.search(line) for line in text.splitlines())


def run_case(case, meshsim, probe, src, build, mpi=None, timeout=1500):
    t0 = time.monotonic()
    scratch, env = prepare(case, meshsim, probe, src, build, mpi)
    proc = subprocess.Popen(["bash", "-o", "pipefail", "-c", case.command], cwd=scratch, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    problems = []
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        problems.append(f"timed out after {timeout} s (killed)")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    rc = proc.returncode
    text = out.decode("utf-8", errors="replace")
    if not problems and case.skip_exit is not None and rc == case.skip_exit:
        return Result(case, "skip", rc, text, [], time.monotonic() - t0)
    if not problems:
        if rc != case.exit:
            problems.append(f"exit code {rc}, expected {case.exit}")
        try:
            for regex in case.expects:
                if not _matches(_in_regex(regex, env), out):
                    problems.append(f"output does not match: {regex}")
            for regex in case.rejects:
                if _matches(_in_regex(regex, env), out):
                    problems.append(f"output matches the rejected: {regex}")
        except FormatError as e:
            problems.append(str(e))
    return Result(case, "fail" if problems else "pass", rc, text, problems, time.monotonic() - t0)


def shorten(text, head=60, tail=100, width=2000):
    lines = text.rstrip("\n").split("\n")
    cut = [ln if len(ln) <= width else f"{ln[:width]}... ({len(ln) - width} more characters)" for ln in lines]
    if len(cut) > head + tail + 10:
        cut = cut[:head] + [f"... ({len(cut) - head - tail} lines left out) ..."] + cut[-tail:]
    return "\n".join(cut)


def report(result, verbose):
    c = result.case
    head = f"{result.status.upper():4}  {c.name}  ({c.where}, {result.seconds:.1f} s)"
    if result.status == "skip":
        head += f": exit {result.rc} means skipped"
    if result.status != "fail" and not verbose:
        return head
    parts = [head, "--- command:", c.command]
    parts += [f"--- {p}" for p in result.problems]
    parts += [f"--- output ({len(result.output.splitlines())} lines):", shorten(result.output) if result.output
              else "(none)"]
    return "\n".join(parts)


def main(argv):
    ap = argparse.ArgumentParser(description="Runs tests/cli/*.test (see the module docstring for the format).")
    ap.add_argument("files", nargs="+", metavar="FILE.test")
    ap.add_argument("--list", action="store_true", help="list the tests, tab-separated")
    ap.add_argument("--inputs", action="store_true", help="list the files and globs the listing reads")
    ap.add_argument("--meshsim")
    ap.add_argument("--probe", help="the json_probe binary")
    ap.add_argument("--mpi", help="the meshsim-mpi binary, when there is one")
    ap.add_argument("--src", default=str(ROOT), help="the source root (default: this file's)")
    ap.add_argument("--build", help="the build folder")
    ap.add_argument("--case", help="run only the test of this name")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1500, help="seconds per test (default 1500, as ctest)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test's command and output")
    args = ap.parse_args(argv[1:])
    try:
        if args.inputs:
            files, globs = inputs(args.files, Path(args.src))
            print("\n".join(files + [f"glob:{g}" for g in globs]))
            return 0
        cases = parse_all(args.files, Path(args.src))
    except (FormatError, OSError) as e:
        print(f"run_cli_tests: {e}", file=sys.stderr)
        return 1
    if args.list:
        for path in args.files:
            for c in (c for c in cases if c.file == Path(path)):
                cost = "-" if c.cost is None else f"{c.cost:g}"
                skip = "-" if c.skip_exit is None else str(c.skip_exit)
                print(f"{path}\t{c.name}\t{','.join(c.labels) or '-'}\t{skip}\t{cost}")
        return 0
    missing = [o for o in ("meshsim", "probe", "build") if getattr(args, o) is None]
    if missing:
        ap.error("running tests needs " + ", ".join(f"--{o}" for o in missing))
    if args.case is not None:
        cases = [c for c in cases if c.name == args.case]
        if not cases:
            print(f"run_cli_tests: no test named {args.case!r} in {', '.join(args.files)}", file=sys.stderr)
            return 1
    t0 = time.monotonic()
    results = []
    show = args.verbose or args.case is not None
    if args.jobs <= 1 or len(cases) == 1:  # (ctest runs one case per process: no threads to start)
        for c in cases:
            results.append(run_case(c, args.meshsim, args.probe, args.src, args.build, args.mpi, args.timeout))
            print(report(results[-1], show and results[-1].status != "pass" or args.verbose), flush=True)
    else:
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_case, c, args.meshsim, args.probe, args.src, args.build, args.mpi,
                                   args.timeout) for c in sorted(cases, key=lambda c: -(c.cost or 0))]
            for f in concurrent.futures.as_completed(futures):
                results.append(f.result())
                print(report(results[-1], show and results[-1].status != "pass" or args.verbose), flush=True)
    count = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "skip")}
    if len(results) > 1:
        print(f"\n{count['pass']} passed, {count['fail']} failed, {count['skip']} skipped "
              f"in {time.monotonic() - t0:.1f} s")
        for r in results:
            if r.status == "fail":
                print(f"  FAILED  {r.case.name}  ({r.case.where})")
    if count["fail"]:
        return 1
    return 77 if args.case is not None and count["skip"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
