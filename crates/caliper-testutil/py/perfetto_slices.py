"""Decodes a Perfetto trace with the protos Google publishes in the
`perfetto` package and prints, as JSON, its process and thread tracks and
its slices (name, category, thread, begin and end in ns, depth), replaying
the track events as the trace processor does: tracks from their
descriptors, names and categories through the sequence's interned data,
slices from begin/end pairs on each track.

Usage: perfetto_slices.py TRACE
"""

import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

TrackEvent = pb.TrackEvent


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    processes, threads, slices, counters = {}, [], [], {}
    names, categories, track_threads, counter_tracks, open_slices = {}, {}, {}, {}, {}
    for packet in trace.packet:
        if packet.HasField("interned_data"):
            for n in packet.interned_data.event_names:
                names[n.iid] = n.name
            for c in packet.interned_data.event_categories:
                categories[c.iid] = c.name
        if packet.HasField("track_descriptor"):
            track = packet.track_descriptor
            if track.HasField("process"):
                processes[track.process.pid] = track.process.process_name
            elif track.HasField("thread"):
                threads.append([track.thread.pid, track.thread.tid, track.thread.thread_name])
                track_threads[track.uuid] = track.thread.thread_name
            elif track.HasField("counter"):
                counter_tracks[track.uuid] = track.name
            else:
                # A named track of its own (a CUDA stream's device work):
                # its slices' "thread" is the track's name.
                track_threads[track.uuid] = track.name
        if packet.HasField("track_event"):
            event = packet.track_event
            stack = open_slices.setdefault(event.track_uuid, [])
            if event.type == TrackEvent.TYPE_SLICE_BEGIN:
                stack.append({
                    "thread": track_threads[event.track_uuid],
                    "category": categories[event.category_iids[0]],
                    "name": names[event.name_iid],
                    "begin_ns": packet.timestamp,
                    "depth": len(stack),
                })
            elif event.type == TrackEvent.TYPE_SLICE_END:
                done = stack.pop()
                done["end_ns"] = packet.timestamp
                slices.append(done)
            elif event.type == TrackEvent.TYPE_COUNTER:
                name = counter_tracks[event.track_uuid]
                counters.setdefault(name, []).append([packet.timestamp, event.double_counter_value])
    json.dump({"processes": processes, "threads": threads, "slices": slices, "counters": counters}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
