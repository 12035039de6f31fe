"""joules.Monitor on the fake NVML: windows measured against the scenario's exact energy."""
from __future__ import annotations

import math
import threading
import time

import pytest

import joules
from fake_gpus import SHORT_WINDOW_REL, constant, h100

WATTS_8 = [100.0 + 75.0 * i for i in range(8)]


def test_a_window_over_8_gpus_at_constant_power_is_exact_to_half_a_percent(gpus):
    g = gpus({"devices": [h100(constant(w)) for w in WATTS_8]})
    with joules.Monitor(cpu=False) as monitor:
        assert [d.index for d in monitor.gpus] == list(range(8))
        assert all(d.name == "NVIDIA H100 80GB HBM3" and d.method == "counter"
                   for d in monitor.gpus)
        t0 = time.monotonic()
        monitor.begin_window("train")
        time.sleep(1.0)  # the measured work: the GPUs draw their power whatever joules does
        m = monitor.end_window("train")
        t1 = time.monotonic()
        assert m.method == "counter"
        assert m.final
        assert m.time == pytest.approx(t1 - t0, abs=0.01)
        assert sorted(m.gpu_energy) == list(range(8))
        # The window's instants, as the library took them, lie between the caller's.
        assert t0 <= m.begin_monotonic < m.end_monotonic <= t1
        assert m.time == pytest.approx(m.end_monotonic - m.begin_monotonic, abs=1e-6)
        for i, w in enumerate(WATTS_8):
            truth = g.truth(i, m.begin_monotonic, m.end_monotonic)
            assert m.gpu_energy[i] == pytest.approx(truth, rel=0.005), i
            assert m.gpu_energy[i] == pytest.approx(w * m.time, rel=0.005), i
        assert m.total_energy == pytest.approx(sum(m.gpu_energy.values()), rel=1e-9)
        assert m.gpu_total_energy == pytest.approx(m.total_energy, rel=1e-9)
        assert m.cpu_energy is None and m.dram_energy is None
        assert m.lost == []


def test_end_window_returns_at_once_and_reading_waits_for_the_final_numbers(gpus):
    # A counter that updates every 100 ms: the numbers are final only after the next update.
    g = gpus({"devices": [h100(constant(300),
                               energy_counter={"update_ms": 100, "phase_ms": 13})]})
    with joules.Monitor(cpu=False) as monitor:
        t0 = time.monotonic()
        monitor.begin_window("w")
        time.sleep(0.3)
        t = time.perf_counter()
        m = monitor.end_window("w")
        returned = time.perf_counter() - t
        t1 = time.monotonic()
        assert returned < 0.02, returned
        truth = g.truth(0, t0, t1)
        # Placed between counter updates: within the error bound the library gives.
        assert abs(m.total_energy - truth) <= m.error + 0.002 * truth, (m.total_energy, truth)
        assert m.total_energy == pytest.approx(truth, rel=SHORT_WINDOW_REL)
        assert m.final
        waited = time.perf_counter() - t
        assert waited < 0.5, waited


def test_exact_false_reads_the_counters_right_away(gpus):
    gpus({"devices": [h100(constant(300), energy_counter={"update_ms": 100, "phase_ms": 13})]})
    with joules.Monitor(cpu=False, exact=False) as monitor:
        monitor.begin_window("w")
        time.sleep(0.3)
        m = monitor.end_window("w")
        # Read before the next counter update: the first reading after the end, not final.
        assert m.total_energy == pytest.approx(300 * m.time, rel=0.05)
        assert m.method == "counter"
        assert m.time == pytest.approx(0.3, abs=0.05)
        monitor.begin_window("v")
        time.sleep(0.3)
        m2 = monitor.end_window("v", exact=True)
        assert m2.total_energy == pytest.approx(300 * m2.time, rel=SHORT_WINDOW_REL)
        assert m2.final


