"""Reports go through Python's sys.stdout as it is when they are made. These run in pytest's own
process (on the session's simulated GPU, see conftest), where pytest replaces sys.stdout."""

import contextlib
import io
import threading

from reports import line


def test_reports_reach_pytest_capture(capsys):
    from gpumem import GPUMemTrace
    from gpumem.testing import allocate

    mtrace = GPUMemTrace(ctx="cap", device=0)
    with allocate(3, device=0):
        mtrace.report("held")
    assert capsys.readouterr().out == line(3, 0, " (cap: held)") + "\n"


def test_reports_follow_redirect_stdout(capsys):
    from gpumem import GPUMemTrace, gpu_mem_trace
    from gpumem.testing import allocate

    @gpu_mem_trace
    def work():
        allocate(2, device=0).free()

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        with GPUMemTrace(ctx="redirected", device=0):
            allocate(5, device=0).free()
        work()
    print("after")
    assert buffer.getvalue().splitlines() == [
        line(0, 5, " (redirected: exit)"),
        line(0, 2, " (test_reports_follow_redirect_stdout.<locals>.work: exit)"),
    ]
    assert capsys.readouterr().out == "after\n"


def test_reports_from_another_thread_reach_the_current_stdout(capsys):
    from gpumem import GPUMemTrace

    mtrace = GPUMemTrace(ctx="thread", device=0)
    worker = threading.Thread(target=mtrace.report, args=("worker",))
    worker.start()
    worker.join()
    assert capsys.readouterr().out == line(0, 0, " (thread: worker)") + "\n"


def test_testing_allocate_holds_and_frees(capsys):
    import gpumem
    from gpumem.testing import allocate

    before = gpumem.gpu_mem_get(0).used
    memory = allocate(nbytes=5 * 2**20 + 1, device=0)
    assert memory.held and memory.size == 5 * 2**20 + 1 and memory.device == 0
    assert memory.address != 0
    assert gpumem.gpu_mem_get(0).used == before + 5
    memory.free()
    memory.free()  # a second free does nothing
    assert not memory.held
    assert gpumem.gpu_mem_get(0).used == before
    assert "freed" in repr(memory)
