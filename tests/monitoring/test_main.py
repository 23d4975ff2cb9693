"""`python -m monitoring`'s refusals: a bad notification setting exits 2 with one line, before connecting."""

import pytest

from monitoring.__main__ import main


@pytest.mark.parametrize(("argv", "message"), [
    (["--reminder-interval", "0"], "--reminder-interval must be positive"),
    (["--notify-threshold", "STOP"], "invalid choice: 'STOP'"),
])
def test_bad_notification_settings_exit_2_with_one_line(argv, message, capsys):
    try:
        status = main(["--bootstrap-servers", "127.0.0.1:1", *argv])
    except SystemExit as exc:  # argparse's refusal
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]
