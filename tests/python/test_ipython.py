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


def test_an_out_of_memory_cell_is_followed_by_its_report(sim):
    result = sim.run("""
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_cell("%load_ext gpumem", store_history=True)                       # 1
shell.run_cell("from gpumem.testing import allocate, MB", store_history=True)  # 2
shell.run_cell("def load_weights():\\n    return allocate(nbytes=300 * MB)\\n"
               "def make_scratch():\\n    return allocate(nbytes=100 * MB)",
               store_history=True)                                            # 3
print("--")
shell.run_cell("w = load_weights(); s = make_scratch()", store_history=True)   # 4: no report
print("--")
failed = shell.run_cell("big = allocate(nbytes=200 * 1024 * MB)", store_history=True)  # 5
print("--")
shell.run_cell("t = allocate(1)", store_history=True)                         # 6: no report again
import gpumem
emit(failed=not failed.success, top=gpumem.last_oom().top_function())
""")
    out = "\n".join(result.lines).split("\n--\n")
    assert len(out) == 4
    assert "out of memory" not in out[1]
    report = [text for text in out[2].splitlines() if text.startswith(("gpumem:", "  "))]
    report = [text for text in report if "MB  " in text or text.startswith("gpumem:")]
    assert report[0].startswith("gpumem: out of memory in cell 5: 204800.0 MB requested on GPU 0 "
                                "(CUDA_ERROR_OUT_OF_MEMORY)")
    assert report[1].split()[:3] == ["300.0", "MB", "load_weights"]
    assert report[2].split()[:3] == ["100.0", "MB", "make_scratch"]
    assert len(report) == 3
    assert "out of memory" not in out[3]
    assert result["failed"] is True
    assert result["top"] == "load_weights"
