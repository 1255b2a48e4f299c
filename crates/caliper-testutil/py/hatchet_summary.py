"""Loads profiles with Hatchet and prints, as JSON, one summary per file:
the graph's node paths, the metric columns and the dataframe's rows.

Arguments: pairs of READER FILE, where READER is `caliper` (json-split,
GraphFrame.from_caliper) or `caliperreader` (.cali,
GraphFrame.from_caliperreader)."""

import json
import sys

import hatchet as ht

out = []
args = sys.argv[1:]
for reader, path in zip(args[0::2], args[1::2]):
    if reader == "caliper":
        # Hatchet orders nodes by a "Node order" column by default and
        # fails without one (sampling profiles have none, as the
        # reference's): load those unordered, as their users must.
        with open(path) as f:
            ordered = "Node order" in json.load(f).get("columns", [])
        gf = ht.GraphFrame.from_caliper(path, node_ordering=ordered)
    else:
        gf = ht.GraphFrame.from_caliperreader(path)
    df = gf.dataframe.reset_index()
    rows = sorted(
        json.dumps({k: str(v) for k, v in row.items() if k not in ("node", "nid")}, sort_keys=True)
        for row in df.to_dict("records")
    )
    out.append(
        {
            "paths": sorted(str(n.path()) for n in gf.graph.traverse()),
            "exc_metrics": sorted(gf.exc_metrics),
            "inc_metrics": sorted(gf.inc_metrics),
            "columns": sorted(map(str, df.columns)),
            "rows": rows,
        }
    )
json.dump(out, sys.stdout)
