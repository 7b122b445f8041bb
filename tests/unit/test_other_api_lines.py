"""Other APIs' lines told by their head alone (issue 30): ``request_log.other_api_line`` decides a line only
when it says exactly what ``parse_line`` says, and ingest's read-and-parse step (``parse_slices``) gives
the same rows and the same counts with the head test as without it (every line through the parser, the
old path) — on real broker logs of both eras mixed with malformed lines, odd spacing, text-era lines and
other-API lines whose JSON is broken. No Spark needed."""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rebalance_replay.jobs.ingest as ingest
from rebalance_replay.jobs.ingest import merge_slice_stats, parse_slices
from rebalance_replay.jobs.log_files import decode_line, describe_file, plan_slices
from rebalance_replay.schemas import REQUESTS
from rebalance_replay.transforms.broker_facts import api_versions_answer, api_versions_evidence
from rebalance_replay.transforms.request_log import LineKind, other_api_line, parse_line
from simulator.log_render import render_other_api_line
from tests.log_corpus import suite_lines

UTC_ZONE = ZoneInfo("UTC")
AT = datetime(2026, 11, 28, tzinfo=UTC)
REAL = Path(__file__).parents[1] / "data" / "real-kafka"
SUFFIX = " (kafka.request.logger)"

# Kafka 3.7.2's own lines (tests/data/real-kafka/3.7): a consumer's Fetch, a follower broker's Fetch
# (replicaState.replicaId >= 0), a producer's Produce, an ApiVersions answer, a Heartbeat
FETCH = (
    '[2026-11-28 01:22:29,280] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"request'
    'ApiKey":1,"requestApiVersion":16,"correlationId":13,"clientId":"consumer-crash-loop-1","requestA'
    'piKeyName":"FETCH"},"request":{"maxWaitMs":500,"minBytes":1,"maxBytes":52428800,"isolationLevel"'
    ':0,"sessionId":1626802483,"sessionEpoch":2,"topics":[],"forgottenTopicsData":[],"rackId":""},"re'
    'sponse":{"throttleTimeMs":0,"errorCode":0,"sessionId":1626802483,"responses":[]},"connection":"1'
    '27.0.0.1:21947-127.0.0.1:52622-4","totalTimeMs":503.259,"requestQueueTimeMs":0.105,"localTimeMs"'
    ':0.699,"remoteTimeMs":502.137,"throttleTimeMs":0,"responseQueueTimeMs":0.094,"sendTimeMs":0.221,'
    '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInform'
    'ation":{"softwareName":"apache-kafka-java","softwareVersion":"3.7.2"}} (kafka.request.logger)'
)
FOLLOWER_FETCH = (
    '[2026-11-27 07:24:17,821] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"request'
    'ApiKey":1,"requestApiVersion":16,"correlationId":1,"clientId":"broker-3-fetcher-0","requestApiKe'
    'yName":"FETCH"},"request":{"replicaState":{"replicaId":3,"replicaEpoch":5},"maxWaitMs":500,"minB'
    'ytes":1,"maxBytes":10485760,"isolationLevel":0,"sessionId":1251293990,"sessionEpoch":1,"topics":'
    '[],"forgottenTopicsData":[{"topicId":"8A9BD0h_SKGLpL5-FJM0yA","partitions":[2]}],"rackId":""},"r'
    'esponse":{"throttleTimeMs":0,"errorCode":0,"sessionId":0,"responses":[]},"connection":"127.0.0.1'
    ':58175-127.0.0.1:43564-0","totalTimeMs":8.091,"requestQueueTimeMs":1.224,"localTimeMs":6.469,"re'
    'moteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.1,"sendTimeMs":0.296,"securityProtoco'
    'l":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInformation":{"softwar'
    'eName":"unknown","softwareVersion":"unknown"}} (kafka.request.logger)'
)
PRODUCE = (
    '[2026-11-28 01:22:26,139] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"request'
    'ApiKey":0,"requestApiVersion":10,"correlationId":2,"clientId":"rdkafka","requestApiKeyName":"PRO'
    'DUCE"},"request":{"transactionalId":null,"acks":-1,"timeoutMs":30000,"topicData":[{"name":"crash'
    '-loop-topic","partitionData":[{"index":1,"recordsSizeInBytes":782}]}]},"response":{"responses":['
    '{"name":"crash-loop-topic","partitionResponses":[{"index":1,"errorCode":0,"baseOffset":0,"logApp'
    'endTimeMs":-1,"logStartOffset":0,"recordErrors":[],"errorMessage":null}]}],"throttleTimeMs":0},"'
    'connection":"127.0.0.1:21947-127.0.0.1:52552-2","totalTimeMs":10.825,"requestQueueTimeMs":1.692,'
    '"localTimeMs":8.867,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.094,"sendTimeM'
    's":0.17,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clie'
    'ntInformation":{"softwareName":"confluent-kafka-python","softwareVersion":"2.16.1-rdkafka-2.16.0'
    '"}} (kafka.request.logger)'
)
API_VERSIONS = (
    '[2026-11-28 01:22:23,992] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"request'
    'ApiKey":18,"requestApiVersion":3,"correlationId":1,"clientId":"rdkafka","requestApiKeyName":"API'
    '_VERSIONS"},"request":{"clientSoftwareName":"confluent-kafka-python","clientSoftwareVersion":"2.'
    '16.1-rdkafka-2.16.0"},"response":{"errorCode":0,"apiKeys":[{"apiKey":11,"minVersion":0,"maxVersi'
    'on":9},{"apiKey":12,"minVersion":0,"maxVersion":4},{"apiKey":14,"minVersion":0,"maxVersion":5}],'
    '"throttleTimeMs":0},"connection":"127.0.0.1:21947-127.0.0.1:52504-0","totalTimeMs":3.696,"reques'
    'tQueueTimeMs":0.274,"localTimeMs":2.037,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTime'
    'Ms":1.168,"sendTimeMs":0.215,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listen'
    'er":"PLAINTEXT","clientInformation":{"softwareName":"unknown","softwareVersion":"unknown"}} (kaf'
    "ka.request.logger)"
)
HEARTBEAT = (
    '[2026-11-28 01:22:29,345] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"request'
    'ApiKey":12,"requestApiVersion":4,"correlationId":15,"clientId":"consumer-crash-loop-1","requestA'
    'piKeyName":"HEARTBEAT"},"request":{"groupId":"crash-loop","generationId":1,"memberId":"consumer-'
    'crash-loop-1-46311f06-7b34-42dd-860b-194b4d68c7d8","groupInstanceId":null},"response":{"throttle'
    'TimeMs":0,"errorCode":0},"connection":"127.0.0.1:21947-127.0.0.1:52568-2","totalTimeMs":3.416,"r'
    'equestQueueTimeMs":0.72,"localTimeMs":2.001,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueue'
    'TimeMs":0.49,"sendTimeMs":0.203,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","lis'
    'tener":"PLAINTEXT","clientInformation":{"softwareName":"apache-kafka-java","softwareVersion":"3.'
    '7.2"}} (kafka.request.logger)'
)
#: a text-era (Kafka 2.7) Fetch line
TEXT_FETCH = render_other_api_line("FETCH", completion_time=AT, tz=UTC, kafka_version="2.7", api_version=11)
_AT = FETCH.index("Completed request:")


