"""The coordinator's member order against the real maps: ``java_hash_order`` against a real
``java.util.HashMap`` (Java is on every machine that runs Spark; the test skips with the reason when it
is not). The Scala 2.13 ``mutable.HashMap`` of the 2.x/3.x coordinator is checked on the scala-library a
real broker runs (``tests/realkafka/test_scala_hash_order.py``, which reuses the scripts here)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from rebalance_replay.transforms.coordinator.state import (
    ClassicGroup,
    ClassicGroupMember,
    MapLayout,
    _scala_improve,
    hash_order,
    java_hashmap_capacity,
    java_string_hash,
    scala_hash_order,
    scala_hashmap_capacity,
    scala_immutable_hash_order,
)

#: Reads scripts of ``+key`` (put), ``-key`` (remove) and ``=`` (print the keys in iteration order, start
#: a new map) from stdin; ``MAP`` is the map's type.
PROGRAM = """
import java.io.*;

public class HashOrder {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        MAP<String, Integer> map = new MAP<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("=")) {
                StringBuilder out = new StringBuilder();
                java.util.Iterator<String> keys = KEYS;
                while (keys.hasNext()) {
                    if (out.length() > 0) out.append(' ');
                    out.append(keys.next());
                }
                System.out.println(out);
                map = new MAP<>();
            } else if (line.startsWith("-")) {
                map.remove(line.substring(1));
            } else {
                map.put(line.substring(1), 0);
            }
        }
    }
}
"""
JAVA_PROGRAM = PROGRAM.replace("MAP", "java.util.HashMap").replace("KEYS", "map.keySet().iterator()")
#: The same scripts through ``immutable.HashMap.updated`` / ``removed`` (what ``groupBy`` builds).
_IMMUTABLE = "scala.collection.immutable.HashMap"
SCALA_IMMUTABLE_PROGRAM = (
    PROGRAM.replace("MAP<String, Integer> map", f"{_IMMUTABLE}<String, Integer> map")
    .replace("new MAP<>()", f"new {_IMMUTABLE}<>()")
    .replace("map.remove(line.substring(1));", "map = map.removed(line.substring(1));")
    .replace("map.put(line.substring(1), 0);", "map = map.updated(line.substring(1), 0);")
    .replace("KEYS", "scala.jdk.javaapi.CollectionConverters.asJava(map.keysIterator())")
)
SCALA_PROGRAM = PROGRAM.replace("MAP", "scala.collection.mutable.HashMap").replace(
    "KEYS", "scala.jdk.javaapi.CollectionConverters.asJava(map.keysIterator())"
)


def test_string_hash_matches_java_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == (-(2**31)) & 0xFFFFFFFF  # Java's famous MIN_VALUE hash
    # over UTF-16 code units: a character outside the BMP is its two surrogates (0xD83D, 0xDE00)
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00
    assert java_string_hash("\u00e9t\u00e9") == (233 * 31 + 116) * 31 + 233


def test_string_hash_of_strings_longer_than_any_before() -> None:
    """Java's loop, ``h = 31·h + c`` wrapping at 32 bits, on ids longer than the powers of 31 kept so far."""
    for n in (1, 2, 63, 64, 65, 700):
        text = "".join(chr(0x21 + (7 * i) % 0x5D) for i in range(n)) + "\u20ac"
        h = 0
        for c in text:
            h = (31 * h + ord(c)) & 0xFFFFFFFF
        assert java_string_hash(text) == h


def test_capacity_doubles_past_three_quarters() -> None:
    assert java_hashmap_capacity(16, 12) == 16
    assert java_hashmap_capacity(16, 13) == 32
    assert java_hashmap_capacity(32, 25) == 64
    # Scala's put0 grows before inserting the entry that reaches the threshold: one entry earlier
    assert scala_hashmap_capacity(16, 11) == 16
    assert scala_hashmap_capacity(16, 12) == 32
    assert scala_hashmap_capacity(32, 24) == 64


