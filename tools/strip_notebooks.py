"""Remove run timestamps from notebooks, so that re-running one changes only what it shows.

    python tools/strip_notebooks.py                  # every course notebook, in place
    python tools/strip_notebooks.py nb.ipynb ...     # some notebooks
    python tools/strip_notebooks.py --check          # list what would change; exit 1 if anything

Jupyter's executors record when each cell started and finished in the cell's
``metadata.execution`` (and the execute-time extension in ``ExecuteTime``).
Those timestamps change on every run and make every re-run a diff in git.
This tool deletes them from every cell. A kernel also cuts a cell's printed
text into stream outputs wherever its buffer happened to be flushed, which
differs from run to run; the tool joins consecutive outputs of one stream
(stdout or stderr) into one, as nbval does before it compares them.
Everything else is left as it was: the file is written back in nbformat's own
layout (one-space indent, sorted keys), so a notebook with nothing to change
is left byte for byte unchanged. Running it twice is the same as running it once.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMING_KEYS = ("execution", "ExecuteTime")


def dumps(nb: dict) -> str:
    """A notebook as nbformat writes it."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _text(output: dict) -> str:
    text = output.get("text", "")
    return text if isinstance(text, str) else "".join(text)


def coalesce_streams(cell: dict) -> bool:
    """Join consecutive outputs of the same stream in ``cell``, in place; True if any were joined."""
    outputs = cell.get("outputs")
    if not outputs:
        return False
    merged: list[dict] = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (prev is not None and out.get("output_type") == "stream" and prev.get("output_type") == "stream"
                and out.get("name") == prev.get("name")):
            prev["text"] = (_text(prev) + _text(out)).splitlines(keepends=True)
        else:
            merged.append(out)
    if len(merged) == len(outputs):
        return False
    cell["outputs"] = merged
    return True


def strip(nb: dict) -> int:
    """Delete the timing metadata of every cell and join split streams, in place.

    Returns how many cells changed.
    """
    changed = 0
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {})
        timed = any(key in meta for key in TIMING_KEYS)
        for key in TIMING_KEYS:
            meta.pop(key, None)
        if coalesce_streams(cell) or timed:
            changed += 1
    return changed


def strip_file(path: pathlib.Path, check: bool = False) -> int:
    """Strip one notebook file (unless ``check``); return how many cells had timings."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    changed = strip(nb)
    if changed and not check:
        path.write_text(dumps(nb), encoding="utf-8")
    return changed


def course_notebooks() -> list[pathlib.Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path,
                        help="notebooks to strip (default: notebooks/[0-9][0-9]_*.ipynb)")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; list the notebooks that carry timings and exit 1 if any do")
    args = parser.parse_args(argv)
    paths = args.notebooks or course_notebooks()
    dirty = []
    for path in paths:
        n = strip_file(path, check=args.check)
        if n:
            dirty.append(path)
            verb = "carries timings or split streams" if args.check else "stripped timings or joined streams"
            print(f"{path}: {verb} in {n} cells")
    if args.check:
        return 1 if dirty else 0
    print(f"strip_notebooks: {len(dirty)} of {len(paths)} notebooks changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
