"""Reads a region profile into Hatchet and Thicket and prints its tree."""
import sys

import hatchet as ht
import thicket as th

profile = sys.argv[1] if len(sys.argv) > 1 else "region_profile.cali"

gf = ht.GraphFrame.from_caliperreader(profile)
print(gf.tree(metric_column="time", precision=6))

tk = th.Thicket.from_caliperreader([profile])
print(tk.dataframe[["name", "time"]])
print(tk.metadata[["iterations"]])
