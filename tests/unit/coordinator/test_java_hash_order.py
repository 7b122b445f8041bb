"""``java_hash_order`` against a real ``java.util.HashMap`` (Java is on every machine that runs Spark;
the test skips with the reason when it is not)."""

from __future__ import annotations

import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from rebalance_replay.transforms.coordinator.state import (
    JAVA_HASHMAP_CAPACITY,
    java_hash_order,
    java_hashmap_capacity,
    java_string_hash,
)

JAVA_PROGRAM = """
import java.io.*;
import java.util.*;

public class HashOrder {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        Map<String, Integer> map = new HashMap<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("=")) {
                System.out.println(String.join(" ", map.keySet()));
                map.clear();
                map = new HashMap<>();
            } else if (line.startsWith("-")) {
                map.remove(line.substring(1));
            } else {
                map.put(line.substring(1), 0);
            }
        }
    }
}
"""


def test_string_hash_matches_java_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == (-(2**31)) & 0xFFFFFFFF  # Java's famous MIN_VALUE hash


def test_capacity_doubles_past_three_quarters() -> None:
    assert java_hashmap_capacity(16, 12) == 16
    assert java_hashmap_capacity(16, 13) == 32
    assert java_hashmap_capacity(32, 25) == 64


def _scripts(rng: random.Random) -> list[list[str]]:
    scripts = []
    for _ in range(60):
        live: list[str] = []
        script: list[str] = []
        for _ in range(rng.randrange(1, 60)):
            if live and rng.random() < 0.3:
                key = live.pop(rng.randrange(len(live)))
                script.append("-" + key)
            else:
                prefix = rng.choice(["consumer-1", "c2", "static-0", "app-instance-7"])
                key = f"{prefix}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
                live.append(key)
                script.append("+" + key)
        scripts.append(script)
    return scripts


def _python_order(script: list[str]) -> list[str]:
    keys: dict[str, None] = {}
    capacity = JAVA_HASHMAP_CAPACITY
    for op in script:
        if op[0] == "+":
            keys[op[1:]] = None
            capacity = java_hashmap_capacity(capacity, len(keys))
        else:
            keys.pop(op[1:], None)
    return java_hash_order(keys, capacity)


def test_iteration_order_is_java_hashmaps(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.skip("java is not on PATH")
    source = tmp_path / "HashOrder.java"
    source.write_text(JAVA_PROGRAM)
    scripts = _scripts(random.Random(7))
    stdin = "".join("\n".join(s) + "\n=\n" for s in scripts)
    out = subprocess.run(
        [java, str(source)], input=stdin, capture_output=True, text=True, check=True, timeout=120
    ).stdout.splitlines()
    assert len(out) == len(scripts)
    for script, line in zip(scripts, out, strict=True):
        assert _python_order(script) == (line.split(" ") if line else [])
