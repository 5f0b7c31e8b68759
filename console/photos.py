"""Photos from the inspector's phone: checked by content, bounded, stripped, renamed.

A photo leaves the site in every report and export, and it arrives from a
form anyone with an account can post, so nothing about it is taken on trust:

- **size**: at most :data:`MAX_PHOTO_BYTES` as sent and :data:`MAX_PIXELS`
  once decoded. Pillow's own decompression-bomb guard is set to the same
  bound and turned into a refusal (a small file that claims a huge image is
  refused before its pixels are read);
- **type by content**: the first bytes must be a JPEG, PNG or WebP signature
  and Pillow must decode the whole image as that format; the name and the
  declared content type are ignored;
- **metadata**: the image is re-encoded from its pixels, which drops EXIF
  (GPS position, camera serial), XMP and comments; the orientation is applied
  first so the picture stands as it was taken. A site that wants the position
  kept says ``keep_photo_location = true`` in ``[field_desk]`` (siltwatch/practices.py),
  and then the original bytes are stored as sent;
- **names**: the file name is never used; a photo is stored and served under
  the SHA-256 of its stored bytes.
"""

from __future__ import annotations

import io
import warnings

from PIL import Image, ImageOps

from ingest.store.fieldbook import Photo

MAX_PHOTO_BYTES = 12 * 1024 * 1024  # a 48 MP phone JPEG is ~8-12 MB
MAX_PIXELS = 50_000_000  # 8,000 x 6,000 and then some
MAX_PHOTOS = 12  # per practice or area, and per submission
_SIGNATURES = {
    b"\xff\xd8\xff": "JPEG",
    b"\x89PNG\r\n\x1a\n": "PNG",
}
_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}


class PhotoProblem(Exception):
    """The photo is refused; the text says why, in the inspector's words."""


def _sniff(data: bytes) -> str | None:
    for magic, fmt in _SIGNATURES.items():
        if data.startswith(magic):
            return fmt
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def check_photo(data: bytes, label: str, *, keep_metadata: bool = False) -> Photo:
    """The photo to store, or PhotoProblem naming ``label`` (e.g. "photo 2 of silt fence
    sf-north") and what is wrong with it."""
    if len(data) > MAX_PHOTO_BYTES:
        raise PhotoProblem(
            f"{label} is {len(data) / 1_048_576:.1f} MB; a photo may be at most "
            f"{MAX_PHOTO_BYTES // 1_048_576} MB (take it again at a lower resolution)"
        )
    if not data:
        raise PhotoProblem(f"{label} is empty")
    fmt = _sniff(data)
    if fmt is None:
        raise PhotoProblem(f"{label} is not a photo (JPEG, PNG or WebP), whatever its name says")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            Image.MAX_IMAGE_PIXELS = MAX_PIXELS
            with Image.open(io.BytesIO(data), formats=[fmt]) as probe:
                width, height = probe.size
                if width * height > MAX_PIXELS:
                    raise Image.DecompressionBombError("too many pixels")
                probe.load()  # decodes every pixel: a truncated or forged file fails here
                if keep_metadata:
                    return Photo(data, _TYPES[fmt], width, height)
                upright = ImageOps.exif_transpose(probe)
                return _reencoded(upright, fmt)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise PhotoProblem(
            f"{label} claims more than {MAX_PIXELS // 1_000_000} million pixels; refused"
        ) from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise PhotoProblem(f"{label} is not a readable {fmt} image ({exc})") from None


def _reencoded(image: Image.Image, fmt: str) -> Photo:
    """The pixels alone, encoded again: no EXIF, XMP, ICC comments or trailing bytes."""
    out = io.BytesIO()
    if fmt == "JPEG":
        image.convert("RGB").save(out, "JPEG", quality=88)
    elif fmt == "PNG":
        image.save(out, "PNG")
    else:
        image.save(out, "WEBP", quality=88)
    width, height = image.size
    return Photo(out.getvalue(), _TYPES[fmt], width, height)