def test_nested_and_overlapping_windows_each_get_their_own_exact_energy(gpus):
    # Power that changes every 50 ms, different on each GPU: a window's energy is its own.
    watts = [[100 + (i * 7919 + k * 104729) % 600 for i in range(400)] for k in range(2)]
    g = gpus({"devices": [h100({"type": "segments", "start_s": 0.0, "dt_s": 0.05, "watts": w})
                          for w in watts]})
    marks = {}
    with joules.Monitor(cpu=False) as monitor:
        marks["outer0"] = time.monotonic()
        monitor.begin_window("outer")
        time.sleep(0.2)
        marks["a0"] = time.monotonic()
        monitor.begin_window("a")
        time.sleep(0.3)
        marks["b0"] = time.monotonic()
        monitor.begin_window("b")  # overlaps a
        time.sleep(0.3)
        a = monitor.end_window("a")
        marks["a1"] = time.monotonic()
        time.sleep(0.3)
        b = monitor.end_window("b")
        marks["b1"] = time.monotonic()
        outer = monitor.end_window("outer")
        marks["outer1"] = time.monotonic()
        for name, m in (("a", a), ("b", b), ("outer", outer)):
            assert marks[name + "0"] <= m.begin_monotonic < m.end_monotonic <= marks[name + "1"]
            for i in range(2):
                # The exact energy between the instants the library took for this window.
                truth = g.truth(i, m.begin_monotonic, m.end_monotonic)
                rel = 0.005 if name == "outer" else SHORT_WINDOW_REL  # outer: 1.1 s
                assert m.gpu_energy[i] == pytest.approx(truth, rel=rel), (name, i)
        assert outer.total_energy > a.total_energy + b.total_energy - 1e-9 - min(
            a.total_energy, b.total_energy)


def test_a_gpu_lost_mid_window_keeps_its_energy_up_to_the_loss_and_is_flagged(gpus):
    lost_at = 10.0 + 1.0  # scenario time: one second from now
    g = gpus({"devices": [h100(constant(300)),
                          h100(constant(400), faults=[{"at_s": lost_at, "kind": "lost"}])]},
             before_s=10.0)
    with joules.Monitor(cpu=False) as monitor:
        t0 = time.monotonic()
        monitor.begin_window("w")
        time.sleep(2.0)
        m = monitor.end_window("w")
        assert m.lost == [1]
        assert m.devices[1].lost and not m.devices[0].lost
        assert m.gpu_energy[0] == pytest.approx(300 * m.time, rel=0.005)
        up_to_loss = lost_at - g.scenario_time(t0)
        # Known up to the last reading before the loss: within one reading interval of it.
        assert m.gpu_energy[1] == pytest.approx(400 * up_to_loss, abs=400 * 0.12)
        assert "lost GPU 1" in m.summary()


def test_window_names_errors_carry_the_c_librarys_message(gpus):
    gpus({"devices": [h100(constant(100))]})
    with joules.Monitor(cpu=False) as monitor:
        with pytest.raises(joules.WindowNotFoundError) as e:
            monitor.end_window("never begun")
        assert e.value.status == 4 and str(e.value)
        monitor.begin_window("x")
        with pytest.raises(joules.StateError) as e:
            monitor.begin_window("x")
        assert e.value.status == 6 and str(e.value)
        monitor.end_window("x").wait()
    with pytest.raises(joules.StateError):
        monitor.begin_window("after close")
    with pytest.raises(joules.InvalidArgumentError):
        joules.Monitor(backend="rocm")


def test_no_gpu_is_an_exception_not_a_crash(gpus):
    gpus({"init_error": "DRIVER_NOT_LOADED", "devices": [{}]})
    with pytest.raises(joules.JoulesError) as e:
        joules.Monitor(cpu=False)
    assert isinstance(e.value, (joules.NoDeviceError, joules.BackendError))
    assert str(e.value)


def test_zeus_arguments_and_cancel(gpus):
    gpus({"devices": [h100(constant(w)) for w in (100, 200, 300, 400)]})
    with joules.Monitor(gpu_indices=[1, 3], cpu_indices=[], approx_instant_energy=True,
                        sync_execution_with="torch") as monitor:
        assert monitor.gpu_indices == [1, 3]
        monitor.begin_window("w")
        time.sleep(0.2)
        m = monitor.end_window("w")
        assert sorted(m.gpu_energy) == [1, 3]
        assert m.gpu_energy[3] == pytest.approx(400 * m.time, rel=SHORT_WINDOW_REL)
        monitor.begin_window("c")
        cancelled = monitor.end_window("c", cancel=True)
        assert cancelled.time == 0 and cancelled.gpu_energy == {}


