"""tests/support/ports.py hands out free ports that no outgoing connection can take: none in the kernel's ephemeral
range, none already bound, and the fallback to the kernel's choice where the range leaves no room."""

import socket

import pytest

from tests.support import ports


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_a_run_of_free_ports_lies_below_the_ephemeral_range():
    low = ports._ephemeral_start()
    for _ in range(50):
        first = ports.free_port_run(3)
        assert first >= ports.FIRST_PORT and first + 2 < low
        assert all(_bindable(port) for port in range(first, first + 3))


def test_a_bound_port_is_never_handed_out(tmp_path, monkeypatch):
    # A range leaving room for 4 ports below it, 2 of them held by listeners here: only the other 2 come back.
    first = ports.free_port_run(4)
    held = [socket.create_server(("127.0.0.1", port)) for port in (first, first + 2)]
    try:
        monkeypatch.setattr(ports, "FIRST_PORT", first)
        (tmp_path / "range").write_text(f"{first + 4}\t60999\n")
        monkeypatch.setattr(ports, "EPHEMERAL_RANGE", tmp_path / "range")
        assert {ports.free_port() for _ in range(40)} == {first + 1, first + 3}
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize(("range_text", "first_port"), [("1024 65535", 20_000), ("unreadable", 32_768)])
def test_without_room_below_the_range_the_kernel_chooses(tmp_path, monkeypatch, range_text, first_port):
    # An unreadable range counts as Linux's default, 32768-60999. The kernel's bind(0) picks from the real range.
    real_low = ports._ephemeral_start()
    (tmp_path / "range").write_text(range_text)
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", tmp_path / "range")
    monkeypatch.setattr(ports, "FIRST_PORT", first_port)
    first = ports.free_port_run(2)
    assert first >= real_low and all(_bindable(port) for port in (first, first + 1))
