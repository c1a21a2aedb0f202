"""Make the PNG figures saved in notebooks smaller: 256-colour palettes instead of full colour.

    python tools/shrink_pngs.py                  # every course notebook, in place
    python tools/shrink_pngs.py nb.ipynb ...     # some notebooks
    python tools/shrink_pngs.py --check          # list what would change; exit 1 if anything

Matplotlib saves its figures as 32-bit RGBA PNGs. A line plot or heat map has
a few thousand distinct colours at most, mostly the anti-aliased edges of lines
and text, so a 256-colour palette (median cut, no dithering) looks the same
and takes about a third of the bytes. Each ``image/png`` output is converted
this way and replaced if the result is smaller; figures with transparent
pixels keep their transparency (fast octree, which quantises alpha too).

The result depends only on the input image (and the Pillow and zlib
versions): no dithering noise, no timestamps, and the text chunks (the
"Software: Matplotlib ..." line) are dropped. A palette image is left alone,
so running the tool twice is the same as running it once. nbval does not
compare image/png outputs, so the notebook tests are unaffected.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import pathlib
import sys

from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
COLOURS = 256
_MEDIANCUT = getattr(Image, "Quantize", Image).MEDIANCUT
_FASTOCTREE = getattr(Image, "Quantize", Image).FASTOCTREE
_NO_DITHER = getattr(Image, "Dither", Image).NONE


def shrink_png(data: bytes) -> bytes | None:
    """The PNG as a palette image, or None if it already is one or would not get smaller."""
    im = Image.open(io.BytesIO(data))
    if im.mode in ("P", "PA", "L", "LA", "1"):
        return None
    im.load()
    if im.mode == "RGBA" and im.getchannel("A").getextrema()[0] < 255:
        quantised = im.quantize(COLOURS, method=_FASTOCTREE, dither=_NO_DITHER)
    else:
        quantised = im.convert("RGB").quantize(COLOURS, method=_MEDIANCUT, dither=_NO_DITHER)
    options = {"optimize": True}
    if "dpi" in im.info:
        options["dpi"] = im.info["dpi"]
    buf = io.BytesIO()
    quantised.save(buf, "PNG", **options)
    out = buf.getvalue()
    return out if len(out) < len(data) else None


def shrink(nb: dict) -> tuple[int, int]:
    """Shrink every PNG output of the notebook in place; return (images changed, bytes saved)."""
    changed = saved = 0
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            encoded = data.get("image/png")
            if encoded is None:
                continue
            text = "".join(encoded) if isinstance(encoded, list) else encoded
            raw = base64.b64decode(text)
            smaller = shrink_png(raw)
            if smaller is None:
                continue
            new = base64.b64encode(smaller).decode("ascii")
            data["image/png"] = new + "\n" if text.endswith("\n") else new
            changed += 1
            saved += len(raw) - len(smaller)
    return changed, saved


def dumps(nb: dict) -> str:
    """A notebook as nbformat writes it."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def shrink_file(path: pathlib.Path, check: bool = False) -> tuple[int, int]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed, saved = shrink(nb)
    if changed and not check:
        path.write_text(dumps(nb), encoding="utf-8")
    return changed, saved


def course_notebooks() -> list[pathlib.Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path,
                        help="notebooks to shrink (default: notebooks/[0-9][0-9]_*.ipynb)")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; list the notebooks with PNGs to shrink and exit 1 if any")
    args = parser.parse_args(argv)
    paths = args.notebooks or course_notebooks()
    dirty = []
    for path in paths:
        before = path.stat().st_size
        changed, saved = shrink_file(path, check=args.check)
        if changed:
            dirty.append(path)
            if args.check:
                print(f"{path}: {changed} PNGs would shrink by {saved // 1024} KB")
            else:
                after = path.stat().st_size
                print(f"{path}: {changed} PNGs shrunk; {before // 1024} KB -> {after // 1024} KB")
    if args.check:
        return 1 if dirty else 0
    print(f"shrink_pngs: {len(dirty)} of {len(paths)} notebooks changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
