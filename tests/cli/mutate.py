#!/usr/bin/env python3
"""Mutation run over every meshsim reader and the CLI's options.

Takes the bundled inputs of each reader (topologies, plans, calibrations,
models, NCCL XML dumps, studies, search spaces), mutates each a few times
-- a value replaced by a hostile one (1e400, 2^63, negative sizes, long or
non-UTF-8 strings, wrong types), a key deleted, repeated or made up, a
value nested 150 levels deep, an array repeated, the text truncated or a
byte flipped -- and runs the command that reads it in a child process.
The same is done to the options of valid command lines.

Every run must end with exit status 0 or 2 (1 too for `run`, a failed
verification), print valid UTF-8, finish within --timeout seconds and stay
under --memory MB of peak resident memory. Mutations that make the input
invalid by construction (a repeated key, a number beyond a double, nesting
past the limit) must be refused: exit 2. A valid input that asks for
more work than those limits (a batch of 65,536 sequences) is counted
apart, as "large", when a second run with six times the time completes
it. Anything else is a failure,
printed with the input that caused it; the exit status is 1 when there was
one.

  mutate.py --meshsim BIN --root REPO [--per-reader N] [--seed S] [--jobs J]
"""
import argparse
import concurrent.futures
import glob
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# Values that replace a number or string. Each is raw JSON text.
HOSTILE = [
    "0", "-1", "-0.5", "1e400", "-1e400", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "18446744073709551616", "1e18", "4294967296", "65536", "0.0000001",
    "null", "true", "[]", "{}", '""', '"abc"', '"-1B"', '"9223372036854775807B"', '"1e400GB"',
    '"NaN"', '"inf"', '"0s"', '"-5us"', '"100000s"', '"1e18B"', '"16EiB"', '"1 GB"', '"R"',
    '"S0"', '"S00"', '"S01"', '"h0/gpu99"', '"all,hosts=0"', '"' + "x" * 5000 + '"',
    '"\\u0000"', '"\\ud800"', '"caf\\u00e9"', '"../../etc/passwd"', '"f16"', '"u8"',
]
# Mutations whose input no reader may accept.
MUST_REFUSE = {"duplicate-key", "huge-number", "deep-nesting"}


class Pairs(list):
    """A JSON object as its (key, value) pairs, in order, repeats kept."""


class Raw:
    def __init__(self, text):
        self.text = text


