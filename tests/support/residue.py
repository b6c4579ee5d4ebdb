"""What tests look for after student code ran: files it changed, processes it left behind."""
import hashlib
import subprocess
from pathlib import Path


def digest(places, leave_out=()):
    """``{path: sha256}`` of every file in ``places`` (files, or folders all the way down), but
    those under ``leave_out`` and Python's caches."""
    found = {}
    for place in map(Path, places):
        for path in [place, *sorted(place.rglob("*"))] if place.is_dir() else [place]:
            if (path.is_file() and "__pycache__" not in path.parts
                    and not any(path.is_relative_to(out) for out in leave_out)):
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def leftovers(command, mark):
    """The processes still running ``command`` (as ``pgrep -f`` matches it) whose environment
    holds ``mark``."""
    found = []
    pids = subprocess.run(["pgrep", "-f", command], capture_output=True, text=True).stdout
    for pid in pids.split():
        try:
            if mark.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                found.append(pid)
        except OSError:                 # it ended meanwhile
            continue
    return found
