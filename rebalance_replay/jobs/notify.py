"""Send an audit run's new findings (``audit.notify.*``) to an HTTP webhook and/or a command.

Only *new* findings are sent (``status`` new in this run), so a scheduled audit pages once per finding,
not every day; nothing is sent when there are none. Each delivery is tried ``1 + retries`` times
(``backoff_s`` before the first retry, doubling); one that still fails is returned as a one-line error
(the caller has already written the tables and the summary).

* webhook: ``POST url`` with ``Content-Type: application/json`` and the body
  ``{"source": "rebalance-replay", "warehouse": ..., "findings": [row, ...]}``; any 2xx is delivered.
* command: the program and its arguments as configured (a list, run without a shell; nothing from the
  log reaches its argument list), the findings as JSON lines on stdin; exit status 0 is delivered.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalance_replay.transforms.audit.config import NotifySettings
from rebalance_replay.transforms.report.units import plural

Sleep = Callable[[float], None]


@dataclass
class Delivery:
    target: str  # "webhook <url>" or "command <program>"
    attempts: int
    ok: bool
    error: str = ""


@dataclass
class NotifyResult:
    sent: int = 0  # findings sent (per target)
    deliveries: list[Delivery] = field(default_factory=list)

    @property
    def failed(self) -> list[Delivery]:
        return [d for d in self.deliveries if not d.ok]

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent_findings": self.sent,
            "deliveries": [
                {
                    "target": d.target,
                    "attempts": d.attempts,
                    "ok": d.ok,
                    **({"error": d.error} if d.error else {}),
                }
                for d in self.deliveries
            ],
        }


def finding_json(row: Mapping[str, Any]) -> str:
    """One finding as one JSON line (keys sorted; dates as ISO strings)."""
    return json.dumps(dict(row), sort_keys=True, default=str, ensure_ascii=False)


def _post(url: str, body: bytes, timeout_s: float) -> None:
    if not url.startswith(("http://", "https://")):  # never file:// or another urllib scheme
        raise ValueError(f"not an http:// or https:// URL: {url!r}")
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "rebalance-replay"},
    )
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        status = int(resp.status)
    if not 200 <= status < 300:
        raise OSError(f"HTTP {status}")


def _run_command(argv: Sequence[str], stdin: bytes, timeout_s: float) -> None:
    import subprocess  # a fixed argument list from the configuration, no shell

    done = subprocess.run(list(argv), input=stdin, capture_output=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        raise OSError(f"exit status {done.returncode}" + (f": {err[-1][:200]}" if err else ""))


def _describe(e: BaseException) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return f"{e.reason}"
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _attempt(target: str, send: Callable[[], None], settings: NotifySettings, sleep: Sleep) -> Delivery:
    wait = settings.backoff_s
    error = ""
    for attempt in range(1, settings.retries + 2):
        try:
            send()
            return Delivery(target, attempt, True)
        except Exception as e:  # network, HTTP status, timeout, missing program: retried, then one line
            error = _describe(e)
        if attempt <= settings.retries:
            sleep(wait)
            wait *= 2
    return Delivery(target, settings.retries + 1, False, error)


def notify(
    findings: Sequence[Mapping[str, Any]],
    settings: NotifySettings,
    *,
    warehouse: str,
    sleep: Sleep = time.sleep,
) -> NotifyResult:
    """Deliver ``findings`` (the run's new ones) to every configured target."""
    result = NotifyResult()
    if not findings or not (settings.url or settings.command):
        return result
    result.sent = len(findings)
    rows = [json.loads(finding_json(f)) for f in findings]
    if settings.url:
        body = json.dumps(
            {"source": "rebalance-replay", "warehouse": warehouse, "findings": rows}, sort_keys=True
        ).encode()
        result.deliveries.append(
            _attempt(
                f"webhook {settings.url}",
                lambda: _post(settings.url, body, settings.timeout_s),
                settings,
                sleep,
            )
        )
    if settings.command:
        lines = "".join(finding_json(f) + "\n" for f in findings).encode()
        result.deliveries.append(
            _attempt(
                f"command {settings.command[0]}",
                lambda: _run_command(settings.command, lines, settings.timeout_s),
                settings,
                sleep,
            )
        )
    return result


def failure_line(result: NotifyResult) -> str | None:
    """One line for the failed deliveries, or None."""
    failed = result.failed
    if not failed:
        return None
    return (
        "notify: "
        + "; ".join(f"{d.target} failed after {plural(d.attempts, 'attempt')}: {d.error}" for d in failed)
        + " (the findings table and summary.json are written)"
    )
