"""Regions, a loop and a decorated function from Python."""
import sys
import time

from pycaliper.config_manager import ConfigManager
from pycaliper.high_level import annotate_function
from pycaliper.instrumentation import begin_region, end_region, set_global_byname
from pycaliper.loop import Loop


@annotate_function()
def foo(i):
    time.sleep(0.001 * i)


mgr = ConfigManager()
if not mgr.add(sys.argv[1] if len(sys.argv) > 1 else "runtime-report"):
    print("Caliper config error:", mgr.err_msg())
mgr.start()
set_global_byname("iterations", 4)
begin_region("main")
main_loop = Loop("mainloop")
for i in range(4):
    main_loop.start_iteration(i)
    foo(i)
    main_loop.end_iteration()
main_loop.end()
end_region("main")
mgr.flush()