def test_scala_orders_a_bucket_by_signed_hash_not_insertion() -> None:
    # "Aa" and "BB" share String.hashCode 2112, so a bucket: both maps keep insertion order for them;
    # "polygenelubricants" (hash MIN_VALUE, spread 0x80008000 → bucket 0) sorts before a key of bucket 0
    # with a positive hash in Scala (signed comparison), after it in Java (inserted later)
    zero = next(
        k
        for k in (f"k{i}" for i in range(10_000))
        if (lambda h: (h ^ (h >> 16)) & 15)(java_string_hash(k)) == 0
    )
    keys = [zero, "polygenelubricants"]
    assert hash_order(keys, "java", 2) == keys
    assert scala_hash_order(keys) == ["polygenelubricants", zero]
    assert scala_hash_order(["BB", "Aa"]) == ["BB", "Aa"]


def scripts(rng: random.Random, count: int = 60) -> list[list[str]]:
    """Put/remove scripts of member-id-like keys (up to ~60 live, so the tables grow to 128), with
    static members re-put (removed and put again, as a replaced static member is)."""
    out = []
    for _ in range(count):
        live: list[str] = []
        script: list[str] = []
        for _ in range(rng.randrange(1, 90)):
            roll = rng.random()
            if live and roll < 0.25:
                key = live.pop(rng.randrange(len(live)))
                script.append("-" + key)
            elif live and roll < 0.3:
                key = live.pop(rng.randrange(len(live)))
                script += ["-" + key, "+" + key]
                live.append(key)
            else:
                prefix = rng.choice(["consumer-1", "c2", "static-0", "app-instance-7", "consumer-g-1"])
                key = f"{prefix}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
                live.append(key)
                script.append("+" + key)
        out.append(script)
    return out


def python_order(script: list[str], layout: MapLayout) -> list[str]:
    """The model's order for ``script``: keys in insertion order plus the peak size, as ``ClassicGroup``
    keeps them."""
    keys: dict[str, None] = {}
    peak = 0
    for op in script:
        if op[0] == "+":
            keys[op[1:]] = None
            peak = max(peak, len(keys))
        else:
            keys.pop(op[1:], None)
    return hash_order(keys, layout, peak)


def python_vote_order(script: list[str]) -> list[str]:
    """The model's order of Scala's vote map (``groupBy``'s immutable ``HashMap``) holding what
    ``script`` leaves."""
    keys: dict[str, None] = {}
    for op in script:
        if op[0] == "+":
            keys[op[1:]] = None
        else:
            keys.pop(op[1:], None)
    return scala_immutable_hash_order(keys)


#: Assignor names as real clients send them, and a few custom ones: the keys of Scala's vote map.
VOTE_PROTOCOLS = [
    "range",
    "roundrobin",
    "sticky",
    "cooperative-sticky",
    "uniform",
    "custom-a",
    "custom-b",
    "rack",
]
#: The iteration orders of ``immutable.HashMap`` that ``vote_scripts`` leave, recorded once from the
#: scala-library of the Kafka 2.7 and 3.7 brokers (2.13.3 and 2.13.12, identical orders) by
#: ``tests/realkafka/test_scala_hash_order.py::test_the_recorded_vote_orders_are_the_scala_librarys``,
#: which checks this file against the real library (``RECORD_VOTE_ORDERS=1`` rewrites it).
VOTE_ORDERS = Path(__file__).parent / "data" / "scala_immutable_hash_order.json"


