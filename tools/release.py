#!/usr/bin/env python3
"""Release helper: keeps the version tag, pyproject.toml, dlgate/__init__.py, CHANGELOG.md and
action.yml in agreement (see docs/releasing.md).

    tools/release.py prepare X.Y.Z [--date YYYY-MM-DD]   bump the version, date the changelog
    tools/release.py check [--tag vX.Y.Z] [--action-image [REF]] [--dist DIR]
    tools/release.py notes X.Y.Z                          print the changelog section
    tools/release.py pin-action --image REGISTRY/NAME:X.Y.Z
    tools/release.py newest X.Y.Z [TAG...]                true if no tag is a newer X.*.* release

Standard library only (the release workflow runs it on a bare interpreter). Every refusal is
one line on stderr and exit status 2; nothing is written unless every check before it passed.
"""
from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION_RE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
#: A changelog section heading, Keep a Changelog style: ``## [1.2.3] - 2026-01-31``.
SECTION_RE = re.compile(r"^## \[([^\]]+)\](?: - (\S+))?\s*$")
#: A container image reference as the release pins it: lower-case registry and path, a tag.
IMAGE_RE = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*(?::[0-9]+)?"  # registry host[:port]
                      r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+"  # /path components
                      r":([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})")  # :tag
INIT_RE = re.compile(r'^__version__ = "([^"]*)"$', re.M)


class ReleaseError(Exception):
    """A refusal: printed as one line, exit status 2."""


# ---------------------------------------------------------------- reading the files


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ReleaseError(f"cannot read {path}: {e.strerror or e}") from None


def parse_version(text: str, what: str) -> str:
    if not VERSION_RE.fullmatch(text):
        raise ReleaseError(f"{what} {text!r} is not a release version X.Y.Z (digits, no leading zeros)")
    return text


