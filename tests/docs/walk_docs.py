#!/usr/bin/env python3
"""Runs every `meshsim` command shown in README.md and docs/*.md, and checks
every link and every repository path those files name.

Commands come from fenced code blocks: a line that starts with `meshsim `
(continued by a trailing backslash), its `# ...` comment dropped. They run
in order, per file, in one scratch directory holding links to the
repository's configs/, tests/ and docs/, with the meshsim under test first
on PATH, so a command may read what an earlier one in the same file wrote.
A command fails the walk on a non-zero exit status. Commands that need a
GPU (`--backend cuda` or `nccl`) are listed as skipped when this machine
has none; commands that need a program this machine lacks (e.g. `dot`)
likewise. `--covered TEXT` (repeatable) skips the commands that contain
TEXT, as "covered": whole studies that another test of the suite already
runs with the same input and output options, so they are not paid twice.

Links: every markdown link target must be a web address (http, https) or a
path inside the repository that exists; every backquoted path that starts
with a top-level folder of the repository (configs/, docs/, tools/, ...)
must exist, except under the output folders a command writes.

  walk_docs.py MESHSIM REPO_ROOT SCRATCH [--only FILE.md] [--covered TEXT]... [--list]
Exit status 0 when every command ran and every link resolves, 1 otherwise.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

TOP_FOLDERS = ("configs/", "docs/", "tools/", "tests/", "bench/", "core/", "hardware/", "topology/", "plan/",
               "sim/", "model/", "reshard/", "pipeline/", "search/", "studies/", "traces/", "runtime/", "cmake/",
               ".ci/")
GPU_BACKEND = re.compile(r"--backend[ =](cuda|nccl)\b")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def doc_files(root, only):
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    if only:
        files = [f for f in files if f.name == only or str(f.relative_to(root)) == only]
    return files


def commands(text):
    """(line number, command) for each meshsim command of the fenced blocks."""
    out, in_block, pending, start = [], False, None, 0
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.lstrip().startswith("```"):
            in_block, pending = not in_block, None
            continue
        if not in_block:
            continue
        line = raw.strip()
        if pending is not None:
            pending += " " + line
        elif line.startswith("meshsim ") or line.startswith("$ meshsim "):
            pending, start = line.removeprefix("$ "), n
        else:
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        out.append((start, strip_comment(pending)))
        pending = None
    return out


def strip_comment(cmd):
    """The command without a trailing shell comment (a # outside quotes)."""
    quote = None
    for i, ch in enumerate(cmd):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or cmd[i - 1].isspace()):
            return cmd[:i].rstrip()
    return cmd


def needs(cmd):
    """Why this machine cannot run `cmd`, or None."""
    if GPU_BACKEND.search(cmd) and not has_gpu():
        return "needs a GPU"
    for prog in re.findall(r"\|\s*([A-Za-z0-9_.-]+)", cmd):
        if shutil.which(prog) is None:
            return f"needs {prog}"
    return None


_gpu = None


def has_gpu():
    global _gpu
    if _gpu is None:
        _gpu = shutil.which("nvidia-smi") is not None and subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True).returncode == 0
    return _gpu


def prepare(scratch, root, meshsim):
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    for name in ("configs", "tests", "docs", "tools", "plan"):
        (scratch / name).symlink_to(root / name)
    bindir = scratch / ".bin"
    bindir.mkdir()
    (bindir / "meshsim").symlink_to(Path(meshsim).resolve())
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}", MPLBACKEND="Agg")
    return env


def run_file(doc, root, scratch, env, failures, covered):
    ran = skipped = 0
    for line, cmd in commands(doc.read_text()):
        where = f"{doc.relative_to(root)}:{line}"
        why = next((f"covered: another test runs {c!r}" for c in covered if c in cmd), None) or needs(cmd)
        if why:
            print(f"skipped  {where}: {cmd}  ({why})")
            skipped += 1
            continue
        t0 = time.monotonic()
        p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=scratch, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        dt = time.monotonic() - t0
        ran += 1
        if p.returncode != 0:
            tail = "\n    ".join(p.stdout.decode(errors="replace").strip().splitlines()[-6:])
            failures.append(f"{where}: exit {p.returncode}: {cmd}\n    {tail}")
            print(f"FAILED   {where} ({dt:.1f} s): {cmd}")
        else:
            print(f"ok       {where} ({dt:.1f} s): {cmd}")
    return ran, skipped


def check_links(doc, root, failures):
    text = doc.read_text()
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{doc.relative_to(root)}:{n}"
        for target in LINK.findall(line):
            if re.match(r"https?://", target) or target.startswith("#"):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            if not path.is_relative_to(root.resolve()):
                failures.append(f"{where}: link leaves the repository: {target}")
            elif not path.exists():
                failures.append(f"{where}: link to a missing file: {target}")
        for span in CODE_SPAN.findall(line):
            word = span.split()[0] if span.split() else ""
            if not word.startswith(TOP_FOLDERS) or any(c in word for c in "*<>{}$|"):
                continue
            path = word.rstrip(".,;:)")
            if not (root / path).exists():
                failures.append(f"{where}: names a path that does not exist: {path}")


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    meshsim, root, scratch = argv[1], Path(argv[2]).resolve(), Path(argv[3]).resolve()
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    covered = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--covered"]
    files = doc_files(root, only)
    if "--list" in argv:
        for doc in files:
            for line, cmd in commands(doc.read_text()):
                print(f"{doc.relative_to(root)}:{line}: {cmd}")
        return 0
    failures = []
    ran = skipped = 0
    for doc in files:
        check_links(doc, root, failures)
        env = prepare(scratch / doc.stem, root, meshsim)
        r, s = run_file(doc, root, scratch / doc.stem, env, failures, covered)
        ran, skipped = ran + r, skipped + s
    print(f"\n{ran} commands ran, {skipped} skipped, {len(failures)} problems in {len(files)} files")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