def _spaced(line: str) -> str:
    """The line's JSON body re-serialised with spaces (``json.dumps`` defaults: what a log shipper writes)."""
    at = line.index("Completed request:") + len("Completed request:")
    return line[:at] + json.dumps(json.loads(line[at : -len(SUFFIX)])) + SUFFIX


#: lines the head test decides: other APIs' JSON-era lines however the rest of the line looks
DECIDED = [
    FETCH,
    FOLLOWER_FETCH,
    PRODUCE,
    API_VERSIONS,
    FETCH[:300],  # cut mid-body: no suffix, broken JSON
    FETCH.replace('"topics":[]', '"topics":[}'),  # broken JSON
    FETCH.replace('"totalTimeMs":503.259', '"totalTimeMs":"soon"'),  # a wrong type
    FETCH.replace('"isForwarded":false', '"isForwarded":true'),
    FETCH.replace("] DEBUG ", "] INFO "),  # a deprecated version's line
    FETCH.replace("] DEBUG ", "] WARN "),  # any level: parse_line counts other APIs' lines whatever it is
    FETCH[_AT:],  # no prefix at all
    "junk before " + FETCH[_AT:],
    "2026-11-28 01:22:29,280 DEBUG " + FETCH[_AT:] + " [data-plane-kafka-network-thread-1-PLAINTEXT-0]",
    FETCH + "\r",
    FETCH.replace('"requestApiKeyName":"FETCH"', '"requestApiKeyName":"HEARTBEAT"'),  # the key decides
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":59,'),  # FETCH_SNAPSHOT
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":9,'),  # OFFSET_FETCH: a group-ish API not kept
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":16,'),  # LIST_GROUPS
    FETCH[: _AT + len("Completed request:")] + '{"isForwarded":false,"requestHeader":{"requestApiKey":3,',
]
#: lines it leaves to parse_line (kept APIs, the text era, other shapes, anything odd)
UNDECIDED = [
    HEARTBEAT,
    HEARTBEAT[:250],  # a kept API's broken line: quarantined, with the parser's reason
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":12,'),  # a kept API's key
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":68,'),  # CONSUMER_GROUP_HEARTBEAT
    _spaced(FETCH),  # odd spacing: counted by name after a full parse
    _spaced(FETCH)[:200],  # odd spacing and broken: counted by its loose key
    _spaced(HEARTBEAT),
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":01,'),  # a leading zero
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":-1,'),  # a sign: named by requestApiKeyName
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":\u0661,'),  # a non-ASCII digit
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":' + "9" * 5000 + ","),  # too long for int()
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":1000,'),  # a key Kafka does not name
    FETCH.replace('"requestApiKey":1,', '"requestApiKey":1.0,'),
    FETCH.replace('{"isForwarded":false,', '{"isForwarded":null,'),
    FETCH.replace('{"isForwarded":false,"requestHeader":', '{"requestHeader":'),
    FETCH.replace("Completed request:{", "Completed request: {"),
    FETCH.replace("] DEBUG ", "] DEBUG Completed request:oops "),  # the first marker is not followed by JSON
    FETCH[: _AT + len("Completed request:")],
    TEXT_FETCH,
    render_other_api_line("PRODUCE", completion_time=AT, tz=UTC, kafka_version="2.4", api_version=8),
    "[2026-11-28 01:22:29,281] INFO [GroupCoordinator 1]: Preparing to rebalance group g (kafka.coordinator)",
    "",
    "   ",
]


