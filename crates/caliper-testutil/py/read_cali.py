"""Reads .cali files with the reference's Python reader (caliper-reader) and
prints, as JSON, one object per file: {"records": [...], "globals": {...}}."""

import json
import sys

from caliperreader import read_caliper_contents

out = []
for path in sys.argv[1:]:
    records, globals_ = read_caliper_contents(path)
    out.append({"records": records, "globals": globals_})
json.dump(out, sys.stdout)