def _project_version_line(lines: list[str], path: Path) -> int:
    """Index of the ``version = "..."`` line of pyproject.toml's [project] table."""
    table, found = None, []
    for i, line in enumerate(lines):
        head = re.match(r"\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
        if head:
            table = head.group(1).strip()
        elif table == "project" and re.match(r"\s*version\s*=", line):
            found.append(i)
    if len(found) != 1:
        raise ReleaseError(f"{path}: expected one version = \"X.Y.Z\" line in [project], found {len(found)}")
    return found[0]


def pyproject_version(root: Path) -> str:
    path = root / "pyproject.toml"
    lines = _read(path).splitlines()
    m = re.fullmatch(r'\s*version\s*=\s*"([^"]*)"\s*(#.*)?', lines[_project_version_line(lines, path)])
    if not m:
        raise ReleaseError(f"{path}: the [project] version is not a plain string")
    try:
        import tomllib  # 3.11+; the line read above must agree with a real TOML parser
    except ImportError:
        return m.group(1)
    try:
        parsed = tomllib.loads(_read(path))["project"]["version"]
    except (tomllib.TOMLDecodeError, KeyError) as e:
        raise ReleaseError(f"{path}: not a valid pyproject.toml ({e})") from None
    if parsed != m.group(1):
        raise ReleaseError(f"{path}: the [project] version line reads {m.group(1)!r}, TOML reads {parsed!r}")
    return parsed


def init_version(root: Path) -> str:
    path = root / "dlgate" / "__init__.py"
    found = INIT_RE.findall(_read(path))
    if len(found) != 1:
        raise ReleaseError(f"{path}: expected one line __version__ = \"X.Y.Z\", found {len(found)}")
    return found[0]


def changelog_sections(root: Path) -> list[tuple[str, str | None, list[str]]]:
    """(name, date, body lines) of every ``## [name]`` section of CHANGELOG.md, newest first."""
    path = root / "CHANGELOG.md"
    sections: list[tuple[str, str | None, list[str]]] = []
    footer = False  # link definitions ([1.0.0]: https://...) close the last section
    for line in _read(path).splitlines():
        m = SECTION_RE.match(line)
        if m:
            sections.append((m.group(1), m.group(2), []))
            footer = False
        elif line.startswith("## "):
            raise ReleaseError(f"{path.name}: heading {line!r} is not '## [X.Y.Z] - YYYY-MM-DD' or '## [Unreleased]'")
        elif re.match(r"\[[^\]]+\]:\s", line):
            footer = True
        elif sections and not footer:
            sections[-1][2].append(line)
    return sections


def _strip_blank(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def released_sections(root: Path) -> list[tuple[str, str, list[str]]]:
    """The dated version sections (everything but [Unreleased]), newest first, checked."""
    out, seen = [], set()
    for name, date, body in changelog_sections(root):
        if name.lower() == "unreleased":
            if out:
                raise ReleaseError("CHANGELOG.md: [Unreleased] must come before every version section")
            continue
        parse_version(name, "CHANGELOG.md section")
        if date is None:
            raise ReleaseError(f"CHANGELOG.md: section [{name}] has no date ('## [{name}] - YYYY-MM-DD')")
        try:
            dt.date.fromisoformat(date)
        except ValueError:
            raise ReleaseError(f"CHANGELOG.md: section [{name}] has date {date!r}, not YYYY-MM-DD") from None
        if name in seen:
            raise ReleaseError(f"CHANGELOG.md: section [{name}] appears twice")
        if out and _key(name) >= _key(out[-1][0]):
            raise ReleaseError(f"CHANGELOG.md: section [{name}] comes after [{out[-1][0]}] but is not older")
        seen.add(name)
        out.append((name, date, _strip_blank(body)))
    return out


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def action_runs(text: str) -> dict[str, tuple[int, str]]:
    """{key: (line index, value)} of the keys of action.yml's top-level ``runs:`` mapping,
    read line by line so that a rewrite can change one line and nothing else."""
    found: dict[str, list[tuple[int, str]]] = {}
    in_runs, indent = False, None
    for i, line in enumerate(text.splitlines()):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            in_runs = re.match(r"runs:\s*(#.*)?$", line) is not None
            indent = None
            continue
        if not in_runs:
            continue
        here = len(line) - len(line.lstrip())
        indent = here if indent is None else indent
        m = re.match(r"\s+([\w-]+):\s*(.*?)\s*(?:\s#.*)?$", line)
        if here == indent and m:
            value = m.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            found.setdefault(m.group(1), []).append((i, value))
    return {k: v[0] for k, v in found.items() if len(v) == 1} | {k: (-1, "") for k, v in found.items() if len(v) > 1}


def action_image_line(text: str) -> tuple[int, str]:
    """(line index, value) of action.yml's runs.image, for a docker action."""
    runs = action_runs(text)
    if runs.get("using", (0, ""))[1] != "docker":
        raise ReleaseError("action.yml: runs.using is not docker")
    i, value = runs.get("image", (-1, ""))
    if i < 0 or not value:
        raise ReleaseError("action.yml: expected one image: line under runs:")
    return i, value


# ---------------------------------------------------------------- the commands


def check(root: Path, tag: str | None = None, action_image: str | None = None, dist: Path | None = None) -> str:
    """The version every file states; raises ReleaseError on any disagreement."""
    version = parse_version(pyproject_version(root), "pyproject.toml version")
    init = init_version(root)
    if init != version:
        raise ReleaseError(f"dlgate/__init__.py __version__ is {init}, pyproject.toml says {version}")
    if tag is not None:
        if not tag.startswith("v") or not VERSION_RE.fullmatch(tag[1:]):
            raise ReleaseError(f"tag {tag!r} is not a release tag vX.Y.Z")
        if tag[1:] != version:
            raise ReleaseError(f"tag {tag} does not match the version {version} of pyproject.toml")
    sections = released_sections(root)
    if not sections:
        raise ReleaseError(f"CHANGELOG.md has no section '## [{version}] - YYYY-MM-DD'")
    if sections[0][0] != version:
        names = [s[0] for s in sections]
        where = "has no section" if version not in names else f"lists [{sections[0][0]}] above"
        raise ReleaseError(f"CHANGELOG.md {where} [{version}]: its newest section must be the version released")
    if not any(line.strip() for line in sections[0][2]):
        raise ReleaseError(f"CHANGELOG.md: section [{version}] is empty")
    if action_image is not None:
        _, image = action_image_line(_read(root / "action.yml"))
        ref = image.removeprefix("docker://")
        m = IMAGE_RE.fullmatch(ref)
        if not image.startswith("docker://") or not m:
            raise ReleaseError(f"action.yml: image {image!r} is not a prebuilt image docker://REGISTRY/NAME:TAG")
        if m.group(1) != version:
            raise ReleaseError(f"action.yml: image {image} is tagged {m.group(1)}, the version is {version}")
        if action_image and action_image.removeprefix("docker://") != ref:
            raise ReleaseError(f"action.yml: image {image} is not the expected docker://"
                               f"{action_image.removeprefix('docker://')}")
    if dist is not None:
        want = {f"dlgate-{version}.tar.gz", f"dlgate-{version}-py3-none-any.whl"}
        try:
            have = {p.name for p in dist.iterdir()}
        except OSError as e:
            raise ReleaseError(f"cannot list {dist}: {e.strerror or e}") from None
        if have != want:
            raise ReleaseError(f"{dist} holds {sorted(have)}, expected exactly {sorted(want)}")
    return version


def notes(root: Path, version: str) -> str:
    parse_version(version, "version")
    for name, _, body in released_sections(root):
        if name == version:
            if not body:
                raise ReleaseError(f"CHANGELOG.md: section [{version}] is empty")
            return "\n".join(body) + "\n"
    raise ReleaseError(f"CHANGELOG.md has no section [{version}]")


def pin_action(root: Path, image: str) -> str:
    """Rewrite action.yml's runs.image line to ``docker://IMAGE``; returns the new value."""
    ref = image.removeprefix("docker://")
    if not IMAGE_RE.fullmatch(ref):
        raise ReleaseError(f"image {image!r} is not REGISTRY/NAME:TAG in lower case (the registry requires it)")
    path = root / "action.yml"
    text = _read(path)
    i, _ = action_image_line(text)
    lines = text.splitlines(keepends=True)
    old = lines[i]
    indent = old[: len(old) - len(old.lstrip())]
    end = "\r\n" if old.endswith("\r\n") else "\n" if old.endswith("\n") else ""
    lines[i] = f"{indent}image: docker://{ref}{end}"
    path.write_text("".join(lines), encoding="utf-8")
    return f"docker://{ref}"


def newest(version: str, tags: list[str]) -> bool:
    """Whether VERSION is the newest release of its major version among TAGS (vX.Y.Z; other
    tags, such as vX or vX.Y.Z-action, are ignored): only then do the major tags move."""
    parse_version(version, "version")
    major = version.split(".")[0]
    same = [t[1:] for t in tags if t.startswith(f"v{major}.") and VERSION_RE.fullmatch(t[1:])]
    return all(_key(v) <= _key(version) for v in same)


def prepare(root: Path, version: str, date: str | None = None) -> str:
    """Bump pyproject.toml and dlgate/__init__.py to VERSION and give the changelog's
    [Unreleased] section that version and date (when it has no section for it yet)."""
    parse_version(version, "version")
    current = parse_version(pyproject_version(root), "pyproject.toml version")
    if _key(version) <= _key(current) and version != current:
        raise ReleaseError(f"version {version} is not newer than the current {current}")
    date = date or dt.datetime.now(dt.timezone.utc).date().isoformat()
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise ReleaseError(f"date {date!r} is not YYYY-MM-DD") from None
    log_path = root / "CHANGELOG.md"
    log = _read(log_path)
    sections = changelog_sections(root)
    released_sections(root)  # the existing sections are well formed
    if version not in [s[0] for s in sections]:
        unreleased = [s for s in sections if s[0].lower() == "unreleased"]
        if not unreleased or not any(line.strip() for line in unreleased[0][2]):
            raise ReleaseError(f"CHANGELOG.md has neither a section [{version}] nor entries under [Unreleased]"
                               " to release")
        log = re.sub(r"^## \[Unreleased\][ \t]*$", f"## [Unreleased]\n\n## [{version}] - {date}", log, count=1,
                     flags=re.M | re.I)
    # Every edit is computed first and written last, so a refusal leaves the files as they were.
    py_path = root / "pyproject.toml"
    py_lines = _read(py_path).splitlines(keepends=True)
    i = _project_version_line([x.rstrip("\r\n") for x in py_lines], py_path)
    py_lines[i] = re.sub(r'"[^"]*"', f'"{version}"', py_lines[i], count=1)
    init_path = root / "dlgate" / "__init__.py"
    init_version(root)  # exactly one __version__ line
    init = INIT_RE.sub(f'__version__ = "{version}"', _read(init_path), count=1)
    for path, text in ((log_path, log), (py_path, "".join(py_lines)), (init_path, init)):
        path.write_text(text, encoding="utf-8")
    return check(root)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tools/release.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("prepare", help="bump the version everywhere and date the changelog section")
    s.add_argument("version")
    s.add_argument("--date", help="the release date, YYYY-MM-DD (default: today, UTC)")
    s = sub.add_parser("check", help="refuse unless tag, pyproject.toml, __version__ and CHANGELOG.md agree")
    s.add_argument("--tag", help="the release tag, vX.Y.Z")
    s.add_argument("--action-image", nargs="?", const="", metavar="REF",
                   help="also require action.yml's image to be docker://...:VERSION (and REF, when given)")
    s.add_argument("--dist", type=Path, help="also require DIR to hold exactly this version's sdist and wheel")
    s = sub.add_parser("notes", help="print the CHANGELOG.md section of a version (the release notes)")
    s.add_argument("version")
    s = sub.add_parser("newest", help="print true if VERSION is the newest of its major among the tags")
    s.add_argument("version")
    s.add_argument("tags", nargs="*")
    s = sub.add_parser("pin-action", help="point action.yml's image at a prebuilt image")
    s.add_argument("--image", required=True, help="REGISTRY/NAME:X.Y.Z, with or without docker://")
    args = p.parse_args(argv)
    try:
        if args.cmd == "prepare":
            version = prepare(args.root, args.version, args.date)
            print(f"release: prepared {version}: commit, then `git tag v{version} && git push origin v{version}`")
        elif args.cmd == "check":
            version = check(args.root, args.tag, args.action_image, args.dist)
            extra = " and action.yml's image" if args.action_image is not None else ""
            print(f"release: {version}: {'the tag, ' if args.tag else ''}pyproject.toml, dlgate/__init__.py, "
                  f"CHANGELOG.md{extra} agree")
        elif args.cmd == "newest":
            print("true" if newest(args.version, args.tags) else "false")
        elif args.cmd == "notes":
            sys.stdout.write(notes(args.root, args.version))
        else:
            print(f"release: action.yml now runs {pin_action(args.root, args.image)}")
    except ReleaseError as e:
        print(f"release: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
