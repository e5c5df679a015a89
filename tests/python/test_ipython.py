"""%load_ext gpumem, driven through IPython's API."""

from reports import line

SESSION = """
import gpumem.ipython
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
def cell(code):
    result = shell.run_cell(code, store_history=True)
    assert result.success, result.error_in_exec or result.error_before_exec
cell("%load_ext gpumem")                                                      # 1
cell("from gpumem.testing import allocate")                                   # 2
cell("x = allocate(10)\\ny = allocate(5)\\ny.free()")                        # 3
cell("%gpumem_trace off")                                                     # 4
cell("z = allocate(7)")                                                       # 5
cell("%gpumem_trace on")                                                      # 6
cell("x.free(); allocate(20).free()")                                         # 7
cell("import gpumem; gpumem.load_ipython_extension(get_ipython())")           # 8: no double hooks
print("--")
cell("%gpumem_trace history")                                                 # 9
emit(history=[[r.cell, r.delta_used, r.delta_peaked, r.bytes.source]
              for r in gpumem.ipython.history],
     same=shell.user_ns["_gpumem"] is gpumem.ipython.history,
     used_bytes=gpumem.ipython.history[1].bytes.delta_used)
cell("%unload_ext gpumem")                                                    # 10
cell("allocate(3).free()")                                                    # 11
emit(after_unload=len(gpumem.ipython.history))
"""


def test_every_cell_is_traced_with_exact_peaks(sim):
    result = sim.run(SESSION)
    assert result.lines == [
        line(0, 0, " (cell 2)"),
        line(10, 5, " (cell 3)"),
        line(-10, 10, " (cell 7)"),
        line(0, 0, " (cell 8)"),
        "--",
        line(0, 0, " (cell 2)"),
        line(10, 5, " (cell 3)"),
        line(-10, 10, " (cell 7)"),
        line(0, 0, " (cell 8)"),
        line(0, 0, " (cell 9)"),
    ]
    assert result["history"] == [
        [2, 0, 0, "exact"],
        [3, 10, 5, "exact"],
        [7, -10, 10, "exact"],
        [8, 0, 0, "exact"],
        [9, 0, 0, "exact"],
    ]
    assert result["same"] is True
    assert result["used_bytes"] == 10 * 2**20
    assert result["after_unload"] == 5
