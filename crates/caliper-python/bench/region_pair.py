"""Cost of a region begin/end pair from Python, in ns per pair.

Measures in this process, under whatever config the environment sets:

    CALI_CONFIG=runtime-report python3 region_pair.py [PAIRS]

Prints the best of several repeats for: a begin_region/end_region pair, an
Annotation begin/end pair, a pair of decorated calls' worth of work (the
decorator's own overhead), and, as the floor, a pair of calls of a
built-in function that does nothing (what any call from Python costs).
The report or trace of the config is written at exit as usual. Times are
the thread's CPU time, so that the other processes of a busy machine do
not count.
"""

import sys
import time
import timeit

from pycaliper.annotation import Annotation
from pycaliper.high_level import annotate_function
from pycaliper.instrumentation import begin_region, end_region

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
REPEATS = 7


def region_pair():
    begin_region("bench")
    end_region("bench")


ANNOTATION = Annotation("bench.annotation")


def annotation_pair():
    ANNOTATION.begin("bench")
    ANNOTATION.end()


@annotate_function("bench.decorated")
def decorated():
    pass


def undecorated():
    pass


def noop_pair():
    id(None)
    id(None)


def ns_per_call(stmt):
    best = min(timeit.repeat(stmt, number=PAIRS, repeat=REPEATS, timer=time.thread_time))
    return best / PAIRS * 1e9


def main():
    loop_cost = ns_per_call(lambda: None)
    results = {
        "begin_region/end_region pair": ns_per_call(region_pair),
        "Annotation begin/end pair": ns_per_call(annotation_pair),
        "annotate_function call (minus an undecorated call)": ns_per_call(decorated) - ns_per_call(undecorated),
        "two no-op built-in calls (floor)": ns_per_call(noop_pair),
    }
    print("pairs per repeat: %d, best of %d, the benchmark loop's own %.1f ns subtracted" % (PAIRS, REPEATS, loop_cost))
    for name, ns in results.items():
        if name.startswith("annotate_function"):
            print("%-55s %7.1f ns" % (name, ns))
        else:
            print("%-55s %7.1f ns" % (name, ns - loop_cost))


if __name__ == "__main__":
    main()