def _real_lines() -> list[str]:
    """Real brokers' request logs: three Kafka releases (2.7: the text era), both group traffic and the
    rest (fetches from consumers and followers, produce, metadata, API versions, controller traffic)."""
    out: list[str] = []
    for release, recording, broker in (
        ("2.7", "three", "broker-1"),
        ("3.7", "three", "broker-1"),
        ("4.4", "three", "broker-1"),
    ):
        with gzip.open(
            REAL / release / recording / broker / "kafka-request.log.gz", "rt", encoding="utf-8"
        ) as f:
            out.extend(f.read().splitlines())
    return out


def _mixed_sample() -> list[str]:
    """The real logs with every crafted line and every ``Completed request`` line the suite spells out
    (malformed, odd spacing, both eras) dealt in at seeded places."""
    lines = _real_lines()
    rng = random.Random(30)
    for extra in DECIDED + UNDECIDED + suite_lines():
        lines.insert(rng.randrange(len(lines) + 1), extra)
    return lines


def test_the_head_test_says_what_parse_line_says() -> None:
    lines = _mixed_sample()
    decided = 0
    for line in lines:
        fast = other_api_line(line.encode())
        if fast is not None:
            decided += 1
            assert fast == parse_line(line, UTC_ZONE), line[:200]
            assert fast.kind is LineKind.OTHER_API
    # the head test takes every JSON-era line of the brokers' other APIs (there, Fetch is most of them)
    fetches = [line for line in _real_lines() if '"requestHeader":{"requestApiKey":1,' in line]
    assert len(fetches) > 900 and all(other_api_line(line.encode()) is not None for line in fetches)
    assert decided > 1200


@pytest.mark.parametrize("line", DECIDED, ids=range(len(DECIDED)))
def test_other_apis_lines_are_decided_by_their_head(line: str) -> None:
    fast = other_api_line(line.encode())
    assert fast is not None
    assert fast == parse_line(line, UTC_ZONE)
    assert fast.kind is LineKind.OTHER_API and fast.api_name


@pytest.mark.parametrize("line", UNDECIDED, ids=range(len(UNDECIDED)))
def test_other_lines_are_left_to_the_parser(line: str) -> None:
    assert other_api_line(line.encode()) is None
    parse_line(line, UTC_ZONE)  # never raises


def test_the_undecided_lines_cover_what_the_parser_counts_otherwise() -> None:
    """The lines left to the parser are all of its outcomes: requests, quarantined lines (a kept API's
    broken line, an unreadable key), other APIs' lines the head does not tell (odd spacing, a sign, the
    text era) and other lines."""
    outcomes = [parse_line(line, UTC_ZONE) for line in UNDECIDED]
    assert {o.kind for o in outcomes} == {
        LineKind.REQUEST,
        LineKind.QUARANTINE,
        LineKind.OTHER_API,
        LineKind.OTHER,
    }
    assert {o.api_name for o in outcomes if o.kind is LineKind.OTHER_API} == {"FETCH", "PRODUCE"}


