"""``python -m roofline.evaluate``: rewrite ``roofline/derived.jsonl`` (the derived forms of the
shipped architectures, with the fingerprint of the sources they were derived from)."""

from .forms import write

print(f"wrote {write()}")
