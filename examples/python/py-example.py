#!/usr/bin/env python3
"""The annotated demo program in Python: main > init, main > mainloop > foo.

    python3 examples/python/py-example.py [CONFIG]

runs under the config string CONFIG (default
``runtime-report,calc.inclusive``) through a ConfigManager, and prints
its report.
"""

import sys
import time

from pycaliper.config_manager import ConfigManager
from pycaliper.high_level import annotate_function
from pycaliper.instrumentation import begin_region, end_region, set_global_byname
from pycaliper.loop import Loop


@annotate_function()
def foo(i):
    time.sleep(0.001 * i)
    return 0.001 * i


def main():
    config = sys.argv[1] if len(sys.argv) > 1 else "runtime-report,calc.inclusive"
    mgr = ConfigManager()
    if not mgr.add(config):
        print("Caliper config error:", mgr.err_msg(), file=sys.stderr)
        return 1
    mgr.start()

    set_global_byname("iterations", 4)
    set_global_byname("caliper.config", config)

    begin_region("main")
    begin_region("init")
    total = 0.0
    end_region("init")

    main_loop = Loop("mainloop")
    for i in range(4):
        main_loop.start_iteration(i)
        total += foo(i)
        main_loop.end_iteration()
    main_loop.end()

    end_region("main")
    mgr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
