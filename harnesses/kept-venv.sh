# Sourced by the Python harnesses' install scripts (harnesses/*/install): a finished virtual
# environment is kept in this machine's cache under its install's stamp, and the folder the
# harness runs from is a link to it. Another checkout (a CI run on a fresh clone) installing the
# same stamp links to it instead of downloading and installing the same packages again. The
# cache: $KBCONFORM_CACHE, else $XDG_CACHE_HOME/kbconform, else ~/.cache/kbconform (as Neo's
# install keeps its node_modules); a venv is venvs/<harness>-<stamp>-<architecture>. A stamp
# covers the requirements, the install script and the interpreter's version, so a change to any
# of them installs afresh; --force reinstalls the kept copy.

# kept_venv NAME STAMP: the cache's folder for that install (its parent created), locked while
# this script runs so that two installs of one stamp take turns.
kept_venv() {
    local root="${KBCONFORM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kbconform}/venvs"
    mkdir -p "$root"
    printf '%s/%s-%s-%s' "$root" "$1" "$2" "$(uname -m)"
}

# kept_venv_lock FOLDER: waits for any other install of FOLDER to finish, then holds it.
kept_venv_lock() {
    exec 9>"$1.lock"
    if command -v flock >/dev/null 2>&1; then flock 9; fi
}

# kept_venv_link FOLDER LINK: LINK (the harness's venv path) points at FOLDER.
kept_venv_link() {
    [ "$(readlink "$2" 2>/dev/null)" = "$1" ] && return 0
    rm -rf "$2"
    mkdir -p "$(dirname "$2")"
    ln -s "$1" "$2"
}

# kept_venv_use NAME STAMP STAMPFILE: with $venv the harness's venv path, $force 0 or 1 and
# say() defined. An install already in $venv with STAMP in $venv/STAMPFILE ends the install;
# otherwise $venv becomes the cache's folder for STAMP (locked), $link the harness's path and
# $stamp $venv/STAMPFILE, and a finished install there is linked and ends the install. After it
# returns, the caller installs into $venv, writes STAMP to $stamp and calls kept_venv_link.
kept_venv_use() {
    stamp="$venv/$3"
    if [ "$force" = 0 ] && kept_venv_ready "$venv" "$2" "$3"; then
        say "already installed (the stamp matches); nothing to do."
        exit 0
    fi
    link="$venv"
    venv="$(kept_venv "$1" "$2")"
    stamp="$venv/$3"
    kept_venv_lock "$venv"
    if [ "$force" = 0 ] && kept_venv_ready "$venv" "$2" "$3"; then
        kept_venv_link "$venv" "$link"
        say "linked to this machine's install of the same stamp ($venv); nothing to install."
        exit 0
    fi
}

# kept_venv_ready FOLDER STAMP STAMPFILE: FOLDER holds a finished install of STAMP.
kept_venv_ready() {
    [ -f "$1/$3" ] && [ "$(cat "$1/$3")" = "$2" ] && [ -x "$1/bin/python" ]
}

