#!/usr/bin/env python3
"""Planted-bug check of the host code (issue 20, item 7): applies each mutation of
scripts/mutations.py alone, rebuilds only its targets, runs the ctest subset that must catch it,
and prints which were caught, which survived and which no longer apply (their text was not found:
the code moved; update the mutation's file or text).

  scripts/mutation_check.py [--build-dir build] [--only REGEX] [--gpu] [--list] [--no-baseline]

The tree is restored after each mutation, on any error and on Ctrl-C or SIGTERM (a finally); a
copy of the original file is kept in BUILD/mutation-backup/ while it is mutated, and
`--restore` puts back anything left there by a run that was killed outright (SIGKILL). Not part of
CI: one rebuild per mutation takes minutes on a small machine. Run the whole list in the
background:  nohup scripts/mutation_check.py > /tmp/mut.log 2>&1 &
"""
import argparse
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_mutations():
    spec = importlib.util.spec_from_file_location("mutations", os.path.join(ROOT, "scripts", "mutations.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MUTATIONS


def run(cmd, log, timeout):
    """(exit code, output); -9 when it ran past `timeout` seconds."""
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.output or ""
        out = out.decode() if isinstance(out, bytes) else out
        log.write(out)
        return -9, out
    log.write(p.stdout)
    log.flush()
    return p.returncode, p.stdout


def ctest(build, regex, log, timeout):
    """'pass', 'fail' or 'none' (no test matched)."""
    rc, out = run(["ctest", "--test-dir", build, "-R", regex, "-j2", "--timeout", str(timeout),
                   "--output-on-failure"], log, timeout * 4)
    if "No tests were found" in out:
        return "none"
    return "pass" if rc == 0 else "fail"


def applicable(m):
    path = os.path.join(ROOT, m["file"])
    if not os.path.exists(path):
        return None, f"no file {m['file']}"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    n = text.count(m["original"])
    if n != 1:
        return None, f"its text occurs {n} times in {m['file']}"
    return text, ""


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def restore_backups(build):
    folder = os.path.join(build, "mutation-backup")
    if not os.path.isdir(folder):
        return 0
    restored = 0
    for name in os.listdir(folder):
        target = os.path.join(ROOT, name.replace("%", "/"))
        shutil.copyfile(os.path.join(folder, name), target)
        os.remove(os.path.join(folder, name))
        print(f"restored {os.path.relpath(target, ROOT)}")
        restored += 1
    return restored


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--only", help="run the mutations whose name or kind matches this regex")
    ap.add_argument("--gpu", action="store_true", help="also run the mutations only GPU tests catch")
    ap.add_argument("--list", action="store_true", help="list the mutations and whether each applies")
    ap.add_argument("--no-baseline", action="store_true", help="skip checking that the tests pass unmutated")
    ap.add_argument("--restore", action="store_true", help="put back files a killed run left mutated")
    ap.add_argument("--timeout", type=int, default=120,
                    help="seconds per test (a mutant that loops forever is caught by it)")
    ap.add_argument("--log", default=None, help="build and test output (default BUILD/mutation-check.log)")
    args = ap.parse_args()
    build = os.path.join(ROOT, args.build_dir)
    if args.restore:
        print(f"{restore_backups(build)} file(s) restored")
        return 0
    if restore_backups(build):
        print("(files left mutated by an earlier run were restored first)")

    mutations = load_mutations()
    if args.only:
        mutations = [m for m in mutations if re.search(args.only, m["name"]) or re.search(args.only, m["kind"])]
    if args.list:
        for m in mutations:
            text, why = applicable(m)
            state = "applies" if text is not None else f"NOT APPLICABLE ({why})"
            print(f"{m['name']:<46} {m['kind']:<16} {'gpu ' if m.get('gpu') else ''}{state}")
        return 0

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    os.makedirs(os.path.join(build, "mutation-backup"), exist_ok=True)
    log = open(args.log or os.path.join(build, "mutation-check.log"), "w")
    results = []  # (mutation, verdict, detail)

    todo = []
    for m in mutations:
        if m.get("gpu") and not args.gpu:
            results.append((m, "gpu only", "run with --gpu on a GPU machine"))
            continue
        text, why = applicable(m)
        if text is None:
            results.append((m, "not applicable", why))
            continue
        todo.append(m)

    if not args.no_baseline and todo:
        targets = sorted({t for m in todo for t in m["build"]})
        print(f"baseline: building {' '.join(targets)}", flush=True)
        rc, _ = run(["ninja", "-C", build] + targets, log, 7200)
        if rc != 0:
            print("the unmutated tree does not build; see the log", file=sys.stderr)
            return 2
        for regex in sorted({m["tests"] for m in todo}):
            state = ctest(build, regex, log, args.timeout)
            if state != "pass":
                print(f"baseline: tests '{regex}' {'match nothing' if state == 'none' else 'fail unmutated'}; "
                      "their mutations are left out", file=sys.stderr, flush=True)
                for m in [m for m in todo if m["tests"] == regex]:
                    results.append((m, "not applicable", f"tests '{regex}' {state} unmutated"))
                todo = [m for m in todo if m["tests"] != regex]

    try:
        for i, m in enumerate(todo, 1):
            path = os.path.join(ROOT, m["file"])
            text, why = applicable(m)
            if text is None:
                results.append((m, "not applicable", why))
                continue
            backup = os.path.join(build, "mutation-backup", m["file"].replace("/", "%"))
            shutil.copyfile(path, backup)
            start = time.time()
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text.replace(m["original"], m["replacement"], 1))
                log.write(f"\n===== {m['name']} =====\n")
                rc, _ = run(["ninja", "-C", build] + m["build"], log, 7200)
                if rc != 0:
                    verdict, detail = "build failed", "the mutant does not compile: fix the mutation"
                else:
                    state = ctest(build, m["tests"], log, args.timeout)
                    verdict = {"fail": "caught", "pass": "SURVIVED", "none": "not applicable"}[state]
                    detail = f"tests '{m['tests']}'" + (" match nothing" if state == "none" else "")
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                os.remove(backup)
            results.append((m, verdict, detail))
            print(f"[{i}/{len(todo)}] {m['name']}: {verdict} ({time.time() - start:.0f} s)", flush=True)
    except (KeyboardInterrupt, Interrupted) as e:
        print(f"\ninterrupted ({e}): the tree is restored; partial results follow", file=sys.stderr)
    finally:
        # The restored sources are rebuilt lazily by the next build; ninja sees their new mtime.
        log.close()

    print()
    print(f"{'mutation':<46} {'kind':<16} verdict")
    for m, verdict, detail in results:
        print(f"{m['name']:<46} {m['kind']:<16} {verdict}{'  (' + detail + ')' if verdict != 'caught' else ''}")
    caught = sum(v == "caught" for _, v, _ in results)
    counted = sum(v in ("caught", "SURVIVED") for _, v, _ in results)
    survived = [m["name"] for m, v, _ in results if v == "SURVIVED"]
    other = {}
    for _, v, _ in results:
        if v not in ("caught", "SURVIVED"):
            other[v] = other.get(v, 0) + 1
    print()
    print(f"score: {caught}/{counted} caught" + (f" ({100 * caught / counted:.0f}%)" if counted else "")
          + "".join(f", {n} {v}" for v, n in other.items()))
    if survived:
        print("survived: " + ", ".join(survived))
    return 0 if not survived else 1


if __name__ == "__main__":
    sys.exit(main())