def vote_scripts() -> list[list[str]]:
    """Scripts for Scala's vote map: sets of protocol names, keys whose ``String.hashCode`` collide
    ("Aa"/"BB": one improved hash, a collision node), and member-id-like keys (up to ~60: sub-tries
    several levels deep, the part of the CHAMP order a few protocol names rarely reach)."""
    rng = random.Random(5)
    out = [
        ["+" + p for p in rng.sample(VOTE_PROTOCOLS, rng.randrange(1, len(VOTE_PROTOCOLS) + 1))]
        for _ in range(30)
    ]
    out += [["+BB", "+Aa"], ["+Aa", "+BB", "+range"], ["+AaAa", "+BBBB", "+AaBB", "+BBAa", "+x"]]
    out += [["+Aa", "+BB", "-Aa", "+Aa"]]
    out += scripts(random.Random(13), count=12)
    return out


def run_program(
    java: str, source_text: str, tmp_path: Path, all_scripts: list[list[str]], classpath: str | None = None
) -> list[str]:
    source = tmp_path / "HashOrder.java"
    source.write_text(source_text)
    stdin = "".join("\n".join(s) + "\n=\n" for s in all_scripts)
    cmd = [java] + (["-cp", classpath] if classpath else []) + [str(source)]
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=True, timeout=120).stdout
    lines = out.splitlines()
    assert len(lines) == len(all_scripts)
    return lines


def test_iteration_order_is_java_hashmaps(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.skip("java is not on PATH")
    all_scripts = scripts(random.Random(7))
    for script, line in zip(all_scripts, run_program(java, JAVA_PROGRAM, tmp_path, all_scripts), strict=True):
        assert python_order(script, "java") == (line.split(" ") if line else [])


def _member(member_id: str) -> ClassicGroupMember:
    return ClassicGroupMember(
        member_id, None, "consumer-rolling-restart-1", "/127.0.0.1", 300_000, 45_000, "consumer", ()
    )


@pytest.mark.parametrize(
    ("layout", "leader"),
    [("scala", "ced1d64e-cb7d-4b8d-ba91-311bb03cdb0f"), ("java", "5dae6c6d-54da-4d0f-b2c9-d459388965e8")],
)
def test_leader_after_the_leader_leaves_follows_the_map_of_the_release(
    layout: MapLayout, leader: str
) -> None:
    """A rolling restart recorded on a real Kafka 3.7.2 broker (CI, stop 31): after the first pod (the
    leader) left, the two remaining members' ids share bucket 6 and Kafka made the one inserted *later*
    leader — the Scala map orders a bucket by hash. Java's insertion order names the other one, which is
    what Kafka 4.0's ``ClassicGroup`` would pick."""
    group = ClassicGroup("rolling-restart")
    group.map_layout = layout
    ids = [
        "consumer-rolling-restart-1-" + u
        for u in (
            "0f7e1b8a-0000-4000-8000-000000000000",
            "5dae6c6d-54da-4d0f-b2c9-d459388965e8",
            "ced1d64e-cb7d-4b8d-ba91-311bb03cdb0f",
        )
    ]
    for member_id in ids:
        group.add(_member(member_id), None)
    assert group.leader_id == ids[0]
    group.remove(ids[0])
    assert group.leader_id == "consumer-rolling-restart-1-" + leader


def test_vote_order_is_scalas_immutable_hashmaps_as_recorded() -> None:
    """``selectProtocol``'s vote map (``groupBy`` builds an immutable ``HashMap``, a CHAMP trie) against the
    orders the real scala-library gave for the same scripts (``VOTE_ORDERS``, checked against the jars by
    the realkafka tier): singles before sub-tries at every level, collisions in insertion order."""
    recorded = json.loads(VOTE_ORDERS.read_text())["orders"]
    all_scripts = vote_scripts()
    assert len(recorded) == len(all_scripts)
    wrong = [
        (i, python_vote_order(s), want)
        for i, (s, want) in enumerate(zip(all_scripts, recorded, strict=True))
        if python_vote_order(s) != want
    ]
    assert wrong == []
    # the scripts reach sub-tries two levels down (two keys sharing their first two 5-bit fragments)
    deep = [o for o in recorded if len({_scala_improve(java_string_hash(k)) & 1023 for k in o}) < len(o)]
    assert deep