# kept_venv_derive BASE PYTHON PINS REQUIREMENTS: a release of the harness's library, installed as a normal
# install would, from the harness's finished install BASE instead of from the registry: $venv
# (already removed) becomes a virtual environment of PYTHON holding BASE's packages, each file a
# hard link to BASE's (a copy where links cannot be made), the console scripts in bin/ naming
# $venv's interpreter, and REQUIREMENTS (the text of BASE's requirements with PINS's swapped in)
# its requirements.txt; then PINS's packages are installed from the registry without their
# dependencies. BASE is never written through a link: pip replaces the files it installs (it
# unlinks each before writing it) and moves away those it uninstalls, but some of its writes are
# in place (the easy-install.pth of a setuptools develop install it uninstalls), so pip runs
# with an audit hook that refuses to write to, truncate or change the mode, owner or times of
# any file with another link, and a refusal fails the derive. Returns 1, having said why, unless
# the result is provably what 'pip install -r $venv/requirements.txt' gives: BASE runs the same
# interpreter version, pip check finds every requirement met, and the installed distributions
# are exactly the pinned ones at their pinned versions (besides pip and setuptools, as in any
# new venv). With every package pinned and nothing required missing, pip's resolver adds nothing
# and picks nothing else. The caller removes $venv and installs in full when it returns 1; say()
# as in kept_venv_use.
kept_venv_derive() {
    local base="$1" python="$2" pins="$3" from to
    base="$(cd "$base" 2>/dev/null && pwd -P)" && [ -x "$base/bin/python" ] \
        || { say "no finished install of the harness to derive from"; return 1; }
    [ "$("$base/bin/python" -c 'import sys; print(sys.version)')" = "$("$python" -c 'import sys; print(sys.version)')" ] \
        || { say "$base runs another Python than $python"; return 1; }
    "$python" -m venv --without-pip "$venv" || return 1
    printf '%s\n' "$4" > "$venv/requirements.txt"
    from="$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || return 1
    to="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || return 1
    # a copy where links cannot be made, into an emptied folder: never written through a link
    cp -al "$from/." "$to/" 2>/dev/null || { rm -rf "$to" && mkdir -p "$to" && cp -a "$from/." "$to/"; } || return 1
    "$venv/bin/python" -I - "$base" "$venv" "$to" <<'PY' >&2 || return 1
# BASE's console scripts in VENV's bin/, their first line naming VENV's interpreter, and each
# RECORD that lists one given its new hash and size. A RECORD is a hard link to BASE's: it is
# replaced, never written in place.
import base64, hashlib, os, sys
from pathlib import Path
base, venv, site = (Path(p) for p in sys.argv[1:])
written = {}
for script in sorted((base / "bin").iterdir()):
    target = venv / "bin" / script.name
    if target.exists() or script.is_symlink() or not os.access(script, os.X_OK):
        continue  # the venv's own (python, activate) is already there
    first, _, rest = script.read_bytes().partition(b"\n")
    old, new = f"#!{base}/bin/".encode(), f"#!{venv}/bin/".encode()
    data = (new + first[len(old):] if first.startswith(old) else first) + b"\n" + rest
    target.write_bytes(data)
    target.chmod(script.stat().st_mode)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    written[os.path.relpath(target, site)] = f"sha256={digest},{len(data)}"
for record in site.glob("*.dist-info/RECORD"):
    rows = record.read_text(encoding="utf-8").splitlines()
    fixed = [f"{row.split(',')[0]},{written[row.split(',')[0]]}" if row.split(",")[0] in written else row for row in rows]
    if fixed != rows:
        fresh = record.with_name("RECORD.new")
        fresh.write_text("\n".join(fixed) + "\n", encoding="utf-8")
        os.replace(fresh, record)
PY
    "$venv/bin/python" - install --disable-pip-version-check --no-input --quiet \
        --require-virtualenv --no-deps -r "$pins" <<'PY' >&2 || { say "pip install --no-deps -r $pins failed"; return 1; }
# python -m pip ARGUMENTS, refused any change to a file with another link (one of BASE's).
import os, runpy, stat, sys
WRITES = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC
CHANGES = {"os.truncate", "os.chmod", "os.chown", "os.utime", "os.setxattr", "os.removexattr"}
refused = []
def guard(event, args):
    if not (event == "open" and (args[2] & WRITES or set(args[1] or "") & set("wax+")) or event in CHANGES):
        return
    try:
        info = os.stat(args[0])
    except (OSError, TypeError, ValueError):
        return  # a new file
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        refused.append(f"{event} {args[0]!r}")
        raise PermissionError(f"refused ({event}): {args[0]!r} is linked to the harness's install")
sys.addaudithook(guard)
try:
    runpy.run_module("pip", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as end:
    code = end.code
if refused:
    print("pip would have changed the harness's install through a link:", *refused, sep="\n  ")
    code = 1
sys.exit(code)
PY
    "$venv/bin/python" -m pip check --disable-pip-version-check >&2 || return 1
    "$venv/bin/python" -I - "$venv/requirements.txt" <<'PY' >&2
import importlib.metadata, re, sys
def key(name):
    return re.sub(r"[-_.]+", "-", name).lower()
pinned = {}
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)", line)
    if m:
        pinned[key(m.group(1))] = m.group(2)
found = [(key(d.metadata["Name"]), d.version) for d in importlib.metadata.distributions()]
installed = {name: version for name, version in found if name not in ("pip", "setuptools")}
if installed != pinned or len(found) != len(dict(found)):
    print("the installed distributions are not the pinned ones:",
          sorted(set(installed.items()) ^ set(pinned.items())))
    sys.exit(1)
PY
}
