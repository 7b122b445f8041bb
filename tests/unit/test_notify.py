"""audit.notify.*: new findings to a webhook (a local http.server on a free port) and to a command, with
retries and one line when a delivery fails; the scheduler options' usage errors."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.notify import failure_line, notify
from rebalance_replay.transforms.audit.config import NotifySettings

FINDINGS = [
    {"finding_key": "a" * 16, "rule_id": "R07", "severity": "critical", "group_id": "g", "status": "new"},
    {"finding_key": "b" * 16, "rule_id": "R02", "severity": "info", "group_id": "h", "status": "new"},
]


class Hook:
    """A webhook that answers 500 to the first ``fail`` POSTs, then 204, and keeps what it accepted."""

    def __init__(self, fail: int) -> None:
        self.fail = fail
        self.attempts = 0
        self.received: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.attempts += 1
                if hook.attempts <= hook.fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                assert self.headers["Content-Type"] == "application/json"
                hook.received.append(json.loads(body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)  # port 0: a free port
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook(fail=1)
    yield h
    h.close()


def test_webhook_is_retried_and_receives_each_new_finding_once(hook: Hook) -> None:
    waits: list[float] = []
    result = notify(
        FINDINGS, NotifySettings(url=hook.url, retries=2, backoff_s=0.5), warehouse="/wh", sleep=waits.append
    )
    assert hook.attempts == 2 and waits == [0.5]
    assert hook.received == [{"source": "rebalance-replay", "warehouse": "/wh", "findings": FINDINGS}]
    assert result.as_dict() == {
        "sent_findings": 2,
        "deliveries": [{"target": f"webhook {hook.url}", "attempts": 2, "ok": True}],
    }
    assert failure_line(result) is None
    # nothing new: nothing is sent
    assert notify([], NotifySettings(url=hook.url), warehouse="/wh").deliveries == []
    assert hook.attempts == 2


def test_a_webhook_that_keeps_failing_is_one_line(hook: Hook) -> None:
    hook.fail = 10
    waits: list[float] = []
    result = notify(
        FINDINGS, NotifySettings(url=hook.url, retries=2, backoff_s=1.0), warehouse="/wh", sleep=waits.append
    )
    assert hook.attempts == 3 and waits == [1.0, 2.0] and hook.received == []
    assert failure_line(result) == (
        f"notify: webhook {hook.url} failed after 3 attempts: HTTP 500 Internal Server Error "
        "(the findings table and summary.json are written)"
    )


def test_unreachable_webhook_is_one_line() -> None:
    result = notify(
        FINDINGS[:1], NotifySettings(url="http://127.0.0.1:9/x", retries=0, timeout_s=2), warehouse="/wh"
    )
    line = failure_line(result)
    assert line is not None and "\n" not in line
    assert line.startswith("notify: webhook http://127.0.0.1:9/x failed after 1 attempt: ")


def test_command_gets_the_new_findings_as_json_lines(tmp_path: Path) -> None:
    out = tmp_path / "got.jsonl"
    script = tmp_path / "hook.py"
    script.write_text(f"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())\n")
    result = notify(FINDINGS, NotifySettings(command=(sys.executable, str(script))), warehouse="/wh")
    assert [d.ok for d in result.deliveries] == [True]
    assert [json.loads(line) for line in out.read_text().splitlines()] == FINDINGS
    bad = notify(
        FINDINGS,
        NotifySettings(
            command=(sys.executable, "-c", "import sys; sys.exit('no pager')"), retries=1, backoff_s=0
        ),
        warehouse="/wh",
    )
    assert failure_line(bad) == (
        f"notify: command {sys.executable} failed after 2 attempts: exit status 1: no pager "
        "(the findings table and summary.json are written)"
    )


@pytest.mark.parametrize(
    "argv,message",
    [
        (["audit", "--fail-on", "fatal"], "argument --fail-on: invalid choice: 'fatal'"),
        (["audit", "--include-ongoing"], "--include-ongoing goes with --fail-on warning|critical"),
        (["audit", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["replay", "--final"], "--final closes the horizon of a scheduled run: use it with --incremental"),
    ],
)
def test_scheduler_options_bad_usage_is_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rebalance_replay.jobs.cli import main

    assert main([*argv, "--warehouse", str(tmp_path / "wh")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    from rebalance_replay.jobs.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--fail-on {warning,critical}" in out and "--format {text,json}" in out
    assert "3 --fail-on: a new finding" in out and "4 the run finished but sending its new findings" in out


def _result(up_to_date: bool, *rows: tuple[str, str]) -> Any:
    from rebalance_replay.jobs.audit import AuditResult

    findings = [
        {"finding_key": f"k{i}", "rule_id": f"R0{i}", "severity": sev, "group_id": "g", "status": status}
        | {"window_start_ms": i, "summary": "s", "rule": "r", "occurrences": 1, "metrics": {}}
        for i, (sev, status) in enumerate(rows, 1)
    ]
    return AuditResult(
        groups=1,
        evaluated_groups=0 if up_to_date else 1,
        up_to_date=up_to_date,
        findings=findings,
        unsupported={},
        rules=["R01"],
    )


@pytest.mark.parametrize(
    "fail_on,include,up_to_date,rows,code",
    [
        ("critical", False, False, [("critical", "new")], 3),
        ("critical", False, False, [("critical", "ongoing"), ("warning", "new")], 0),
        ("warning", False, False, [("critical", "ongoing"), ("warning", "new")], 3),
        ("critical", True, False, [("critical", "ongoing")], 3),
        ("critical", True, False, [("critical", "resolved")], 0),
        ("critical", False, True, [("critical", "new")], 0),  # a rerun that changed nothing: nothing new
        ("critical", True, True, [("critical", "new")], 3),
        (None, False, False, [("critical", "new")], 0),
    ],
)
def test_exit_code_contract(
    fail_on: str | None, include: bool, up_to_date: bool, rows: list[tuple[str, str]], code: int
) -> None:
    import argparse

    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.schedule import after_audit

    args = argparse.Namespace(fail_on=fail_on, include_ongoing=include)
    said: list[str] = []
    got, _extra = after_audit(
        args, load_config([], [], "/tmp/wh"), _result(up_to_date, *rows), say=said.append
    )
    assert got == code
    assert bool(said) == (code == 3)


def test_a_failed_notification_is_exit_4_and_fail_on_wins(
    hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.schedule import after_audit

    hook.fail = 10
    config = load_config([], [f"audit.notify.url={hook.url}", "audit.notify.retries=0"], "/tmp/wh")
    said: list[str] = []
    code, extra = after_audit(
        argparse.Namespace(fail_on=None), config, _result(False, ("warning", "new")), say=said.append
    )
    assert code == 4 and extra["notify"]["deliveries"][0]["ok"] is False
    assert said == [
        f"rebalance-replay: error: notify: webhook {hook.url} failed after 1 attempt: HTTP 500 Internal "
        "Server Error (the findings table and summary.json are written)"
    ]
    code, _ = after_audit(
        argparse.Namespace(fail_on="warning"), config, _result(False, ("warning", "new")), say=said.append
    )
    assert code == 3


def test_held_back_is_said_in_utc() -> None:
    r = _result(False, ("warning", "new"))
    assert r.held_back() is None  # a batch replay: everything replayed
    r.horizon_ms = 1_717_401_730_236
    assert r.held_back() is not None and r.held_back().startswith(  # type: ignore[union-attr]
        "requests arriving from 2024-06-03T08:02:10.236Z on are held back by the replay's late-arrival "
    )
    r.horizon_closed = True
    assert r.held_back() == "nothing: the replay closed its horizon (--final) at 2024-06-03T08:02:10.236Z"
    assert r.as_summary()["audit"]["horizon_utc"] == "2024-06-03T08:02:10.236Z"
