#!/usr/bin/env python3
"""Checks that scripts/install-deps.sh names everything a build read from the system.

Every file outside the source and build trees that CMake read while configuring (build.ninja's
regeneration inputs) or found (CMakeCache.txt FILEPATH/PATH entries), every system header a
compile included (ninja's deps log) and every system library a link line names must belong to a
package that install-deps.sh lists, or to a Depends/PreDepends (not a Recommends) of one,
recursively, or to a package a minimal Debian root (debootstrap minbase: the Essential and
`required` packages) already has.

This is the cheap guard, run by ctest (deps.install_deps_cover_the_build), for the mistake a
machine with extra packages hides: a package the build needs arriving only as a Recommends.
../shared/tools/fresh-debian.sh is the full check (both quickstart commands in a brand-new root).

    scripts/check-install-deps.py [build-dir]      (default: build)

Needs a configured and built Ninja build, dpkg and apt-cache. Exit 0: covered; 1: files read by
the build come from unlisted packages (each named, with the file); 2: cannot check.
"""
import os
import re
import subprocess
import sys

# Cache entries of optional finds that nothing in this project uses: LLVM's CMake package looks
# for xmllint and zlib when they are there and does without them (we link only libHalide).
OPTIONAL_FINDS = re.compile(r"^(LIBXML2_XMLLINT_EXECUTABLE|ZLIB_[A-Z_]+):")


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **kw).stdout


def installed_packages():
    """name -> (essential, priority) of every installed package."""
    out = run(["dpkg-query", "-W", "-f=${Package} ${Essential} ${Priority} ${Status}\n"])
    pkgs = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and line.endswith("installed") and "not-installed" not in line:
            pkgs[f[0]] = (f[1] == "yes", f[2])
    return pkgs


def allowed_packages(listed, installed):
    """The minimal root's packages, the listed ones and their Depends, recursively (installed ones)."""
    base = {p for p, (essential, prio) in installed.items() if essential or prio == "required"}
    out = run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
               "--no-breaks", "--no-replaces", "--no-enhances"] + listed)
    closure = set(listed)
    for line in out.splitlines():
        # "pkg", "  Depends: dep", " |Depends: alt", "  Depends: <virtual>", "    provider"
        name = re.sub(r"^\s*\|?(Pre)?Depends:\s*", "", line).strip()
        name = name.split(":")[0]
        if name and not name.startswith("<") and " " not in name:
            closure.add(name)
    return base | (closure & set(installed))


def files_the_build_read(build):
    with open(os.path.join(build, "build.ninja")) as f:
        ninja = f.read().splitlines()
    paths = set()
    for line in ninja:
        if line.startswith("build build.ninja: RERUN_CMAKE"):
            paths.update(line.split())
        elif line.lstrip().startswith("LINK_LIBRARIES = "):
            paths.update(line.split())
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"^[^#/][^:]*:(FILEPATH|PATH)=(/.*)$", line.strip())
            if m and not OPTIONAL_FINDS.match(line):
                paths.add(m.group(2))
    deps = run(["ninja", "-C", build, "-t", "deps"])
    paths.update(l.strip() for l in deps.splitlines() if l.startswith(" "))
    return sorted(p for p in paths if p.startswith("/") and os.path.exists(p))


def owners(paths):
    """path -> [packages], via dpkg -S on the path as named, its /usr-merged spelling, and its target."""
    def spellings(p):
        yield p
        yield p[4:] if p.startswith("/usr/") else "/usr" + p
        r = os.path.realpath(p)
        if r != p:
            yield r
            yield r[4:] if r.startswith("/usr/") else "/usr" + r
    queries = {}
    for p in paths:
        for s in spellings(p):
            queries.setdefault(s, set()).add(p)
    known = {}
    out = run(["dpkg-query", "-S"] + sorted(queries))
    for line in out.splitlines():
        if ": " not in line:
            continue
        pkgs, path = line.split(": ", 1)
        known[path] = [q.split(":")[0].strip() for q in pkgs.split(",")]
    result = {}
    for p in paths:
        for s in spellings(p):
            if s in known:
                result[p] = known[s]
                break
    return result


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    os.chdir(root)
    if not os.path.exists(os.path.join(build, "build.ninja")):
        print(f"check-install-deps: no Ninja build in '{build}'", file=sys.stderr)
        return 2
    listed = run(["scripts/install-deps.sh", "--list"]).split()
    if not listed:
        print("check-install-deps: scripts/install-deps.sh --list printed nothing", file=sys.stderr)
        return 2
    installed = installed_packages()
    allowed = allowed_packages(listed, installed)
    src, bld = root, os.path.realpath(build)
    paths = [p for p in files_the_build_read(build)
             if not os.path.realpath(p).startswith((src + "/", bld + "/", "/tmp/"))]
    owner = owners(paths)
    missing = []
    for p in paths:
        pkgs = owner.get(p)
        if not pkgs:
            continue  # not from a package (generated, /usr/local): not ours to check
        if not any(q in allowed for q in pkgs):
            missing.append((p, pkgs))
    for p, pkgs in missing:
        print(f"check-install-deps: {p} (package {', '.join(pkgs)}) is read by the build, "
              "but install-deps.sh does not install it", file=sys.stderr)
    if missing:
        print(f"check-install-deps: {len(missing)} of {len(paths)} system files come from packages a fresh "
              "Debian 12 root would not get; add them to scripts/install-deps.sh", file=sys.stderr)
        return 1
    print(f"check-install-deps: all {len(paths)} system files the build read come from packages "
          f"install-deps.sh installs ({len(listed)} listed, {len(allowed)} with their dependencies "
          "and the minimal root)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