def test_zeus_gpu_indices_follow_cuda_visible_devices(gpus, monkeypatch):
    gpus({"devices": [h100(constant(w)) for w in (100, 200, 300, 400)]})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    with joules.Monitor(gpu_indices=[1]) as monitor:
        monitor.begin_window("w")
        time.sleep(0.2)
        m = monitor.end_window("w")
        # CUDA device 1 is GPU 3 (400 W); results are keyed as Zeus keys them.
        assert list(m.gpu_energy) == [1]
        assert m.gpu_energy[1] == pytest.approx(400 * m.time, rel=SHORT_WINDOW_REL)


def test_threads_share_a_monitor_and_the_gil_is_released_while_waiting(gpus):
    gpus({"devices": [h100(constant(250), energy_counter={"update_ms": 100, "phase_ms": 5})
                      for _ in range(2)]})
    results = {}
    errors = []
    with joules.Monitor(cpu=False) as monitor:
        def work(k: int) -> None:
            try:
                for j in range(5):
                    monitor.begin_window(f"t{k}-{j}")
                    time.sleep(0.02)
                    m = monitor.end_window(f"t{k}-{j}")
                    results[(k, j)] = (m.time, m.total_energy, m.error, m.final)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(results) == 40
        for duration, energy, error, final in results.values():
            # 20 ms windows on a counter that moves every 100 ms: placed between its updates,
            # within the error bound the library states for them.
            assert final
            assert abs(energy - 2 * 250 * duration) <= error + 0.01 * energy

        # While one thread waits for a window's numbers, another one runs Python code.
        counter = [0]
        done = threading.Event()

        def spin() -> None:
            while not done.is_set():
                counter[0] += 1

        spinner = threading.Thread(target=spin)
        spinner.start()
        try:
            for k in range(3):
                monitor.begin_window(f"wait {k}")
                m = monitor.end_window(f"wait {k}")
                before = counter[0]
                t = time.perf_counter()
                m.wait()
                waited = time.perf_counter() - t
                after = counter[0]
                assert m.final
                # The wait lasts until the next counter update (0-100 ms here): with the GIL
                # held, the spinner could not have counted meanwhile.
                assert after > before or waited < 0.002, (k, waited)
        finally:
            done.set()
            spinner.join()


def test_fork_the_child_opens_its_own_monitor(gpus):
    import os

    gpus({"devices": [h100(constant(200))]})
    monitor = joules.Monitor(cpu=False)
    monitor.begin_window("parent")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        code = 1
        try:
            try:
                monitor.begin_window("child")
                outcome = "no error"
            except joules.ForkedError as e:
                outcome = f"forked:{e.status}"
            with joules.Monitor(cpu=False) as mine:
                mine.begin_window("child")
                time.sleep(0.2)
                m = mine.end_window("child")
                ok = m.gpu_energy[0] == pytest.approx(200 * m.time, rel=SHORT_WINDOW_REL)
            os.write(w, f"{outcome} {ok}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    said = os.read(r, 100).decode()
    os.close(r)
    assert os.waitstatus_to_exitcode(status) == 0, said
    assert said == "forked:8 True"
    time.sleep(0.1)
    m = monitor.end_window("parent")
    assert m.gpu_energy[0] == pytest.approx(200 * m.time, rel=SHORT_WINDOW_REL)
    monitor.close()


def test_totals_and_repr(gpus):
    gpus({"devices": [h100(constant(100))]})
    with joules.Monitor(cpu=False) as monitor:
        time.sleep(0.2)
        t = monitor.totals()
        assert not t.final
        assert t.total_energy == pytest.approx(100 * t.time, rel=0.05)
        assert "gpu 0" in repr(monitor)
        assert "Measurement(" in repr(t)


def test_sim_backend_is_marked_simulated():
    with joules.Monitor(backend="sim", sim_gpus=2, cpu=False) as monitor:
        assert [d.method for d in monitor.gpus] == ["simulated", "simulated"]
        monitor.begin_window("w")
        time.sleep(0.1)
        m = monitor.end_window("w")
        assert m.method == "simulated"
        assert not math.isnan(m.total_energy) and m.total_energy > 0