def dump(v):
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, Pairs):
        return "{" + ", ".join(json.dumps(k) + ": " + dump(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(dump(x) for x in v) + "]"
    return json.dumps(v)


def slots(v, out):
    """Every place a value sits: (container, index) pairs."""
    if isinstance(v, Pairs):
        for i, (_, x) in enumerate(v):
            out.append((v, i))
            slots(x, out)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out.append((v, i))
            slots(x, out)
    return out


def get(c, i):
    return c[i][1] if isinstance(c, Pairs) else c[i]


def put(c, i, x):
    if isinstance(c, Pairs):
        c[i] = (c[i][0], x)
    else:
        c[i] = x


def mutate_json(text, rng):
    """(kind, mutated text) for the JSON document `text`."""
    doc = json.loads(text, object_pairs_hook=Pairs)
    places = slots(doc, [])
    kinds = ["value", "value", "value", "delete", "duplicate-key", "unknown-key", "huge-number",
             "deep-nesting", "repeat-array", "truncate", "flip-byte"]
    kind = rng.choice(kinds)
    if not places and kind not in ("truncate", "flip-byte"):
        kind = "truncate"
    if kind in ("truncate", "flip-byte"):
        return mutate_bytes(text.encode(), rng)
    c, i = rng.choice(places)
    objects = [(c2, i2) for c2, i2 in places if isinstance(get(c2, i2), Pairs) and get(c2, i2)]
    if kind == "value":
        put(c, i, Raw(rng.choice(HOSTILE)))
    elif kind == "huge-number":
        put(c, i, Raw(rng.choice(["1e400", "-1e400", "1" + "0" * 400])))
    elif kind == "deep-nesting":
        put(c, i, Raw("[" * 150 + "1" + "]" * 150))
    elif kind == "repeat-array":
        arrays = [get(c2, i2) for c2, i2 in places if isinstance(get(c2, i2), list) and get(c2, i2)]
        if not arrays:
            return mutate_json(text, rng)
        a = rng.choice(arrays)
        a.extend([a[rng.randrange(len(a))]] * rng.choice([2, 100, 3000]))
    elif not objects:
        return mutate_json(text, rng)
    else:
        obj = get(*rng.choice(objects))
        j = rng.randrange(len(obj))
        if kind == "delete":
            del obj[j]
        elif kind == "duplicate-key":
            obj.append((obj[j][0], Raw(rng.choice(HOSTILE[:20]))))
        else:
            obj.append(("no_such_key", Raw("1")))
    return kind, dump(doc).encode()


def mutate_xml(text, rng):
    data = bytearray(text.encode())
    kind = rng.choice(["truncate", "flip-byte", "attribute", "entity", "deep"])
    at = rng.randrange(max(1, len(data)))
    if kind == "truncate":
        return kind, bytes(data[:at])
    if kind == "flip-byte":
        data[at] = rng.choice([0x00, 0x01, 0xFF, ord("<"), ord(">"), ord("&"), ord('"')])
        return kind, bytes(data)
    quotes = [k for k in range(len(data)) if data[k] == ord('"')]
    if kind == "attribute" and quotes:
        q = rng.choice(quotes[1::2] or quotes)
        value = rng.choice(['"-1"', '"1e400"', '"99999999999999999999"', '""', '"x"', '"&#0;"', '"&bogus;"'])
        data[q:q + 1] = b'" ' + rng.choice([b"bw", b"dev", b"busid", b"numaid", b"speed"]) + b"=" + value.encode()
        return kind, bytes(data)
    if kind == "entity":
        data[at:at] = rng.choice([b"&bogus;", b"&#0;", b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"&amp;"])
        return kind, bytes(data)
    data[at:at] = b"<a>" * 100 + b"</a>" * 100
    return kind, bytes(data)


def mutate_bytes(data, rng):
    data = bytearray(data)
    at = rng.randrange(max(1, len(data)))
    if rng.random() < 0.5:
        return "truncate", bytes(data[:at])
    data[at:at + 1] = bytes([rng.randrange(256)])
    return "flip-byte", bytes(data)


def mutate_file(seed, rng):
    """(kind, mutated bytes) of a seed file; a seed that is not JSON (some
    are bad inputs on purpose) or XML gets byte mutations."""
    raw = open(seed, "rb").read()
    try:
        text = raw.decode("utf-8")
        if seed.endswith(".xml"):
            return mutate_xml(text, rng)
        json.loads(text)
    except (UnicodeDecodeError, ValueError):
        return mutate_bytes(raw, rng)
    return mutate_json(text, rng)


# Each reader: its seed files (globs under the repository) and the command
# that reads one ({f} is the mutated file).
READERS = {
    "topology": (["configs/topologies/*.json", "tests/data/bad_topologies/*.json"], [["topo", "show", "{f}"]]),
    "plan": (["configs/plans/*.json", "tests/data/plans/*.json"],
             [["simulate", "{f}"], ["run", "{f}", "--backend", "host", "--timeout", "5s"]]),
    "calibration": (["configs/calibrations/*.json", "tests/data/calibrations/*.json"],
                    [["collective", "allreduce", "-t", "dgx-h100", "--calibration", "{f}", "--size", "1MiB"]]),
    "model": (["configs/models/*.json", "tests/data/models/*.json"],
              [["pipeline", "--model", "{f}", "-t", "dgx-a100", "--hosts", "2", "--tp", "4", "--pp", "2",
                "-m", "4"]]),
    "nccl-xml": (["configs/nccl/*.xml"], [["topo", "import-nccl", "{f}"]]),
    "study": (["configs/studies/alpa-microbench.json", "configs/studies/nccl-tests.json",
               "tests/data/bad_*study*.json"], [["study", "{f}", "--no-plots"]]),
    "search-space": (["tests/data/search-small.json"], [["search", "{f}", "--no-plots"]]),
}

# Valid command lines whose option values are mutated.
COMMANDS = [
    ["topo", "show", "dgx-h100", "--hosts", "2", "--fabric", "rail"],
    ["topo", "route", "dgx-h100", "--hosts", "2", "h0/gpu0", "h1/gpu3"],
    ["collective", "allreduce", "-t", "dgx-h100", "--hosts", "2", "--size", "1MiB"],
    ["collective", "allgather", "-t", "dgx-a100", "--sweep", "1KiB:1MiB"],
    ["reshard", "-t", "dgx-a100", "--hosts", "2", "--src-mesh", "hosts=0", "--dst-mesh", "hosts=1",
     "--src-spec", "S0 R", "--dst-spec", "R S0", "--tensor", "1024x1024:f16"],
    ["pipeline", "--model", "gpt3-1.3b", "-t", "dgx-a100", "--hosts", "2", "--tp", "4", "--pp", "2", "-m", "4"],
    ["terapipe", "--model", "gpt3-1b", "-t", "p3.16xlarge", "--hosts", "2", "--pp", "2", "--op", "8",
     "--batch", "2"],
    ["search", "--model", "gpt3-1.3b", "-t", "dgx-a100", "--hosts", "1", "--global-batch", "16", "--no-plots"],
]
OPTION_VALUES = ["", "-1", "0", "1e400", "nan", "inf", "-inf", "9223372036854775808", "abc", "1,,2", "x" * 5000,
                 "\udcff", "1e18B", "-5s", "/nonexistent/x.json", "S00", "h0/gpu999", "all,hosts=0",
                 "1024x-1:f16", "0x0:f16", "1", "2", "8", "1GiB", "rail", "fat-tree"]


def classify(cmd, code, out, err, rss_mb, kind, args):
    allowed = {0, 2} | ({1} if cmd[0] == "run" else set())
    if code is None:
        return f"ran past {args.timeout} s"
    if code < 0:
        return f"died by signal {-code}"
    if code not in allowed:
        return f"exit {code}" + (" (internal error)" if code == 3 else "")
    if kind in MUST_REFUSE and code != 2:
        return f"accepted an input with a {kind} (exit {code})"
    if rss_mb > args.memory:
        return f"peak memory {rss_mb:.0f} MB"
    try:
        err.decode("utf-8")
        out.decode("utf-8")
    except UnicodeDecodeError:
        return "printed bytes that are not UTF-8"
    return None


def spawn(cmd, cwd, args, limit, address_space_mb=None):
    """(exit code or None past `limit` s, stdout, stderr, peak MB, seconds);
    the child's own peak memory comes from wait4. address_space_mb: the
    child's RLIMIT_AS, as on a shared machine."""
    start = time.monotonic()

    def limit_memory():
        if address_space_mb is not None:
            n = int(address_space_mb) << 20
            resource.setrlimit(resource.RLIMIT_AS, (n, n))

    p = subprocess.Popen([args.meshsim] + cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=limit_memory)
    late = threading.Event()

    def kill():
        late.set()
        os.killpg(p.pid, signal.SIGKILL)

    timer = threading.Timer(limit, kill)
    timer.start()
    got = {}
    readers = [threading.Thread(target=lambda k=k, f=f: got.__setitem__(k, f.read()))
               for k, f in (("out", p.stdout), ("err", p.stderr))]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    code = None if late.is_set() else p.returncode
    return code, got["out"], got["err"], usage.ru_maxrss / 1024, time.monotonic() - start


def run_one(job, args):
    """Runs one job. A run past the time or memory limit runs again with six
    times the time: if it then succeeds, the input was valid and asked for
    that much work (a large batch, say), which is counted as "large", not a
    failure; a refusal or crash that late, or no end, is a failure."""
    reader, cmd, kind, cwd = job
    code, out, err, rss, took = spawn(cmd, cwd, args, args.timeout)
    large = False
    if code is None or (code == 0 and rss > args.memory):
        code, out, err, rss, took = spawn(cmd, cwd, args, 6 * args.timeout)
        large = code == 0 and kind not in MUST_REFUSE
    why = None if large else classify(cmd, code, out, err, rss, kind, args)
    return reader, kind, "large" if large else code, took, rss, why, " ".join(cmd)[-300:], err[-400:]


def reader_jobs(root, work, rng, n):
    jobs = []
    for reader, (patterns, commands) in READERS.items():
        seeds = sorted(f for p in patterns for f in glob.glob(os.path.join(root, p)))
        if not seeds:
            sys.exit(f"mutate.py: no seed files for {reader}")
        d = os.path.join(work, reader)
        os.makedirs(d)
        if reader == "topology":  # cluster files name host files beside them
            shutil.copytree(os.path.join(root, "configs/topologies/hosts"), os.path.join(d, "hosts"))
        for k in range(n):
            seed = seeds[k % len(seeds)]
            kind, data = mutate_file(seed, rng)
            name = os.path.join(d, f"m{k}{os.path.splitext(seed)[1]}")
            with open(name, "wb") as f:
                f.write(data)
            cmd = [a.replace("{f}", name) for a in commands[k % len(commands)]]
            jobs.append((reader, cmd, kind, d))
    return jobs


def option_jobs(work, rng, n):
    jobs = []
    for k in range(n):
        cmd = list(COMMANDS[k % len(COMMANDS)])
        values = [i for i in range(1, len(cmd)) if not cmd[i].startswith("-") and cmd[i - 1].startswith("-")]
        i = rng.choice(values)
        what = rng.random()
        if what < 0.7:
            cmd[i] = rng.choice(OPTION_VALUES)
        elif what < 0.85:
            del cmd[i]  # an option without its value
        else:
            cmd += [cmd[i - 1], rng.choice(OPTION_VALUES)]  # the option twice
        jobs.append(("options", cmd, "option", work))
    return jobs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meshsim", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--per-reader", type=int, default=100, help="mutated inputs per reader and for the options")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--memory", type=float, default=1024.0, help="peak resident memory limit, MB")
    args = ap.parse_args()
    args.meshsim = os.path.abspath(args.meshsim)
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="meshsim-mutate-")
    failures = []
    try:
        jobs = reader_jobs(os.path.abspath(args.root), work, rng, args.per_reader)
        jobs += option_jobs(work, rng, args.per_reader)
        stats = {}
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for reader, kind, code, took, rss, why, cmd, err in pool.map(lambda j: run_one(j, args), jobs):
                s = stats.setdefault(reader, {"inputs": 0, "exit": {}, "slowest_s": 0.0, "peak_mb": 0.0})
                s["inputs"] += 1
                s["exit"][str(code)] = s["exit"].get(str(code), 0) + 1
                if code != "large":
                    s["slowest_s"] = max(s["slowest_s"], took)
                    s["peak_mb"] = max(s["peak_mb"], rss)
                if why:
                    failures.append((reader, kind, why, cmd, err))
        for reader, s in stats.items():
            codes = ", ".join(f"exit {c}: {n}" for c, n in sorted(s["exit"].items()))
            print(f"{reader:13} {s['inputs']:5} inputs; {codes}; slowest {s['slowest_s']:.2f} s; "
                  f"peak {s['peak_mb']:.0f} MB")
        for reader, kind, why, cmd, err in failures:
            print(f"FAIL {reader} ({kind}): {why}\n  meshsim {cmd}\n  {err.decode('utf-8', 'replace').strip()[-300:]}")
        print(f"{len(failures)} failures in {len(jobs)} runs")
        if failures:
            print(f"the mutated inputs are kept in {work}")
        return 1 if failures else 0
    finally:
        if not failures and not os.environ.get("MESHSIM_MUTATE_KEEP"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