# --- parse_slices: the head test against the old path (every line through the parser) -----------------------


def _slices(path: Path) -> list[Any]:
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    slices, _ = plan_slices([described], {})
    return slices


def _outcome(
    slices: list[Any], columnar: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(request rows, quarantine rows, the slice's statistics) of parse_slices, rows by line number; the
    request rows in one shape (typed in blocks or one by one, they are the same rows)."""
    requests: list[dict[str, Any]] = []
    quarantined: list[dict[str, Any]] = []
    stats: list[dict[str, Any]] = []
    schema = REQUESTS.arrow_schema()
    for row in parse_slices(slices, "UTC", AT, columnar=columnar):
        if isinstance(row, pa.RecordBatch):
            requests.extend(row.to_pylist())
        elif row["row_kind"] == "request":
            requests.extend(pa.RecordBatch.from_pylist([row], schema=schema).to_pylist())
        elif row["row_kind"] == "quarantine":
            quarantined.append(row)
        else:
            stats.append(row)
    (one,) = stats
    return sorted(requests, key=lambda r: r["line_no"]), sorted(quarantined, key=lambda r: r["line_no"]), one


def _old_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """parse_slices as before the head test: every line through the parsers."""
    monkeypatch.setattr(ingest, "other_api_line", lambda line: None)


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "parse_line"])
@pytest.mark.parametrize("block", [ingest.BLOCK_LINES, 50], ids=["blocks", "small-blocks"])
def test_parse_slices_gives_the_old_rows_and_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columnar: bool, block: int
) -> None:
    lines = _mixed_sample()
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    monkeypatch.setattr(ingest, "BLOCK_LINES", block)
    new_requests, new_quarantined, new_stats = _outcome(_slices(path), columnar)
    with monkeypatch.context() as m:
        _old_path(m)
        old_requests, old_quarantined, old_stats = _outcome(_slices(path), columnar)

    assert new_requests == old_requests
    assert new_quarantined == old_quarantined  # the same lines, the same reasons
    counts = ("lines_read", "n_requests", "n_quarantined", "n_other_api", "n_other", "evidence")
    assert {k: new_stats[k] for k in counts} == {k: old_stats[k] for k in counts}
    assert json.loads(new_stats["other_api_counts"]) == json.loads(old_stats["other_api_counts"])
    ((new_read,), (old_read,)) = merge_slice_stats([new_stats]), merge_slice_stats([old_stats])
    assert new_read.counts == old_read.counts and new_read.counts.balanced
    # the sample has every kind of line, and most are other APIs' (some of them told only by a full parse)
    c = new_read.counts
    assert c.lines_read == len(lines)
    assert min(c.requests, c.quarantined, c.other_lines) > 0 and c.other_api_lines > c.lines_read / 2
    assert {"FETCH", "PRODUCE", "METADATA", "API_VERSIONS", "LEADER_AND_ISR"} <= set(c.other_api_by_name)
    assert "api_versions" in json.loads(new_stats["evidence"])
    reasons = {q["quarantine_reason"].split(":")[0] for q in new_quarantined}
    assert {"truncated line", "unexpected parse error"} <= reasons


_VARIANTS = [FETCH, FOLLOWER_FETCH, PRODUCE, API_VERSIONS, HEARTBEAT, _spaced(FETCH), TEXT_FETCH]


@st.composite
def _damaged(draw: st.DrawFn) -> bytes:
    """A sample line cut, with a character changed, inserted or deleted somewhere (the head included), as
    bytes; or with bytes that do not decode (a stray byte, a character cut short) inserted: the head test
    reads the bytes as they come, the parser their decoding."""
    line = draw(st.sampled_from(_VARIANTS))
    i = draw(st.integers(0, len(line) - 1))
    op = draw(st.sampled_from(["keep", "cut", "flip", "insert", "delete", "undecodable"]))
    char = draw(st.sampled_from(list('0123456789{}[]":, -\u0661x')))
    if op == "undecodable":
        raw = line.encode()
        j = draw(st.integers(0, len(raw)))
        return raw[:j] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\x80\x80"])) + raw[j:]
    return {
        "keep": line,
        "cut": line[:i],
        "flip": line[:i] + char + line[i + 1 :],
        "insert": line[:i] + char + line[i:],
        "delete": line[:i] + line[i + 1 :],
    }[op].encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_damaged(), min_size=1, max_size=30))
def test_damaged_lines_count_the_same_with_the_head_test(tmp_path_factory: Any, lines: list[bytes]) -> None:
    for raw in lines:
        fast = other_api_line(raw)
        assert fast is None or fast == parse_line(decode_line(raw), UTC_ZONE)
    path = tmp_path_factory.mktemp("log") / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(raw + b"\n" for raw in lines))
    new = _outcome(_slices(path), True)
    with pytest.MonkeyPatch.context() as m:
        _old_path(m)
        old = _outcome(_slices(path), True)
    assert new[:2] == old[:2]
    assert json.loads(new[2]["other_api_counts"]) == json.loads(old[2]["other_api_counts"])
    assert {k: v for k, v in new[2].items() if k != "other_api_counts"} == {
        k: v for k, v in old[2].items() if k != "other_api_counts"
    }


@settings(max_examples=200, deadline=None)
@given(raw=_damaged())
def test_an_api_versions_answer_carries_its_lines_evidence(raw: bytes) -> None:
    """Ingest reads each distinct ApiVersions answer once (``api_versions_answer``): the part it keys on
    gives the whole line's evidence, whatever the damage."""
    line = decode_line(raw)
    answer = api_versions_answer(line)
    assert answer is None or api_versions_evidence(answer) == api_versions_evidence(line)


def test_api_versions_answers_repeat_across_connections_and_differ_by_listener() -> None:
    again = API_VERSIONS.replace('"totalTimeMs":', '"totalTimeMs":1').replace(":52504-0", ":52777-3")
    assert again != API_VERSIONS and api_versions_answer(again) == api_versions_answer(API_VERSIONS)
    cut = API_VERSIONS.index('"apiKey":')
    fewer = API_VERSIONS[:cut] + API_VERSIONS[API_VERSIONS.index('"apiKey":', cut + 1) :]
    assert api_versions_answer(fewer) != api_versions_answer(API_VERSIONS)
    trailing = API_VERSIONS.replace('"securityProtocol":', '"apiKey":68,"minVersion":0,"maxVersion":1,"x":')
    assert api_versions_answer(trailing) is None  # past the answer, something names an API key: read whole


def test_parse_slices_reads_each_answer_once_and_merges_them_all(tmp_path: Path) -> None:
    """Many connections' ApiVersions answers, two distinct ones: the evidence is every answer's, as the
    old path (each line read) gives it."""
    cut = API_VERSIONS.index('"apiKey":')
    fewer = API_VERSIONS[:cut] + API_VERSIONS[API_VERSIONS.index('"apiKey":', cut + 1) :]
    lines = [API_VERSIONS, fewer, API_VERSIONS, HEARTBEAT, fewer] * 3
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    new = _outcome(_slices(path), True)[2]
    with pytest.MonkeyPatch.context() as m:
        _old_path(m)
        old = _outcome(_slices(path), True)[2]
    assert json.loads(new["evidence"]) == json.loads(old["evidence"])
    assert json.loads(new["other_api_counts"]) == json.loads(old["other_api_counts"]) == {"API_VERSIONS": 12}


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "parse_line"])
def test_other_apis_lines_never_reach_the_parsers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columnar: bool
) -> None:
    """What the head test is for: a line it decides (Kafka 3.7.2's Fetch, Produce and ApiVersions lines) is
    counted as it is read and never decoded into a parser; only the Heartbeat is parsed."""
    lines = [FETCH, FOLLOWER_FETCH, PRODUCE, API_VERSIONS, HEARTBEAT, FETCH]
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    parsed: list[str] = []
    real_parse_line, real_routine = ingest.parse_line, ingest.parse_routine_lines

    def parse_line_seen(line: str, tz: Any) -> Any:
        parsed.append(line)
        return real_parse_line(line, tz)

    def routine_seen(block: list[str], tz: Any) -> Any:
        parsed.extend(block)
        return real_routine(block, tz)

    monkeypatch.setattr(ingest, "parse_line", parse_line_seen)
    monkeypatch.setattr(ingest, "parse_routine_lines", routine_seen)
    requests, quarantined, stats = _outcome(_slices(path), columnar)
    assert parsed == [HEARTBEAT]
    assert [r["api_name"] for r in requests] == ["HEARTBEAT"] and quarantined == []
    assert json.loads(stats["other_api_counts"]) == {"FETCH": 3, "PRODUCE": 1, "API_VERSIONS": 1}
